//! The executions of an [`FftPlan`]: complex to complex in either direction, real to complex
//! and complex to real, out of place and in place, each checked against the plan's
//! description (kind, precision, placement, lengths, alignment) before the one cuFFT call.

use super::desc::{FftDesc, FftDirection, FftKind, Geometry};
use super::elements::{FftComplex, FftPrecision, FftReal};
use super::plan::FftPlan;
use crate::fft::error::cufft;
use crate::operand::{Input, Operand, Output};
use cuda_safe::ordering::ordered;
use cuda_safe::{Error, Result};
use cufft_sys::{Cufft, cufftHandle};

/// What an execution is: the kind, the precision of its element types, and whether it is in
/// place, for the checks against the plan.
#[derive(Clone, Copy)]
struct Call {
    kind: FftKind,
    precision: FftPrecision,
    in_place: bool,
}

impl FftPlan {
    /// The complex-to-complex transform of `input` into `output`, in `direction`.
    ///
    /// ```no_run
    /// use cuda_safe::Device;
    /// use cuda_safe_libs::fft::{Complex32, FftDesc, FftDirection, FftPlan};
    ///
    /// let device = Device::new(0)?;
    /// device.set_current()?;
    /// let stream = device.create_stream(Default::default())?;
    /// let pool = device.default_memory_resource()?;
    /// let plan = FftPlan::new(&stream, &FftDesc::c2c::<Complex32>(8))?;
    /// let x = pool.allocate_from_host(&[Complex32::new(1.0, 0.0); 8], &stream)?;
    /// let mut y = pool.allocate_zeroed::<Complex32>(8, &stream)?;
    /// plan.c2c::<Complex32>(&x, &mut y, FftDirection::Forward)?;
    /// assert_eq!(y.to_vec::<Complex32>()?[0], Complex32::new(8.0, 0.0));
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    ///
    #[doc = cufft_sys::api_doc!(cufftExecC2C)]
    #[doc = cufft_sys::api_doc!(cufftExecZ2Z)]
    #[doc = cufft_sys::api_doc!(cufftXtExec)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a plan of another kind, precision or placement, an
    /// operand holding fewer elements than the description spans, or an address not aligned
    /// to `C` (checked before the call); cuFFT's error.
    #[doc(alias = "cufftExecC2C", alias = "cufftExecZ2Z", alias = "cufftXtExec")]
    #[inline]
    pub fn c2c<C: FftComplex>(
        &self,
        input: &impl Input<C>,
        output: &mut impl Output<C>,
        direction: FftDirection,
    ) -> Result<()> {
        let call = Call::out_of_place(FftKind::C2C, C::PRECISION);
        self.execute(call, input.operand()?, output.operand_mut()?, direction)
    }

    /// The complex-to-complex transform of `data` in place, in `direction` (the plan's
    /// description is [`in_place`](FftDesc::in_place)).
    ///
    #[doc = cufft_sys::api_doc!(cufftExecC2C)]
    #[doc = cufft_sys::api_doc!(cufftExecZ2Z)]
    #[doc = cufft_sys::api_doc!(cufftXtExec)]
    /// # Errors
    ///
    /// As [`c2c`](Self::c2c).
    #[doc(alias = "cufftExecC2C", alias = "cufftExecZ2Z", alias = "cufftXtExec")]
    pub fn c2c_in_place<C: FftComplex>(
        &self,
        data: &mut impl Output<C>,
        direction: FftDirection,
    ) -> Result<()> {
        let call = Call::in_place(FftKind::C2C, C::PRECISION);
        let data = data.operand_mut()?;
        self.execute(call, data, data, direction)
    }

    /// The real-to-complex (forward) transform of `input` into `output`: the `n / 2 + 1`
    /// non-redundant outputs of the innermost dimension.
    ///
    #[doc = cufft_sys::api_doc!(cufftExecR2C)]
    #[doc = cufft_sys::api_doc!(cufftExecD2Z)]
    #[doc = cufft_sys::api_doc!(cufftXtExec)]
    /// # Errors
    ///
    /// As [`c2c`](Self::c2c).
    #[doc(alias = "cufftExecR2C", alias = "cufftExecD2Z", alias = "cufftXtExec")]
    #[inline]
    pub fn r2c<R: FftReal>(
        &self,
        input: &impl Input<R>,
        output: &mut impl Output<R::Complex>,
    ) -> Result<()> {
        let call = Call::out_of_place(FftKind::R2C, R::PRECISION);
        let direction = FftDirection::Forward;
        self.execute(call, input.operand()?, output.operand_mut()?, direction)
    }

