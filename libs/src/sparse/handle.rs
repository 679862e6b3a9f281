//! [`Sparse`]: a cuSPARSE handle bound to a stream, and the work area its operations share
//! (device memory from a memory resource of this crate's caller, grown when an operation needs
//! more).

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use crate::operand::workspace_resource;
use crate::sparse::error::cusparse;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Buffer, MemoryResource, ScopedCurrent, Stream};
use cuda_safe::{Error, Result};
use cusparse_sys::{Cusparse, cudaStream_t, cusparseHandle_t};

/// A cuSPARSE handle (`cusparseHandle_t`) bound to a [`Stream`]: every operation is queued
/// there. One per stream, as for cuBLAS's `Blas` and cuSOLVER's `Solver`.
///
/// The operations are cuSPARSE's generic API on [`SparseMatrix`](super::SparseMatrix),
/// [`DenseMatrix`](super::DenseMatrix) and [`DenseVector`](super::DenseVector) descriptors:
/// [`spmv`](Self::spmv), [`spmm`](Self::spmm), [`sddmm`](Self::sddmm), [`spgemm`](Self::spgemm)
/// and the conversions [`dense_to_csr`](Self::dense_to_csr) and
/// [`sparse_to_dense`](Self::sparse_to_dense). Every dimension, type and output is checked
/// before the call: a mismatch is [`Error::InvalidArgument`], never a GPU fault. The scalars α
/// and β are host values.
///
/// The work area is the handle's: device memory from its memory resource (the device's default
/// pool unless [`with_memory_resource`](Self::with_memory_resource) chose another), allocated in
/// order on the stream, grown when an operation asks for more (at least doubled; the old area
/// kept until the handle drops, as a graph captured with it replays on it) and kept for the
/// handle's life. An SpMV or SpMM that ran once (or after
/// [`reserve`](Self::reserve)) allocates nothing again and can be captured into a graph; an
/// operation whose work area would have to grow during a capture is refused. The last buffer
/// size cuSPARSE answered is remembered, so an SpMV repeated on the same descriptors asks once.
///
/// cuSPARSE runs its kernels in the CUDA context current on the calling thread: each call makes
/// the stream's context current for its duration (restoring the caller's after), so a `Sparse`
/// works on any device from any thread.
///
/// `Send`, not `Sync`: a cuSPARSE handle may be used from any thread but not from two at once.
///
/// Dropping the handle destroys it (`cusparseDestroy`), then frees the work area in order on
/// the stream.
#[must_use = "a cuSPARSE handle is destroyed when dropped"]
pub struct Sparse {
    inner: Owned<Handle>,
}

/// What a [`Sparse`] owns.
struct Handle {
    raw: cusparseHandle_t,
    cusparse: &'static Cusparse,
    stream: Stream,
    resource: Arc<dyn MemoryResource>,
    workspace: RefCell<Option<Buffer>>,
    /// Work areas replaced by larger ones, kept until the handle drops: a graph captured with
    /// one still uses it at each replay.
    retired: RefCell<Vec<Buffer>>,
    /// The last buffer-size query: what was asked (the call, its descriptors, operations,
    /// algorithm and shapes) and cuSPARSE's answer.
    last_size: Cell<Option<(SizeKey, usize)>>,
}

