//! The bridge to cudarc 0.19 (feature `cudarc`): what Rust GPU code already holds (candle, burn
//! and mistral.rs are built on cudarc's `CudaStream` and `CudaSlice`) used here without a copy,
//! and this crate's streams and buffers handed to cudarc.
//!
//! ```no_run
//! use cuda_safe::cudarc_bridge::view_mut;
//! use cuda_safe::{CodeKind, LaunchConfig, Program, ProgramOptions, Stream, launch};
//! use cudarc::driver::CudaContext;
//!
//! let context = CudaContext::new(0)?; // cudarc's handle to device 0's primary context
//! let theirs = context.new_stream()?;
//! let mut x = theirs.clone_htod(&[1.5f32; 1024])?; // a cudarc CudaSlice<f32>
//!
//! let stream = Stream::from_cudarc(&theirs)?; // the same CUstream, kept alive by its Arc
//! let source = r#"extern "C" __global__ void twice(float* x, size_t n) {
//!     size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= 2.0f;
//! }"#;
//! let kernel = Program::new(source, ProgramOptions::default())?
//!     .compile(CodeKind::Cubin)?
//!     .load()?
//!     .get_kernel("twice")?;
//! let config = LaunchConfig::for_num_elements(1024, 256)?;
//! {
//!     let mut y = view_mut(&mut x, &stream)?; // after cudarc's queued reads and writes of x
//!     // SAFETY: `twice` updates 1024 floats, which the view holds.
//!     unsafe { launch(&stream, &config, &kernel, (&mut *y, 1024usize))? };
//! } // the view records x's write event on `stream`: cudarc's later uses wait for the kernel
//! assert_eq!(theirs.clone_dtoh(&x)?[0], 3.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rules (`docs/interop.md`, "cudarc", says more):
//!
//! - **Streams.** [`Stream::from_cudarc`] wraps a cudarc stream and keeps its `Arc` alive while
//!   any clone of the wrapper lives; [`Stream::with_cudarc`] gives one of this crate's streams
//!   a cudarc side (a handle cudarc can order on, never handed out);
//!   [`Stream::to_cudarc`] hands cudarc a borrowed handle and is `unsafe`: cudarc's `Arc` cannot
//!   keep this crate's stream alive. Both crates' contexts must be the one primary context of
//!   the device (cudarc's `CudaContext::new(ordinal)` retains the same one).
//! - **cudarc slices here** ([`view`], [`view_mut`]): a view waits for cudarc's write event (a
//!   mutable one for its read event too) before it is made, and records the read (write)
//!   event on its stream when it drops, as cudarc's own `device_ptr` guards do; where cudarc
//!   tracks no events (a context that never made a stream of its own, or tracking disabled),
//!   the view's stream waits for the slice's stream instead, and the slice's stream waits for
//!   the view's when it drops.
//! - **This crate's buffers in cudarc** ([`Buffer::lend_to_cudarc`],
//!   [`Buffer::lend_to_cudarc_mut`]): cudarc gets a `CudaSlice` it never frees (it is never
//!   dropped: handing it back forgets it with cudarc's `leak`), ordered after the buffer's
//!   stream; handing it back makes the buffer's stream wait for every cudarc use of it, so the
//!   buffer's free comes after them.
//!
//! Forgetting a view or a lent slice (`std::mem::forget`) skips its hand-back, as forgetting
//! cudarc's own `SyncOnDrop` does: the memory's owner is then not ordered after the work
//! queued through it. Every call here makes the stream's context current for the cudarc calls
//! it makes (cudarc binds its context to the thread) and restores the caller's.
//!
//! [`Buffer::lend_to_cudarc`]: crate::memory::Buffer::lend_to_cudarc
//! [`Buffer::lend_to_cudarc_mut`]: crate::memory::Buffer::lend_to_cudarc_mut

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, DriverError};

use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::stream::Stream;
use cuda_sys::CUstream;

mod lend;
mod view;

pub use lend::{Lent, LentMut};
pub use view::{CudarcView, CudarcViewMut, view, view_mut};

/// The cudarc side of one of this crate's streams ([`Stream::with_cudarc`]): cudarc's
/// borrowed handle, and the stream it borrows, kept alive for as long as the handle.
struct CudarcSide {
    cudarc: Arc<CudaStream>,
    _stream: Stream,
}

/// A cudarc stream's handle as this crate names it.
fn raw_of(stream: &CudaStream) -> CUstream {
    stream.cu_stream() as CUstream
}

/// Whether `ours` and cudarc's `theirs` are the same driver context.
fn same_context(ours: &Context, theirs: &CudaContext) -> bool {
    std::ptr::eq(
        ours.as_raw().cast::<c_void>(),
        theirs.cu_ctx().cast::<c_void>(),
    )
}

/// Refuses a cudarc context other than `ours`.
fn check_context(ours: &Context, theirs: &CudaContext) -> Result<()> {
    if same_context(ours, theirs) {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "the cudarc context (device {}) is not this stream's context: both must be the \
             device's primary context (cudarc's CudaContext::new retains it)",
            theirs.ordinal()
        )))
    }
}

/// This crate's handle to cudarc's context `theirs`, which must be a device's primary context.
fn primary_context_of(theirs: &CudaContext) -> Result<Context> {
    if !theirs.is_primary() {
        return Err(Error::unsupported(
            "a cudarc context that is not primary",
            "this crate's contexts are primary or green; use cudarc's CudaContext::new, which \
             retains the device's primary context",
        ));
    }
    let context = Device::new(theirs.ordinal())?.context()?;
    if !same_context(&context, theirs) {
        return Err(Error::invalid_argument(format!(
            "cudarc's primary context of device {} is not this crate's: the two crates loaded \
             different CUDA drivers (does CUDA_SAFE_LIBCUDA name another library than the one \
             cudarc found?)",
            theirs.ordinal()
        )));
    }
    Ok(context)
}

