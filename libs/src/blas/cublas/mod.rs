//! [`Blas`]: a cuBLAS handle bound to a stream, its workspace a buffer of this crate, and the
//! level-3 ([`level3`]) and level-1/2 ([`level12`]) calls made on it.

mod level12;
mod level3;

use std::cell::Cell;
use std::fmt;

pub use level3::GemmBatch;
pub use level12::{Gemv, GemvElement, Vector};

use super::operand::{DEFAULT_WORKSPACE, PointerMode};
use crate::blas::error::cublas;
use crate::operand::workspace_buffer;
use cublas_sys::{Cublas, cublasHandle_t, cudaStream_t};
use cuda_safe::Buffer;
use cuda_safe::Stream;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Error, Result};

/// The alignment cuBLAS needs of a workspace's address.
const WORKSPACE_ALIGNMENT: u64 = 256;

/// A cuBLAS handle (`cublasHandle_t`) bound to a [`Stream`]: every call is queued there, on the
/// handle's workspace, a [`Buffer`] of this crate set with `cublasSetWorkspace` (so a call
/// allocates nothing, and a graph capture records fixed addresses, as cuBLAS requires).
///
/// The calls are column-major, as BLAS is; [`Gemm::row_major`](super::Gemm::row_major) takes
/// row-major matrices. Every dimension, leading dimension, stride, batch count and memory
/// length is checked before the call: a too-small buffer is [`Error::InvalidArgument`], never a
/// GPU fault. A call makes the one cuBLAS call it wraps, plus `cublasSetPointerMode` when its
/// scalars live elsewhere than the previous call's (host or device memory).
///
/// `Send`, not `Sync`: cuBLAS lets a handle be used from any thread but not from two at once
/// (its configuration, the stream and the pointer mode, is shared state), so a `Blas` moves to
/// another thread whole. Give each thread its own.
///
/// cuBLAS runs its kernels in the CUDA context current on the calling thread: each call makes
/// the stream's context current for its duration and gives the thread back the one it had
/// (one `cuCtxGetCurrent` when it is already current), so a `Blas` of any device works from
/// any thread.
///
/// Dropping the handle destroys it (`cublasDestroy`, which waits for the device), then frees
/// the workspace in order on the stream.
#[must_use = "a cuBLAS handle is destroyed when dropped"]
pub struct Blas {
    inner: Owned<Handle>,
}

/// What a [`Blas`] owns.
struct Handle {
    raw: cublasHandle_t,
    cublas: &'static Cublas,
    stream: Stream,
    workspace: Buffer,
    /// The handle's pointer mode, as last set (cuBLAS's default: host).
    mode: Cell<PointerMode>,
    tf32: bool,
}

// SAFETY: a cuBLAS handle may be used from any thread, one thread at a time; `Handle` is not
// `Sync` (its `Cell`), so a shared `&Blas` never reaches a second thread.
unsafe impl Send for Handle {}

impl Blas {
    /// A handle on `stream` with a [`DEFAULT_WORKSPACE`](super::DEFAULT_WORKSPACE)-byte
    /// workspace from the device's default memory pool.
    ///
    #[doc = cublas_sys::api_doc!(cublasCreate_v2)]
    /// # Errors
    ///
    /// [`Error::Load`] when cuBLAS cannot be loaded; cuBLAS's and the driver's errors.
    #[doc(alias = "cublasCreate_v2")]
    pub fn new(stream: &Stream) -> Result<Self> {
        let workspace = stream
            .device()
            .default_memory_resource()?
            .allocate(DEFAULT_WORKSPACE, stream)?;
        Self::with_workspace(stream, workspace)
    }

