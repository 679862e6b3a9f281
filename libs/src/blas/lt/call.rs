//! One run's operands ([`MatmulCall`]) and their checks against the plan.

use std::fmt;

use bytemuck::Pod;

use super::plan::{MatmulElement, MatmulPlan};
use crate::blas::layout::holds;
use crate::blas::operand::{Input, Operand, Output};
use cuda_safe::Stream;
use cuda_safe::{Error, Result};

/// The operands of one [`Matmul::run`](super::Matmul::run): A, B and D (whose old values beta
/// scales; C is D), the host scalars alpha (1 unless set) and beta (0 unless set), and what
/// the plan's epilogue and types take: the bias, the auxiliary output, and for FP8 the scale
/// factors (one f32 each, in device memory: A's and B's dequantise the inputs, D's quantises an
/// FP8 output) and D's absolute maximum.
pub struct MatmulCall<'a> {
    types: [u32; 3],
    matrices: [Operand<'a>; 3],
    alpha: f32,
    beta: f32,
    bias: Option<(Operand<'a>, u32)>,
    aux: Option<(Operand<'a>, usize)>,
    /// A's, B's and D's scales and D's amax.
    scales: [Option<Operand<'a>>; 4],
}

impl<'a> MatmulCall<'a> {
    /// The matrices of a run.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a buffer that does not hold whole, aligned elements or
    /// that the GPU cannot reach.
    pub fn new<A: MatmulElement, B: MatmulElement, D: MatmulElement>(
        a: &'a impl Input<A>,
        b: &'a impl Input<B>,
        d: &'a mut impl Output<D>,
    ) -> Result<Self> {
        Ok(Self {
            types: [A::DATA_TYPE.0, B::DATA_TYPE.0, D::DATA_TYPE.0],
            matrices: [a.operand()?, b.operand()?, d.operand_mut()?],
            alpha: 1.0,
            beta: 0.0,
            bias: None,
            aux: None,
            scales: [None; 4],
        })
    }

    /// alpha, on the host.
    pub fn alpha(mut self, alpha: f32) -> Self {
        self.alpha = alpha;
        self
    }

    /// beta, on the host: D = alpha op(A) op(B) + beta D.
    pub fn beta(mut self, beta: f32) -> Self {
        self.beta = beta;
        self
    }

    /// The bias the epilogue adds (of the plan's bias type).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn bias<T: MatmulElement>(mut self, bias: &'a impl Input<T>) -> Result<Self> {
        self.bias = Some((bias.operand()?, T::DATA_TYPE.0));
        Ok(self)
    }

    /// The epilogue's auxiliary output (ReLU's bit mask, or GELU's input), of any element
    /// type: its memory is checked in bytes.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn aux<T: Pod>(mut self, aux: &'a mut impl Output<T>) -> Result<Self> {
        self.aux = Some((aux.operand_mut()?, size_of::<T>()));
        Ok(self)
    }

    /// A's scale factor (FP8 inputs): D is computed from `scale_a * A`. Every scale and the
    /// amax output must be 16-byte aligned (one `f32` at the start of a buffer, or 4 elements
    /// apart in one): [`Matmul::run`](super::Matmul::run) refuses others.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn scale_a(mut self, scale: &'a impl Input<f32>) -> Result<Self> {
        self.scales[0] = Some(scale.operand()?);
        Ok(self)
    }

    /// B's scale factor (FP8 inputs).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn scale_b(mut self, scale: &'a impl Input<f32>) -> Result<Self> {
        self.scales[1] = Some(scale.operand()?);
        Ok(self)
    }

    /// D's scale factor (an FP8 output is `scale_d * D`).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn scale_d(mut self, scale: &'a impl Input<f32>) -> Result<Self> {
        self.scales[2] = Some(scale.operand()?);
        Ok(self)
    }

    /// Where D's absolute maximum (before scaling) is written (FP8 plans).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn amax_d(mut self, amax: &'a mut impl Output<f32>) -> Result<Self> {
        self.scales[3] = Some(amax.operand_mut()?);
        Ok(self)
    }

    /// A, B and D.
    pub(crate) fn matrices(&self) -> [Operand<'a>; 3] {
        self.matrices
    }

    /// alpha and beta.
    pub(crate) fn scalars(&self) -> (f32, f32) {
        (self.alpha, self.beta)
    }

    /// The streams of every operand, for a call on `stream` (whose device must reach each:
    /// [`Operand::on`]).
    pub(crate) fn streams(&self, stream: &Stream) -> Result<[Option<&'a Stream>; 9]> {
        let [a, b, d] = self.matrices;
        let [scale_a, scale_b, scale_d, amax] = self.scales;
        let on = |operand: Option<Operand<'a>>| operand.map(|o| o.on(stream)).transpose();
        Ok([
            on(Some(a))?,
            on(Some(b))?,
            on(Some(d))?,
            on(self.bias.map(|(bias, _)| bias))?,
            on(self.aux.map(|(aux, _)| aux))?,
            on(scale_a)?,
            on(scale_b)?,
            on(scale_d)?,
            on(amax)?,
        ])
    }

    /// Checks the operands against `plan` (types, lengths, alignment, the epilogue's and FP8's
    /// extras); the pointer attributes to bind: bias, aux, A, B and D scales, D amax (0 where
    /// none).
    pub(crate) fn check(&self, plan: &MatmulPlan) -> Result<[u64; 6]> {
        let desc = &plan.desc;
        if self.types != desc.types() {
            return Err(Error::invalid_argument(format!(
                "the operands' element types are not those of the plan for {desc}"
            )));
        }
        let alignment = u64::from(desc.alignment_bytes().max(1));
        let aligned = |name: &str, operand: &Operand<'_>| {
            if operand.as_raw().is_multiple_of(alignment) {
                Ok(())
            } else {
                Err(Error::invalid_argument(format!(
                    "{name} is at {:#x}, but the plan assumes {alignment}-byte aligned operands \
                     (make it with MatmulDesc::alignment for less)",
                    operand.as_raw()
                )))
            }
        };
        for (index, name) in ["A", "B", "D"].into_iter().enumerate() {
            let operand = &self.matrices[index];
            holds(
                &format_args!("{name} of {desc}"),
                plan.spans[index],
                operand.len(),
            )?;
            aligned(name, operand)?;
        }
        let mut pointers = [0u64; 6];
        match (plan.bias, self.bias) {
            (None, None) => {}
            (Some((len, data_type)), Some((bias, given))) => {
                if given != data_type {
                    return Err(Error::invalid_argument(
                        "the bias is not of the plan's bias type",
                    ));
                }
                holds(&"the bias", len, bias.len())?;
                aligned("the bias", &bias)?;
                pointers[0] = bias.as_raw();
            }
            (Some(_), None) => return Err(missing("a bias", desc)),
            (None, Some(_)) => return Err(unused("a bias", desc)),
        }
        match (plan.aux_bytes, self.aux) {
            (None, None) => {}
            (Some(bytes), Some((aux, element))) => {
                let held = aux.len().saturating_mul(element);
                holds(&"the auxiliary output (in bytes)", bytes, held)?;
                aligned("the auxiliary output", &aux)?;
                pointers[1] = aux.as_raw();
            }
            (Some(_), None) => return Err(missing("an auxiliary output", desc)),
            (None, Some(_)) => return Err(unused("an auxiliary output", desc)),
        }
        for (index, scale) in self.scales.iter().enumerate() {
            let Some(scale) = scale else { continue };
            if !desc.is_fp8() {
                return Err(unused("FP8 scale factors", desc));
            }
            holds(&"a scale factor", 1, scale.len())?;
            if !scale.as_raw().is_multiple_of(SCALE_ALIGNMENT) {
                return Err(Error::invalid_argument(format!(
                    "a scale factor is at {:#x}, but cuBLASLt takes only {SCALE_ALIGNMENT}-byte \
                     aligned scale pointers (it answers NOT_SUPPORTED for one 4 or 8 bytes \
                     into a buffer)",
                    scale.as_raw()
                )));
            }
            pointers[2 + index] = scale.as_raw();
        }
        Ok(pointers)
    }
}

/// The alignment of the scale and amax pointers cuBLASLt runs with: on the H200 (cuBLASLt
/// 13.1) a scale 4 or 8 bytes into an allocation is NOT_SUPPORTED at `cublasLtMatmul`, one 16,
/// 32, ... 256 bytes in is accepted.
const SCALE_ALIGNMENT: u64 = 16;

/// The error for a plan's need the call did not meet.
fn missing(what: &str, desc: &dyn fmt::Display) -> Error {
    Error::invalid_argument(format!("the plan for {desc} needs {what}"))
}

/// The error for an operand the plan has no use for.
fn unused(what: &str, desc: &dyn fmt::Display) -> Error {
    Error::invalid_argument(format!("the plan for {desc} takes no {what}"))
}

impl fmt::Debug for MatmulCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatmulCall")
            .field("matrices", &self.matrices)
            .field("alpha", &self.alpha)
            .field("beta", &self.beta)
            .field("bias", &self.bias.is_some())
            .field("aux", &self.aux.is_some())
            .finish()
    }
}
