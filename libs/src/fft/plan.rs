//! [`FftPlan`]: one cuFFT plan made for an [`FftDesc`], bound to a stream, its work area a
//! [`Buffer`] of this crate (cuFFT allocates none: automatic allocation is off).

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use super::desc::{FftDesc, FftKind, Geometry};
use super::elements::FftPrecision;
use crate::fft::error::cufft;
use crate::operand::workspace_buffer;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Buffer, Stream};
use cuda_safe::{Error, Result};
use cufft_sys::{Cufft, cufftHandle, cufftType};

/// A cuFFT plan (`cufftHandle`) for one [`FftDesc`], bound to a [`Stream`]: every execution
/// is queued there, on the plan's work area, a [`Buffer`] allocated when the plan is made
/// (from the device's default memory pool, ordered on the stream, or from the caller's
/// [`with_work_area`](Self::with_work_area)). cuFFT's automatic allocation is off, so an
/// execution allocates nothing, and a graph capture records fixed addresses.
///
/// Executions ([`c2c`](Self::c2c), [`r2c`](Self::r2c), [`c2r`](Self::c2r) and their in-place
/// forms) check the operands' element type, lengths and alignment against the description
/// before cuFFT is called: a too-short buffer is [`Error::InvalidArgument`], never a GPU
/// fault.
///
/// `Send`, not `Sync`: cuFFT lets a plan be used from any thread, one at a time. A captured
/// execution replays on this plan's work area and tables: keep the plan until the graph and
/// its executables are dropped. cuFFT runs its kernels in the CUDA context current on the
/// calling thread: each execution makes the stream's context current for its duration.
/// Dropping the plan destroys it
/// (`cufftDestroy`, which may wait for the device), then frees the work area in order on the
/// stream.
///
#[doc = cufft_sys::api_doc!(cufftCreate)]
#[must_use = "a cuFFT plan is destroyed when dropped"]
pub struct FftPlan {
    inner: Owned<Handle>,
    desc: FftDesc,
    geometry: Geometry,
    /// A plan is not `Sync`: two threads may not execute it at once.
    _one_thread: PhantomData<Cell<()>>,
}

/// What an [`FftPlan`] owns.
struct Handle {
    raw: cufftHandle,
    cufft: &'static Cufft,
    stream: Stream,
    /// The work area, once its size is known (none for a plan that needs none).
    work_area: Option<Buffer>,
}

impl FftPlan {
    /// Makes the plan for `desc` on `stream`, its work area from the device's default memory
    /// pool (allocated on `stream`).
    ///
    /// # Errors
    ///
    /// As [`with_work_area`](Self::with_work_area).
    pub fn new(stream: &Stream, desc: &FftDesc) -> Result<Self> {
        let pool = stream.device().default_memory_resource()?;
        Self::with_work_area(stream, desc, |bytes| pool.allocate(bytes, stream))
    }

