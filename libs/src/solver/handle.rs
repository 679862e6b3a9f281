//! [`Solver`]: a cuSOLVER dense handle bound to a stream, its `cusolverDnParams_t`, and the
//! workspaces its calls share (device memory from a memory resource of this crate's caller,
//! host memory kept until the stream has passed it).

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use super::info::{Info, Meaning};
use crate::operand::{Operand, workspace_resource};
use crate::solver::error::cusolver;
use cuda_safe::Stream;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::ordering::ordered;
use cuda_safe::{Buffer, MemoryResource, ScopedCurrent};
use cuda_safe::{Error, Result};
use cusolver_sys::{Cusolver, cudaStream_t, cusolverDnHandle_t, cusolverDnParams_t, gesvdjInfo_t};

/// A cuSOLVER dense handle (`cusolverDnHandle_t`) bound to a [`Stream`]: every routine is
/// queued there. One per stream, as for cuBLAS's `Blas` (feature `blas`).
///
/// The routines are LAPACK's, on column-major matrices described by a
/// [`Layout`](super::Layout): LU ([`getrf`](Self::getrf), [`getrs`](Self::getrs)), Cholesky
/// ([`potrf`](Self::potrf), [`potrs`](Self::potrs)), QR ([`geqrf`](Self::geqrf),
/// [`ormqr`](Self::ormqr)), symmetric eigenvalues ([`syevd`](Self::syevd)) and the SVD
/// ([`gesvd`](Self::gesvd), [`gesvdj_batched`](Self::gesvdj_batched)), in f32 and f64, through
/// the 64-bit `cusolverDnX` API where cuSOLVER has it. Every dimension, leading dimension and
/// memory length is checked before the call: a too-small buffer is [`Error::InvalidArgument`],
/// never a GPU fault. Each routine returns an [`Info`](super::Info) without waiting for the
/// GPU; [`Info::check`](super::Info::check) waits and turns the routine's `info` output into a
/// typed error ([`CusolverError::Singular`](super::CusolverError::Singular) naming the pivot,
/// and so on).
///
/// The workspaces are the handle's: device memory from its memory resource (the device's
/// default pool unless [`with_memory_resource`](Self::with_memory_resource) chose another),
/// allocated in order on the stream, and host memory, each grown when a routine needs more
/// (at least doubled; the old device memory kept until the handle drops, as a graph captured
/// with it replays on it; the old host memory kept until the stream has passed it) and kept
/// for the handle's life. So a routine that ran once (or after
/// [`reserve`](Self::reserve)) allocates no workspace again, and can be captured into a graph:
/// a routine whose workspace would have to grow during a capture is refused.
///
/// cuSOLVER runs its kernels in the CUDA context current on the calling thread: each call makes
/// the stream's context current for its duration (restoring the caller's after), so a `Solver`
/// works on any device from any thread.
///
/// `Send`, not `Sync`: a cuSOLVER handle may be used from any thread but not from two at once
/// (its stream and its workspaces are shared state). Give each thread its own.
///
/// Dropping the handle destroys it (`cusolverDnDestroy`), then frees the workspaces in order
/// on the stream.
#[must_use = "a cuSOLVER handle is destroyed when dropped"]
pub struct Solver {
    inner: Owned<Handle>,
}

/// What a [`Solver`] owns.
struct Handle {
    raw: cusolverDnHandle_t,
    params: cusolverDnParams_t,
    /// The batched Jacobi SVD's parameters (default tolerance and sweeps), made on first use.
    gesvdj: Cell<gesvdjInfo_t>,
    cusolver: &'static Cusolver,
    stream: Stream,
    resource: Arc<dyn MemoryResource>,
    workspace: RefCell<Workspace>,
}

/// The workspaces the routines share.
struct Workspace {
    device: Option<Buffer>,
    host: Vec<u64>,
    /// Device workspaces replaced by larger ones, kept until the handle drops: a graph
    /// captured with one still uses it at each replay.
    retired: Vec<Buffer>,
}