impl Stream {
    /// This crate's handle to a cudarc stream, without copying anything: the same `CUstream`,
    /// which the wrapper keeps alive (it holds a clone of the `Arc`) for as long as it or any
    /// clone of it lives (buffers keep one), so cudarc destroys the stream only after that.
    /// [`cudarc`](Self::cudarc) gives the cudarc stream back.
    ///
    /// Work queued here and through cudarc on the same stream runs in the order it is queued.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for cudarc's default or per-thread stream (handles whose
    /// meaning depends on the calling thread's current context: wrap one with the `unsafe`
    /// [`Stream::from_raw_with_owner`]) or when the two crates loaded different drivers;
    /// [`Error::Unsupported`] for a stream of a cudarc context that is not primary; the
    /// driver's error retaining the primary context.
    pub fn from_cudarc(stream: &Arc<CudaStream>) -> Result<Stream> {
        let raw = raw_of(stream);
        if raw.is_null()
            || raw == cuda_sys::CU_STREAM_LEGACY
            || raw == cuda_sys::CU_STREAM_PER_THREAD
        {
            return Err(Error::invalid_argument(
                "cudarc's default and per-thread streams mean the current context's stream, \
                 whichever is current: wrap one with the unsafe Stream::from_raw_with_owner, or \
                 use a stream cudarc made (CudaContext::new_stream)",
            ));
        }
        let context = primary_context_of(stream.context())?;
        let owner: Arc<CudaStream> = Arc::clone(stream);
        // SAFETY: `raw` is cudarc's stream of `context` (checked above); the wrapper holds an
        // `Arc` of cudarc's handle, and cudarc destroys a stream only when its last `Arc` drops.
        Ok(unsafe { Stream::from_raw_with_owner(raw, &context, owner) })
    }

    /// The cudarc stream this stream carries: the one it wraps ([`from_cudarc`](Self::from_cudarc),
    /// or [`from_raw_with_owner`](Self::from_raw_with_owner) with an `Arc<CudaStream>` of the
    /// same handle as its owner) or its cudarc side ([`with_cudarc`](Self::with_cudarc));
    /// `None` for other streams.
    pub fn cudarc(&self) -> Option<&CudaStream> {
        let owner = &**self.owner()?;
        let theirs = owner
            .downcast_ref::<CudaStream>()
            .or_else(|| owner.downcast_ref::<CudarcSide>().map(|side| &*side.cudarc))?;
        (raw_of(theirs) == self.as_raw()).then_some(theirs)
    }

    /// A handle to this same stream that also carries a cudarc side, for [`view`] and
    /// [`view_mut`]: cudarc's borrowed handle to the stream, kept inside the new handle with a
    /// clone of this one (so the stream outlives it) and never handed out. A stream that
    /// already carries one is returned as it is. The new handle equals this one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `context` is not this stream's context (a green
    /// context's streams have none cudarc can name).
    pub fn with_cudarc(&self, context: &Arc<CudaContext>) -> Result<Stream> {
        if self.cudarc().is_some() {
            return Ok(self.clone());
        }
        check_context(self.context(), context)?;
        let raw = self.as_raw();
        // SAFETY: `raw` is this stream, a stream of `context` (checked), and the side keeps a
        // clone of it for as long as cudarc's handle lives; the handle is never handed out.
        let cudarc = unsafe { context.wrap_borrowed_stream(raw as cudarc::driver::sys::CUstream) };
        let side = CudarcSide {
            cudarc,
            _stream: self.clone(),
        };
        // SAFETY: `raw` is this stream, kept alive by the clone inside `side`.
        Ok(unsafe { Stream::from_raw_with_owner(raw, self.context(), Arc::new(side)) })
    }

    /// cudarc's handle to this stream: cudarc's own `Arc` when this stream wraps one
    /// ([`from_cudarc`](Self::from_cudarc)), otherwise a borrowed handle
    /// (`CudaContext::wrap_borrowed_stream`) that does not keep this stream alive.
    ///
    /// cudarc tracks events on its slices only once its context has made a stream of its own
    /// (`new_stream`, `fork`); a borrowed handle does not count, and slices on it are then the
    /// caller's to order against other streams, as cudarc documents.
    ///
    /// # Safety
    ///
    /// A borrowed handle must not outlive this stream: keep this stream (or a clone) alive
    /// while the handle, or anything cudarc made with it (its slices free themselves on it),
    /// lives. Otherwise cudarc queues work on a destroyed stream.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `context` is not this stream's context.
    pub unsafe fn to_cudarc(&self, context: &Arc<CudaContext>) -> Result<Arc<CudaStream>> {
        if let Some(owner) = self.owner()
            && let Ok(theirs) = Arc::clone(owner).downcast::<CudaStream>()
            && raw_of(&theirs) == self.as_raw()
        {
            return Ok(theirs);
        }
        check_context(self.context(), context)?;
        // SAFETY: the caller keeps this stream alive while cudarc's handle lives; it is a
        // stream of `context` (checked).
        Ok(unsafe { context.wrap_borrowed_stream(self.as_raw() as cudarc::driver::sys::CUstream) })
    }
}

impl From<DriverError> for Error {
    /// A cudarc error as [`Error::Cuda`] (cudarc does not say which call failed).
    fn from(error: DriverError) -> Self {
        Error::cuda("a cudarc call", cuda_sys::CUresult(error.0 as u32))
    }
}

/// Returns (and clears) an error cudarc recorded in `context` since it was last checked: the
/// waits and records of its guards report failures there, not to their caller.
fn recorded_error(context: &CudaContext) -> Result<()> {
    context.check_err().map_err(Error::from)
}