    /// Makes the plan for `desc` on `stream`, its work area from `allocate`, called once with
    /// the bytes cuFFT asks for (not at all when it asks for none); the buffer is moved to
    /// `stream`.
    ///
    #[doc = cufft_sys::api_doc!(cufftCreate)]
    #[doc = cufft_sys::api_doc!(cufftSetAutoAllocation)]
    #[doc = cufft_sys::api_doc!(cufftMakePlanMany64)]
    #[doc = cufft_sys::api_doc!(cufftXtMakePlanMany)]
    #[doc = cufft_sys::api_doc!(cufftSetWorkArea)]
    #[doc = cufft_sys::api_doc!(cufftSetStream)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a description cuFFT cannot take (a size or batch of 0, a
    /// layout smaller than the data, an in-place layout whose sides differ, a size past
    /// cuFFT's 64-bit range, a half-precision size that is not a power of 2), or a work area
    /// smaller than asked or that the GPU cannot reach; [`Error::Load`] when cuFFT cannot be
    /// loaded; `allocate`'s error; cuFFT's error.
    #[doc(
        alias = "cufftCreate",
        alias = "cufftSetAutoAllocation",
        alias = "cufftMakePlanMany64",
        alias = "cufftXtMakePlanMany",
        alias = "cufftSetWorkArea",
        alias = "cufftSetStream"
    )]
    pub fn with_work_area(
        stream: &Stream,
        desc: &FftDesc,
        allocate: impl FnOnce(usize) -> Result<Buffer>,
    ) -> Result<Self> {
        let geometry = desc.geometry()?;
        let cufft = cufft_sys::cufft()?;
        let _current = stream.context().scoped()?;
        let mut raw: cufftHandle = 0;
        // SAFETY: a valid out-pointer; the stream's context is current.
        unsafe { cufft!(cufft, cufftCreate(&mut raw)) }?;
        let mut inner = Owned::new(Handle {
            raw,
            cufft,
            stream: stream.clone(),
            work_area: None,
        });
        // SAFETY: a live plan, not made yet.
        unsafe { cufft!(cufft, cufftSetAutoAllocation(raw, 0)) }?;
        let bytes = make(cufft, raw, desc, &geometry)?;
        if bytes > 0 {
            let mut area = allocate(bytes)?;
            check_work_area(&area, bytes, stream)?;
            area.set_stream(stream)?;
            let ptr = area.as_raw() as *mut std::ffi::c_void;
            inner.work_area = Some(area);
            // SAFETY: a live plan; `ptr` is device memory of at least the bytes cuFFT asked
            // for, owned by the plan until it is destroyed, ordered on the plan's stream.
            unsafe { cufft!(cufft, cufftSetWorkArea(raw, ptr)) }?;
        }
        // SAFETY: a live plan and stream.
        unsafe { cufft!(cufft, cufftSetStream(raw, stream.as_raw().cast())) }?;
        Ok(Self {
            inner,
            desc: *desc,
            geometry,
            _one_thread: PhantomData,
        })
    }

    /// The description the plan was made for.
    pub fn desc(&self) -> &FftDesc {
        &self.desc
    }

    /// The stream every execution is queued on.
    #[inline]
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// The work area (none when cuFFT asked for none).
    pub fn work_area(&self) -> Option<&Buffer> {
        self.inner.work_area.as_ref()
    }

    /// Moves the plan to `stream` (of the same context): executions from now on are queued
    /// there, after the work queued on the old stream so far (the work area moves with it).
    ///
    #[doc = cufft_sys::api_doc!(cufftSetStream)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a stream of another context; cuFFT's and the driver's
    /// errors (the plan then stays on its stream).
    #[doc(alias = "cufftSetStream")]
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        if self.inner.stream.same_as(stream) {
            return Ok(());
        }
        if !self.inner.stream.context().same_as(stream.context()) {
            return Err(Error::invalid_argument(
                "a cuFFT plan moves only to a stream of its own context",
            ));
        }
        let inner = &mut *self.inner;
        if let Some(area) = inner.work_area.as_mut() {
            area.set_stream(stream)?;
        }
        // SAFETY: a live plan and stream.
        let set = unsafe {
            cufft!(
                inner.cufft,
                cufftSetStream(inner.raw, stream.as_raw().cast())
            )
        };
        if let Err(error) = set {
            if let Some(area) = inner.work_area.as_mut()
                && let Err(again) = area.set_stream(&inner.stream)
            {
                log::error!(
                    "cuda-safe: a cuFFT plan's work area could not move back to its stream \
                     after a failed move ({again})"
                );
            }
            return Err(error);
        }
        inner.stream = stream.clone();
        Ok(())
    }

    /// The raw plan, valid while this `FftPlan` lives. Calls made on it directly must leave
    /// its stream and work area as they were.
    pub fn as_raw(&self) -> cufftHandle {
        self.inner.raw
    }

    /// Destroys the plan now, returning cuFFT's error, then frees the work area.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    /// The loaded cuFFT, the raw plan and the checked description, for the executions.
    #[inline(always)]
    pub(crate) fn parts(&self) -> (&'static Cufft, cufftHandle, &FftDesc, &Geometry) {
        (self.inner.cufft, self.inner.raw, &self.desc, &self.geometry)
    }
}