    /// The real-to-complex transform in place: `data`, seen as complex numbers, holds the
    /// padded reals (`2 * (n / 2 + 1)` of them in each innermost row by default) and receives
    /// the complex outputs.
    ///
    #[doc = cufft_sys::api_doc!(cufftExecR2C)]
    #[doc = cufft_sys::api_doc!(cufftExecD2Z)]
    #[doc = cufft_sys::api_doc!(cufftXtExec)]
    /// # Errors
    ///
    /// As [`c2c`](Self::c2c).
    #[doc(alias = "cufftExecR2C", alias = "cufftExecD2Z", alias = "cufftXtExec")]
    pub fn r2c_in_place<R: FftReal>(&self, data: &mut impl Output<R::Complex>) -> Result<()> {
        let call = Call::in_place(FftKind::R2C, R::PRECISION);
        let data = data.operand_mut()?;
        self.execute(call, data, data, FftDirection::Forward)
    }

    /// The complex-to-real (inverse) transform of `input` into `output`. cuFFT may overwrite
    /// its input (its documentation says so of out-of-place multi-dimensional C2R), so the
    /// input is borrowed mutably.
    ///
    #[doc = cufft_sys::api_doc!(cufftExecC2R)]
    #[doc = cufft_sys::api_doc!(cufftExecZ2D)]
    #[doc = cufft_sys::api_doc!(cufftXtExec)]
    /// # Errors
    ///
    /// As [`c2c`](Self::c2c).
    #[doc(alias = "cufftExecC2R", alias = "cufftExecZ2D", alias = "cufftXtExec")]
    #[inline]
    pub fn c2r<R: FftReal>(
        &self,
        input: &mut impl Output<R::Complex>,
        output: &mut impl Output<R>,
    ) -> Result<()> {
        let call = Call::out_of_place(FftKind::C2R, R::PRECISION);
        let direction = FftDirection::Inverse;
        self.execute(call, input.operand_mut()?, output.operand_mut()?, direction)
    }

    /// The complex-to-real transform in place: `data` holds the complex inputs and receives
    /// the padded reals.
    ///
    #[doc = cufft_sys::api_doc!(cufftExecC2R)]
    #[doc = cufft_sys::api_doc!(cufftExecZ2D)]
    #[doc = cufft_sys::api_doc!(cufftXtExec)]
    /// # Errors
    ///
    /// As [`c2c`](Self::c2c).
    #[doc(alias = "cufftExecC2R", alias = "cufftExecZ2D", alias = "cufftXtExec")]
    pub fn c2r_in_place<R: FftReal>(&self, data: &mut impl Output<R::Complex>) -> Result<()> {
        let call = Call::in_place(FftKind::C2R, R::PRECISION);
        let data = data.operand_mut()?;
        self.execute(call, data, data, FftDirection::Inverse)
    }

    /// Checks `call` and its operands against the plan and queues the execution, ordered with
    /// the operands' streams.
    #[inline]
    fn execute(
        &self,
        call: Call,
        input: Operand<'_>,
        output: Operand<'_>,
        direction: FftDirection,
    ) -> Result<()> {
        let (cufft, raw, desc, geometry) = self.parts();
        call.check(desc, geometry, &input, &output)?;
        let on = self.stream();
        let streams = [Some(input.on(on)?), Some(output.on(on)?)];
        ordered(self.stream(), streams, || {
            // SAFETY: a live plan with its work area and stream set; both operands are device
            // memory holding what the description spans, of its element types, aligned to
            // its complex type (checked); the output is borrowed exclusively (in place: the
            // one operand is); the operands' streams are ordered with the plan's.
            unsafe { launch(cufft, raw, call, &input, &output, direction) }
        })
    }
}

impl Call {
    fn out_of_place(kind: FftKind, precision: FftPrecision) -> Self {
        Self {
            kind,
            precision,
            in_place: false,
        }
    }