/// A routine's workspaces, as the call takes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Work {
    pub(crate) device: *mut c_void,
    pub(crate) device_bytes: usize,
    pub(crate) host: *mut c_void,
    pub(crate) host_bytes: usize,
}

// SAFETY: a cuSOLVER handle and its parameter objects may be used from any thread, one thread
// at a time; `Handle` is not `Sync` (its `Cell` and `RefCell`), so a shared `&Solver` never
// reaches a second thread. The host workspace is plain memory owned by the handle.
unsafe impl Send for Handle {}

impl Solver {
    /// A handle on `stream`, its device workspace from the device's default memory pool.
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnCreate)]
    #[doc = cusolver_sys::api_doc!(cusolverDnSetStream)]
    #[doc = cusolver_sys::api_doc!(cusolverDnCreateParams)]
    /// # Errors
    ///
    /// [`Error::Load`] when cuSOLVER cannot be loaded; cuSOLVER's and the driver's errors.
    #[doc(
        alias = "cusolverDnCreate",
        alias = "cusolverDnSetStream",
        alias = "cusolverDnCreateParams"
    )]
    pub fn new(stream: &Stream) -> Result<Self> {
        let pool = stream.device().default_memory_resource()?;
        Self::with_memory_resource(stream, Arc::new(pool))
    }

    /// A handle on `stream` whose device workspace comes from `resource` (memory the GPU can
    /// reach, allocated in order on the stream where the resource supports it).
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnCreate)]
    #[doc = cusolver_sys::api_doc!(cusolverDnSetStream)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a resource whose memory the GPU cannot reach; as
    /// [`new`](Self::new).
    pub fn with_memory_resource(
        stream: &Stream,
        resource: Arc<dyn MemoryResource>,
    ) -> Result<Self> {
        workspace_resource(&*resource, stream, "a cuSOLVER workspace")?;
        let cusolver = cusolver_sys::cusolver()?;
        let _current = stream.context().scoped()?;
        let mut raw: cusolverDnHandle_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the stream's context is current.
        unsafe { cusolver!(cusolver, cusolverDnCreate(&mut raw)) }?;
        let mut handle = Handle {
            raw,
            params: std::ptr::null_mut(),
            gesvdj: Cell::new(std::ptr::null_mut()),
            cusolver,
            stream: stream.clone(),
            resource,
            workspace: RefCell::new(Workspace {
                device: None,
                host: Vec::new(),
                retired: Vec::new(),
            }),
        };
        let mut params: cusolverDnParams_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let made = unsafe { cusolver!(cusolver, cusolverDnCreateParams(&mut params)) };
        handle.params = params;
        let solver = Self {
            inner: Owned::new(handle),
        };
        made?;
        let raw_stream: cudaStream_t = stream.as_raw().cast();
        // SAFETY: a live handle and stream.
        unsafe { cusolver!(cusolver, cusolverDnSetStream(raw, raw_stream)) }?;
        Ok(solver)
    }

    /// The stream every routine is queued on.
    #[inline]
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Grows the workspaces to at least `device_bytes` of device memory and `host_bytes` of
    /// host memory now, so that no routine up to those sizes allocates one later (in a graph
    /// capture, where growing is refused).
    ///
    /// # Errors
    ///
    /// The memory resource's errors; [`Error::InvalidArgument`] while the stream is captured.
    pub fn reserve(&self, device_bytes: usize, host_bytes: usize) -> Result<()> {
        self.with_workspace(device_bytes, host_bytes, |_| Ok(()))
    }

    /// The bytes of device and of host workspace the handle holds.
    pub fn workspace_bytes(&self) -> (usize, usize) {
        let workspace = self.inner.workspace.borrow();
        (
            workspace.device.as_ref().map_or(0, Buffer::len),
            workspace.host.len() * size_of::<u64>(),
        )
    }

    /// The loaded cuSOLVER's version (`CUSOLVER_VERSION`'s encoding: 11700 is 11.7.0).
    ///
    #[doc = cusolver_sys::api_doc!(cusolverGetVersion)]
    /// # Errors
    ///
    /// cuSOLVER's error.
    #[doc(alias = "cusolverGetVersion")]
    pub fn version(&self) -> Result<u32> {
        let mut version = 0;
        // SAFETY: a valid out-pointer.
        unsafe { cusolver!(self.inner.cusolver, cusolverGetVersion(&mut version)) }?;
        Ok(u32::try_from(version).unwrap_or(0))
    }

    /// The raw handle, valid while this `Solver` lives. Calls made on it directly must leave
    /// its stream as it was.
    pub fn as_raw(&self) -> cusolverDnHandle_t {
        self.inner.raw
    }

    /// Destroys the handle now, returning cuSOLVER's error, then frees the workspaces.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    /// The loaded cuSOLVER, the raw handle and the parameters, for the calls.
    #[inline(always)]
    pub(crate) fn parts(&self) -> (&'static Cusolver, cusolverDnHandle_t, cusolverDnParams_t) {
        (self.inner.cusolver, self.inner.raw, self.inner.params)
    }

    /// Makes the stream's context current for a call.
    #[inline]
    fn current(&self) -> Result<ScopedCurrent<'_>> {
        self.inner.stream.context().scoped()
    }

    /// The batched Jacobi SVD's parameters, made on first use.
    pub(crate) fn gesvdj_info(&self) -> Result<gesvdjInfo_t> {
        let made = self.inner.gesvdj.get();
        if !made.is_null() {
            return Ok(made);
        }
        let mut info: gesvdjInfo_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the object is destroyed with the handle.
        unsafe { cusolver!(self.inner.cusolver, cusolverDnCreateGesvdjInfo(&mut info)) }?;
        self.inner.gesvdj.set(info);
        Ok(info)
    }

    /// Allocates `bytes` of device memory from the handle's resource, in order on its stream.
    pub(crate) fn allocate(&self, bytes: usize) -> Result<Buffer> {
        let inner = &*self.inner;
        let ptr = if bytes == 0 {
            0
        } else {
            inner.resource.allocate_raw(bytes, &inner.stream)?
        };
        // SAFETY: `ptr` came from the resource with `bytes` bytes (or is 0 for 0 bytes), owned
        // by nobody else, and nothing uses it yet.
        Ok(unsafe { Buffer::from_raw_parts(ptr, bytes, inner.resource.clone(), &inner.stream) })
    }

    /// Runs `call` with workspaces of at least `device_bytes` and `host_bytes`, growing them
    /// first when they are smaller.
    pub(crate) fn with_workspace(
        &self,
        device_bytes: usize,
        host_bytes: usize,
        call: impl FnOnce(Work) -> Result<()>,
    ) -> Result<()> {
        let mut workspace = self
            .inner
            .workspace
            .try_borrow_mut()
            .map_err(|_| Error::invalid_argument("a cuSOLVER handle's routines do not nest"))?;
        let have = workspace.device.as_ref().map_or(0, Buffer::len);
        let host_words = host_bytes.div_ceil(size_of::<u64>());
        if device_bytes > have || host_words > workspace.host.len() {
            if self.inner.stream.is_capturing()? {
                return Err(Error::invalid_argument(format!(
                    "this cuSOLVER routine needs {device_bytes} bytes of device and {host_bytes} \
                     of host workspace, more than the handle holds, and its stream is being \
                     captured: run the routine once before the capture, or Solver::reserve"
                )));
            }
            if device_bytes > have {
                // At least doubled, so the retired workspaces add up to less than the current.
                let grown = self.allocate(device_bytes.max(have.saturating_mul(2)))?;
                if let Some(old) = workspace.device.replace(grown) {
                    workspace.retired.push(old);
                }
            }
            if host_words > workspace.host.len() {
                let old = std::mem::replace(&mut workspace.host, vec![0; host_words]);
                self.retire(old)?;
            }
        }
        let device = workspace.device.as_ref();
        let work = Work {
            device: device.map_or(std::ptr::null_mut(), |buffer| {
                buffer.as_raw() as *mut c_void
            }),
            device_bytes: device.map_or(0, Buffer::len),
            host: if workspace.host.is_empty() {
                std::ptr::null_mut()
            } else {
                workspace.host.as_mut_ptr().cast()
            },
            host_bytes: workspace.host.len() * size_of::<u64>(),
        };
        call(work)
    }

    /// Runs one routine on `operands`, each first checked to be memory the handle's device
    /// reaches ([`Operand::on`]): its workspace sizes (device and host bytes) from `sizes`,
    /// then `call` with the workspaces and the address of a new [`Info`], ordered with the
    /// operands' streams as a launch is, the stream's context current throughout.
    pub(crate) fn routine<const N: usize>(
        &self,
        (api, meaning, batch): (&'static str, Meaning, Option<usize>),
        operands: [Operand<'_>; N],
        sizes: impl FnOnce() -> Result<(usize, usize)>,
        call: impl FnOnce(Work, u64) -> Result<()>,
    ) -> Result<Info> {
        let mut streams = [None; N];
        for (slot, operand) in streams.iter_mut().zip(&operands) {
            *slot = Some(operand.on(self.stream())?);
        }
        let _current = self.current()?;
        let (device_bytes, host_bytes) = sizes()?;
        let info = Info::new(self, api, meaning, batch)?;
        let at = info.operand()?.as_raw();
        self.with_workspace(device_bytes, host_bytes, |work| {
            ordered(self.stream(), streams, || call(work, at))
        })?;
        Ok(info)
    }

    /// Frees host workspace once the stream has passed the work queued so far (cuSOLVER does
    /// not say whether a routine reads it after returning).
    fn retire(&self, old: Vec<u64>) -> Result<()> {
        retire(&self.inner.stream, old)
    }
}

/// Frees `old` once `stream` has passed its queued work: in a host function on the stream,
/// or after waiting for the stream where one cannot be queued. During a capture nothing ran
/// yet, and a graph's replays need the handle alive (the capture's promise), so it goes now.
fn retire(stream: &Stream, old: Vec<u64>) -> Result<()> {
    if old.is_empty() || stream.is_capturing()? {
        return Ok(());
    }
    let old = Arc::new(old);
    let held = Arc::clone(&old);
    if stream.launch_host_func(move || drop(held)).is_ok() {
        return Ok(());
    }
    let drained = stream.drain();
    drop(old);
    drained
}

impl Release for Handle {
    const WHAT: &'static str = "cuSOLVER handle";

    fn release(&mut self) -> Result<()> {
        let gesvdj = self.gesvdj.replace(std::ptr::null_mut());
        // SAFETY: each object was made by its create call and is destroyed once (by `Owned`);
        // the device workspace is freed after, when the fields drop, in order on the stream.
        let results = unsafe {
            [
                if gesvdj.is_null() {
                    Ok(())
                } else {
                    cusolver!(self.cusolver, cusolverDnDestroyGesvdjInfo(gesvdj))
                },
                if self.params.is_null() {
                    Ok(())
                } else {
                    cusolver!(self.cusolver, cusolverDnDestroyParams(self.params))
                },
                cusolver!(self.cusolver, cusolverDnDestroy(self.raw)),
            ]
        };
        let host = std::mem::take(&mut self.workspace.get_mut().host);
        let retired = retire(&self.stream, host);
        results.into_iter().chain([retired]).collect()
    }
}

impl fmt::Debug for Solver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (device, host) = self.workspace_bytes();
        f.debug_struct("Solver")
            .field("handle", &self.inner.raw)
            .field("stream", &self.inner.stream)
            .field("device_workspace", &device)
            .field("host_workspace", &host)
            .finish()
    }
}

/// Asserts at compile time that a `Solver` moves between threads.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Solver>();
};