/// Makes the plan: `cufftMakePlanMany64` for f32 and f64, `cufftXtMakePlanMany` for f16 (its
/// only way); returns the work area's size cuFFT asks for.
fn make(cufft: &Cufft, raw: cufftHandle, desc: &FftDesc, geometry: &Geometry) -> Result<usize> {
    let mut n = geometry.n;
    let (mut inembed, mut onembed) = match geometry.layouts {
        Some([input, output]) => (input.embed, output.embed),
        None => ([0; 3], [0; 3]),
    };
    let [(istride, idist), (ostride, odist)] = match geometry.layouts {
        Some(layouts) => layouts.map(|side| (side.stride, side.dist)),
        None => [(1, 1); 2],
    };
    // NULL embeddings ask for cuFFT's basic layout (the strides and distances are ignored).
    let embed = |embed: &mut [i64; 3]| {
        if geometry.layouts.is_some() {
            embed.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        }
    };
    let (inembed, onembed) = (embed(&mut inembed), embed(&mut onembed));
    let (rank, batch, mut bytes) = (geometry.rank, geometry.batch, 0usize);
    let precision = desc.precision();
    if precision == FftPrecision::Half {
        let (input, output) = match desc.kind() {
            FftKind::C2C => (precision.complex_type(), precision.complex_type()),
            FftKind::R2C => (precision.real_type(), precision.complex_type()),
            FftKind::C2R => (precision.complex_type(), precision.real_type()),
        };
        // SAFETY: a live plan; `n` and the embeddings hold `rank` sizes (or are NULL); the
        // types are cuFFT's half-precision ones, executed in complex f16.
        unsafe {
            cufft!(
                cufft,
                cufftXtMakePlanMany(
                    raw,
                    rank,
                    n.as_mut_ptr(),
                    inembed,
                    istride,
                    idist,
                    input,
                    onembed,
                    ostride,
                    odist,
                    output,
                    batch,
                    &mut bytes,
                    precision.complex_type()
                )
            )
        }?;
    } else {
        let kind = cufft_type(desc.kind(), precision);
        // SAFETY: as above, with one of cuFFT's six transform types.
        unsafe {
            cufft!(
                cufft,
                cufftMakePlanMany64(
                    raw,
                    rank,
                    n.as_mut_ptr(),
                    inembed,
                    istride,
                    idist,
                    onembed,
                    ostride,
                    odist,
                    kind,
                    batch,
                    &mut bytes
                )
            )
        }?;
    }
    Ok(bytes)
}

/// cuFFT's transform type of a single- or double-precision transform.
fn cufft_type(kind: FftKind, precision: FftPrecision) -> cufftType {
    match (kind, precision == FftPrecision::Double) {
        (FftKind::C2C, false) => cufftType::CUFFT_C2C,
        (FftKind::R2C, false) => cufftType::CUFFT_R2C,
        (FftKind::C2R, false) => cufftType::CUFFT_C2R,
        (FftKind::C2C, true) => cufftType::CUFFT_Z2Z,
        (FftKind::R2C, true) => cufftType::CUFFT_D2Z,
        (FftKind::C2R, true) => cufftType::CUFFT_Z2D,
    }
}

/// Refuses a work area cuFFT cannot use on `stream`.
fn check_work_area(area: &Buffer, bytes: usize, stream: &Stream) -> Result<()> {
    if area.len() < bytes {
        return Err(Error::invalid_argument(format!(
            "cuFFT asked for a {bytes}-byte work area; the one given holds {}",
            area.len()
        )));
    }
    workspace_buffer(area, stream, "a cuFFT work area")
}

impl Release for Handle {
    const WHAT: &'static str = "cuFFT plan";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the plan was made by cufftCreate and is destroyed once (by `Owned`); the
        // work area is freed after, when the fields drop.
        unsafe { cufft!(self.cufft, cufftDestroy(self.raw)) }
    }
}

impl fmt::Debug for FftPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FftPlan")
            .field("plan", &self.inner.raw)
            .field("desc", &self.desc)
            .field("stream", &self.inner.stream)
            .field("work_area", &self.inner.work_area.as_ref().map(Buffer::len))
            .finish()
    }
}

/// Asserts at compile time that a plan moves between threads.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<FftPlan>();
};