    fn in_place(kind: FftKind, precision: FftPrecision) -> Self {
        Self {
            kind,
            precision,
            in_place: true,
        }
    }

    /// Refuses an execution the plan was not made for, or operands too short or misaligned.
    #[inline]
    fn check(
        self,
        desc: &FftDesc,
        geometry: &Geometry,
        input: &Operand<'_>,
        output: &Operand<'_>,
    ) -> Result<()> {
        if self.kind != desc.kind()
            || self.precision != desc.precision()
            || self.in_place != desc.is_in_place()
        {
            return Err(self.mismatch(desc));
        }
        let bytes = self.precision.complex_bytes() as u64;
        for (what, operand) in [("input", input), ("output", output)] {
            if !operand.as_raw().is_multiple_of(bytes) {
                return Err(Error::invalid_argument(format!(
                    "the FFT {desc}: the {what} at {:#x} is not aligned to its complex type \
                     ({bytes} bytes)",
                    operand.as_raw()
                )));
            }
        }
        let [input_span, output_span] = geometry.spans;
        if !self.in_place {
            holds(desc, "input", input_span, input.len())?;
            return holds(desc, "output", output_span, output.len());
        }
        // In place, the one operand is counted in complex numbers; a real side spans half as
        // many of them (rounded up).
        let complex = |span: usize, side: usize| match (self.kind, side) {
            (FftKind::R2C, 0) | (FftKind::C2R, 1) => span.div_ceil(2),
            _ => span,
        };
        let needed = complex(input_span, 0).max(complex(output_span, 1));
        holds(desc, "in-place data", needed, input.len())
    }

    #[cold]
    #[inline(never)]
    fn mismatch(self, desc: &FftDesc) -> Error {
        let placement = if self.in_place {
            "in place"
        } else {
            "out of place"
        };
        let method = match self.kind {
            FftKind::C2C => "c2c",
            FftKind::R2C => "r2c",
            FftKind::C2R => "c2r",
        };
        Error::invalid_argument(format!(
            "a plan for the FFT {desc} cannot run {method} {placement} on {} data: run the \
             execution of its kind, element type and placement",
            self.precision
        ))
    }
}

/// Refuses an operand holding fewer elements than the description spans.
#[inline]
fn holds(desc: &FftDesc, what: &str, needed: usize, len: usize) -> Result<()> {
    if len >= needed {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "the FFT {desc}: the {what} spans {needed} elements; the memory holds {len}"
    )))
}

/// The one cuFFT call of an execution: the typed call of f32 and f64, `cufftXtExec` of f16.
///
/// # Safety
///
/// A live plan made for `call`, with its work area and stream set; operands as the plan's
/// description needs them, ordered with its stream.
#[inline(always)]
unsafe fn launch(
    cufft: &Cufft,
    raw: cufftHandle,
    call: Call,
    input: &Operand<'_>,
    output: &Operand<'_>,
    direction: FftDirection,
) -> Result<()> {
    let (i, o, sign) = (input.ptr_mut(), output.ptr_mut(), direction.as_raw());
    // SAFETY: the caller's: each pointer is device memory of the type the plan's transform
    // reads or writes, spanning what it does.
    unsafe {
        match (call.kind, call.precision) {
            (_, FftPrecision::Half) => cufft!(cufft, cufftXtExec(raw, i, o, sign)),
            (FftKind::C2C, FftPrecision::Single) => {
                cufft!(cufft, cufftExecC2C(raw, i.cast(), o.cast(), sign))
            }
            (FftKind::R2C, FftPrecision::Single) => {
                cufft!(cufft, cufftExecR2C(raw, i.cast(), o.cast()))
            }
            (FftKind::C2R, FftPrecision::Single) => {
                cufft!(cufft, cufftExecC2R(raw, i.cast(), o.cast()))
            }
            (FftKind::C2C, FftPrecision::Double) => {
                cufft!(cufft, cufftExecZ2Z(raw, i.cast(), o.cast(), sign))
            }
            (FftKind::R2C, FftPrecision::Double) => {
                cufft!(cufft, cufftExecD2Z(raw, i.cast(), o.cast()))
            }
            (FftKind::C2R, FftPrecision::Double) => {
                cufft!(cufft, cufftExecZ2D(raw, i.cast(), o.cast()))
            }
        }
    }
}