    /// A handle on `stream` whose workspace is `workspace` (from any memory resource; moved to
    /// `stream`; empty for none, which some algorithms need).
    ///
    #[doc = cublas_sys::api_doc!(cublasCreate_v2)]
    #[doc = cublas_sys::api_doc!(cublasSetStream_v2)]
    #[doc = cublas_sys::api_doc!(cublasSetWorkspace_v2)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a workspace the GPU cannot reach or not aligned to 256
    /// bytes; as [`new`](Self::new).
    #[doc(
        alias = "cublasCreate_v2",
        alias = "cublasSetStream_v2",
        alias = "cublasSetWorkspace_v2"
    )]
    pub fn with_workspace(stream: &Stream, mut workspace: Buffer) -> Result<Self> {
        check_workspace(&workspace, stream)?;
        workspace.set_stream(stream)?;
        // cuBLAS is built on cuBLASLt, which its loader looks for by soname: opened here first,
        // it is found wherever this crate's loader finds it. cuBLAS reports it when missing.
        let _ = cublaslt_sys::cublaslt();
        let cublas = cublas_sys::cublas()?;
        let _current = stream.context().scoped()?;
        let mut raw: cublasHandle_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the stream's context is current.
        unsafe { cublas!(cublas, cublasCreate_v2(&mut raw)) }?;
        let blas = Self {
            inner: Owned::new(Handle {
                raw,
                cublas,
                stream: stream.clone(),
                workspace,
                mode: Cell::new(PointerMode::Host),
                tf32: false,
            }),
        };
        blas.bind()?;
        Ok(blas)
    }

    /// Binds the handle to its stream and workspace (`cublasSetStream` resets the workspace to
    /// cuBLAS's own, so it is set again after).
    fn bind(&self) -> Result<()> {
        let inner = &*self.inner;
        let stream: cudaStream_t = inner.stream.as_raw().cast();
        let (ptr, size) = (inner.workspace.as_raw(), inner.workspace.len());
        // SAFETY: a live handle and stream; the workspace is device memory of `size` bytes the
        // handle owns until it is destroyed, ordered on the stream.
        unsafe {
            cublas!(inner.cublas, cublasSetStream_v2(inner.raw, stream))?;
            cublas!(
                inner.cublas,
                cublasSetWorkspace_v2(inner.raw, ptr as *mut std::ffi::c_void, size)
            )
        }
    }

    /// The stream every call is queued on.
    #[inline]
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Moves the handle to `stream` (of the same context): calls from now on are queued there,
    /// after the work queued on the old stream so far (the workspace moves with it, as a
    /// [`Buffer::set_stream`] does).
    ///
    #[doc = cublas_sys::api_doc!(cublasSetStream_v2)]
    #[doc = cublas_sys::api_doc!(cublasSetWorkspace_v2)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a stream of another context; cuBLAS's and the driver's
    /// errors (the handle then stays on its stream).
    #[doc(alias = "cublasSetStream_v2", alias = "cublasSetWorkspace_v2")]
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        if self.inner.stream.same_as(stream) {
            return Ok(());
        }
        if !self.inner.stream.context().same_as(stream.context()) {
            return Err(Error::invalid_argument(
                "a cuBLAS handle moves only to a stream of its own context",
            ));
        }
        let old = self.inner.stream.clone();
        self.inner.workspace.set_stream(stream)?;
        self.inner.stream = stream.clone();
        if let Err(error) = self.bind() {
            // Back to the old stream, the workspace with it, so the handle is as it was.
            self.inner.stream = old.clone();
            let back = self
                .inner
                .workspace
                .set_stream(&old)
                .and_then(|()| self.bind());
            if let Err(again) = back {
                log::error!(
                    "cuda-safe: a cuBLAS handle could not move back to its stream after a \
                     failed move ({again}); its calls may fail until set_stream succeeds"
                );
            }
            return Err(error);
        }
        Ok(())
    }

    /// The workspace buffer.
    pub fn workspace(&self) -> &Buffer {
        &self.inner.workspace
    }

    /// Lets f32 GEMMs use TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`: inputs rounded
    /// to 10 mantissa bits, f32 accumulation), or not (the default: full f32). Other types
    /// are not affected.
    pub fn allow_tf32(&mut self, allow: bool) {
        self.inner.tf32 = allow;
    }

    /// Whether f32 GEMMs may use TF32 ([`allow_tf32`](Self::allow_tf32)).
    pub fn allows_tf32(&self) -> bool {
        self.inner.tf32
    }

    /// The loaded cuBLAS's version (`CUBLAS_VERSION`'s encoding: 130100 is 13.1.0).
    ///
    #[doc = cublas_sys::api_doc!(cublasGetVersion_v2)]
    /// # Errors
    ///
    /// cuBLAS's error.
    #[doc(alias = "cublasGetVersion_v2")]
    pub fn version(&self) -> Result<u32> {
        let mut version = 0;
        // SAFETY: a live handle and a valid out-pointer.
        unsafe {
            cublas!(
                self.inner.cublas,
                cublasGetVersion_v2(self.inner.raw, &mut version)
            )
        }?;
        Ok(u32::try_from(version).unwrap_or(0))
    }

    /// The raw handle, valid while this `Blas` lives. Calls made on it directly must leave
    /// its stream, workspace and pointer mode as they were.
    pub fn as_raw(&self) -> cublasHandle_t {
        self.inner.raw
    }

    /// Destroys the handle now, returning cuBLAS's error, then frees the workspace.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    /// The loaded cuBLAS and the raw handle, for the calls.
    #[inline(always)]
    fn parts(&self) -> (&'static Cublas, cublasHandle_t) {
        (self.inner.cublas, self.inner.raw)
    }

    /// Sets the handle's pointer mode to `mode` when it is another (a call with no change
    /// costs one comparison).
    #[inline(always)]
    fn set_mode(&self, mode: PointerMode) -> Result<()> {
        if self.inner.mode.get() == mode {
            return Ok(());
        }
        self.change_mode(mode)
    }

    #[cold]
    fn change_mode(&self, mode: PointerMode) -> Result<()> {
        // SAFETY: a live handle; the mode is one of cuBLAS's.
        unsafe {
            cublas!(
                self.inner.cublas,
                cublasSetPointerMode_v2(self.inner.raw, mode.as_raw())
            )
        }?;
        self.inner.mode.set(mode);
        Ok(())
    }
}

/// Refuses a workspace cuBLAS cannot use on `stream`.
fn check_workspace(workspace: &Buffer, stream: &Stream) -> Result<()> {
    workspace_buffer(workspace, stream, "a cuBLAS workspace")?;
    if !workspace.as_raw().is_multiple_of(WORKSPACE_ALIGNMENT) {
        return Err(Error::invalid_argument(format!(
            "a cuBLAS workspace must be aligned to {WORKSPACE_ALIGNMENT} bytes; this one is at \
             {:#x}",
            workspace.as_raw()
        )));
    }
    Ok(())
}

impl Release for Handle {
    const WHAT: &'static str = "cuBLAS handle";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the handle was created by cublasCreate and is destroyed once (by `Owned`);
        // the workspace is freed after, when the fields drop.
        unsafe { cublas!(self.cublas, cublasDestroy_v2(self.raw)) }
    }
}

impl fmt::Debug for Blas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blas")
            .field("handle", &self.inner.raw)
            .field("stream", &self.inner.stream)
            .field("workspace", &self.inner.workspace.len())
            .field("tf32", &self.inner.tf32)
            .finish()
    }
}

/// Asserts at compile time that a `Blas` moves between threads.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Blas>();
};