/// What a buffer size depends on: the call, and the numbers of its descriptors (addresses,
/// shapes, formats, types, orders), operations and algorithm.
pub(crate) type SizeKey = (&'static str, [u64; 20]);

// SAFETY: a cuSPARSE handle may be used from any thread, one thread at a time; `Handle` is not
// `Sync` (its `Cell` and `RefCell`), so a shared `&Sparse` never reaches a second thread.
unsafe impl Send for Handle {}

impl Sparse {
    /// A handle on `stream`, its work area from the device's default memory pool.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreate)]
    #[doc = cusparse_sys::api_doc!(cusparseSetStream)]
    /// # Errors
    ///
    /// [`Error::Load`] when cuSPARSE cannot be loaded; cuSPARSE's and the driver's errors.
    #[doc(alias = "cusparseCreate", alias = "cusparseSetStream")]
    pub fn new(stream: &Stream) -> Result<Self> {
        let pool = stream.device().default_memory_resource()?;
        Self::with_memory_resource(stream, Arc::new(pool))
    }

    /// A handle on `stream` whose work area comes from `resource` (memory the GPU can reach,
    /// allocated in order on the stream where the resource supports it).
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreate)]
    #[doc = cusparse_sys::api_doc!(cusparseSetStream)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a resource whose memory the GPU cannot reach; as
    /// [`new`](Self::new).
    pub fn with_memory_resource(
        stream: &Stream,
        resource: Arc<dyn MemoryResource>,
    ) -> Result<Self> {
        workspace_resource(&*resource, stream, "a cuSPARSE work area")?;
        let cusparse = cusparse_sys::cusparse()?;
        let _current = stream.context().scoped()?;
        let mut raw: cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the stream's context is current.
        unsafe { cusparse!(cusparse, cusparseCreate(&mut raw)) }?;
        let sparse = Self {
            inner: Owned::new(Handle {
                raw,
                cusparse,
                stream: stream.clone(),
                resource,
                workspace: RefCell::new(None),
                retired: RefCell::new(Vec::new()),
                last_size: Cell::new(None),
            }),
        };
        let raw_stream: cudaStream_t = stream.as_raw().cast();
        // SAFETY: a live handle and stream.
        unsafe { cusparse!(cusparse, cusparseSetStream(raw, raw_stream)) }?;
        Ok(sparse)
    }

    /// The stream every operation is queued on.
    #[inline]
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Grows the work area to at least `bytes` now, so that no operation up to that size
    /// allocates one later (in a graph capture, where growing is refused).
    ///
    /// # Errors
    ///
    /// The memory resource's errors; [`Error::InvalidArgument`] while the stream is captured.
    pub fn reserve(&self, bytes: usize) -> Result<()> {
        self.with_workspace(bytes, |_| Ok(()))
    }

    /// The bytes of work area the handle holds.
    pub fn workspace_bytes(&self) -> usize {
        self.inner
            .workspace
            .borrow()
            .as_ref()
            .map_or(0, Buffer::len)
    }

    /// The loaded cuSPARSE's version (`CUSPARSE_VERSION`'s encoding: 12501 is 12.5.1).
    ///
    #[doc = cusparse_sys::api_doc!(cusparseGetVersion)]
    /// # Errors
    ///
    /// cuSPARSE's error.
    #[doc(alias = "cusparseGetVersion")]
    pub fn version(&self) -> Result<u32> {
        let mut version = 0;
        // SAFETY: a live handle and a valid out-pointer.
        unsafe {
            cusparse!(
                self.inner.cusparse,
                cusparseGetVersion(self.inner.raw, &mut version)
            )
        }?;
        Ok(u32::try_from(version).unwrap_or(0))
    }

    /// The raw handle, valid while this `Sparse` lives. Calls made on it directly must leave
    /// its stream and pointer mode as they were.
    pub fn as_raw(&self) -> cusparseHandle_t {
        self.inner.raw
    }

    /// Destroys the handle now, returning cuSPARSE's error, then frees the work area.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    /// The loaded cuSPARSE and the raw handle, for the calls.
    #[inline(always)]
    pub(crate) fn parts(&self) -> (&'static Cusparse, cusparseHandle_t) {
        (self.inner.cusparse, self.inner.raw)
    }

    /// Makes the stream's context current for a call.
    #[inline]
    pub(crate) fn current(&self) -> Result<ScopedCurrent<'_>> {
        self.inner.stream.context().scoped()
    }

    /// The buffer size for `key`: the remembered answer, or `query`'s (remembered).
    #[inline]
    pub(crate) fn buffer_size(
        &self,
        key: SizeKey,
        query: impl FnOnce() -> Result<usize>,
    ) -> Result<usize> {
        if let Some((last, size)) = self.inner.last_size.get()
            && last == key
        {
            return Ok(size);
        }
        let size = query()?;
        self.inner.last_size.set(Some((key, size)));
        Ok(size)
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

    /// Runs `call` with a work area of at least `bytes` (null for 0), growing it first when it
    /// is smaller.
    #[inline]
    pub(crate) fn with_workspace<R>(
        &self,
        bytes: usize,
        call: impl FnOnce(*mut c_void) -> Result<R>,
    ) -> Result<R> {
        let mut workspace =
            self.inner.workspace.try_borrow_mut().map_err(|_| {
                Error::invalid_argument("a cuSPARSE handle's operations do not nest")
            })?;
        let have = workspace.as_ref().map_or(0, Buffer::len);
        if bytes > have {
            if self.inner.stream.is_capturing()? {
                return Err(Error::invalid_argument(format!(
                    "this cuSPARSE operation needs {bytes} bytes of work area, more than the \
                     handle holds, and its stream is being captured: run the operation once \
                     before the capture, or Sparse::reserve"
                )));
            }
            // At least doubled, so the retired areas add up to less than the current one.
            let grown = self.allocate(bytes.max(have.saturating_mul(2)))?;
            if let Some(old) = workspace.replace(grown) {
                self.inner.retired.borrow_mut().push(old);
            }
        }
        let area = match workspace.as_ref() {
            Some(buffer) if bytes > 0 => buffer.as_raw() as *mut c_void,
            _ => std::ptr::null_mut(),
        };
        call(area)
    }
}

impl Release for Handle {
    const WHAT: &'static str = "cuSPARSE handle";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the handle was made by `cusparseCreate` and is destroyed once (by `Owned`);
        // the work area is freed after, when the fields drop, in order on the stream.
        unsafe { cusparse!(self.cusparse, cusparseDestroy(self.raw)) }
    }
}

impl fmt::Debug for Sparse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sparse")
            .field("handle", &self.inner.raw)
            .field("stream", &self.inner.stream)
            .field("workspace", &self.workspace_bytes())
            .finish()
    }
}

/// Asserts at compile time that a `Sparse` moves between threads.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Sparse>();
};
