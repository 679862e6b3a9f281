//! `Buffer`: one allocation from a memory resource, freed in order on its stream.

use std::fmt;
use std::sync::Arc;

use bytemuck::Pod;

use super::resource::MemoryResource;
use super::slice::{DeviceSlice, DeviceSliceMut, Placement, element_count};
use crate::error::{Error, Result};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::ordering;
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

/// One allocation: its address, its size in bytes, the resource that frees it and the stream
/// its operations (and its free) are ordered on.
///
/// Dropping a buffer frees it on its stream; [`close`](Self::close) does the same and returns
/// the driver's error. A zero-size buffer allocates nothing and every operation on it is a
/// no-op.
#[must_use = "a buffer is freed when dropped"]
pub struct Buffer {
    inner: Owned<Allocation>,
}

/// What a [`Buffer`] owns: the allocation and what frees it.
struct Allocation {
    ptr: CUdeviceptr,
    size: usize,
    host_accessible: bool,
    host_needs_idle_device: bool,
    // Where the memory lives, for copies (between devices; needing a current context).
    placement: Placement,
    resource: Arc<dyn MemoryResource>,
    stream: Stream,
}

impl Buffer {
    /// Allocates `size` bytes from `resource`, ordered on `stream`.
    ///
    /// # Errors
    ///
    /// The resource's: the driver's when memory runs out ([`Error::is_out_of_memory`]);
    /// [`Error::InvalidArgument`] from a device pool for a stream of another device.
    #[inline]
    pub fn allocate_in<R: MemoryResource + 'static>(
        resource: Arc<R>,
        size: usize,
        stream: &Stream,
    ) -> Result<Self> {
        let ptr = if size == 0 {
            0
        } else {
            resource.allocate_raw(size, stream)?
        };
        // SAFETY: `ptr` came from `resource` with `size` bytes (or is 0 for 0 bytes) and is
        // owned by nobody else yet; nothing uses it.
        Ok(unsafe { Self::from_raw_parts(ptr, size, resource, stream) })
    }

    /// Allocates room for `len` values of `T` from `resource`, ordered on `stream` (the
    /// contents are whatever the memory held).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `len * size_of::<T>()` overflows `usize`; then as
    /// [`allocate_in`](Self::allocate_in).
    #[inline]
    pub fn allocate_array_in<T: Pod, R: MemoryResource + 'static>(
        resource: Arc<R>,
        len: usize,
        stream: &Stream,
    ) -> Result<Self> {
        let bytes = array_bytes::<T>(len)?;
        Self::allocate_in(resource, bytes, stream)
    }

    /// Wraps an allocation made by `resource`, which will free it.
    ///
    /// # Safety
    ///
    /// `ptr` must come from `resource.allocate_raw(size, ..)` (or be 0 with `size == 0`), be
    /// owned by nobody else, and any work already using it must be ordered before the end of
    /// `stream`.
    pub unsafe fn from_raw_parts(
        ptr: CUdeviceptr,
        size: usize,
        resource: Arc<dyn MemoryResource>,
        stream: &Stream,
    ) -> Self {
        Self {
            inner: Owned::new(Allocation {
                ptr,
                size,
                host_accessible: resource.is_host_accessible(),
                host_needs_idle_device: resource.host_access_needs_idle_device(),
                placement: Placement {
                    home: if resource.is_host_accessible() {
                        None
                    } else {
                        resource.device()
                    },
                    needs_context: resource.copies_need_current_context(),
                    device_accessible: resource.is_device_accessible(),
                },
                resource,
                stream: stream.clone(),
            }),
        }
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.inner.size
    }

    /// Whether the buffer holds no byte.
    pub fn is_empty(&self) -> bool {
        self.inner.size == 0
    }

    /// The address (a device address; for host-accessible memory also the host address).
    #[inline]
    pub fn as_raw(&self) -> CUdeviceptr {
        self.inner.ptr
    }

    /// The stream the buffer's operations and its free are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Moves the buffer to another stream: work queued there from now on (and the buffer's
    /// free) comes after everything queued on the old stream so far. The new stream waits on
    /// an event of the old one only while the old one still has work to run; once that has
    /// finished, nothing is queued (`cuStreamQuery` tells, made in relaxed capture mode so that
    /// a capture on another stream does not refuse it; a captured old stream is always waited
    /// on, which joins the new stream to its capture).
    ///
    #[doc = cuda_sys::api_doc!(cuStreamWaitEvent)]
    /// # Errors
    ///
    /// The driver's error from the query or the wait; the buffer then stays on its stream.
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        if !self.inner.stream.same_as(stream) {
            ordering::hand_over(stream, &self.inner.stream)?;
            self.inner.stream = stream.clone();
        }
        Ok(())
    }

    /// The resource that allocated the buffer.
    pub fn memory_resource(&self) -> &Arc<dyn MemoryResource> {
        &self.inner.resource
    }

    /// Whether the host can read and write the memory (pinned and managed memory).
    pub fn is_host_accessible(&self) -> bool {
        self.inner.host_accessible
    }

    /// Whether kernels can read and write the memory.
    pub fn is_device_accessible(&self) -> bool {
        self.inner.resource.is_device_accessible()
    }

    /// A typed view of the whole buffer; its size must be a whole number of `T`s.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the size is not a whole number of `T`s, the address is
    /// not aligned for `T`, or `T` is zero-sized.
    pub fn as_slice<T: Pod>(&self) -> Result<DeviceSlice<'_, T>> {
        let len = element_count::<T>(self.inner.ptr, self.inner.size)?;
        Ok(DeviceSlice::from_parts(
            self.inner.ptr,
            len,
            &self.inner.stream,
            self.inner.placement,
        ))
    }

    /// An exclusive typed view of the whole buffer; its size must be a whole number of `T`s.
    ///
    /// # Errors
    ///
    /// As [`as_slice`](Self::as_slice).
    pub fn as_mut_slice<T: Pod>(&mut self) -> Result<DeviceSliceMut<'_, T>> {
        let len = element_count::<T>(self.inner.ptr, self.inner.size)?;
        Ok(DeviceSliceMut::from_parts(
            self.inner.ptr,
            len,
            &self.inner.stream,
            self.inner.placement,
        ))
    }

    /// Copies `src`, which must be exactly the buffer's size, into the buffer and waits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `src` holds another number of bytes, or as
    /// [`as_slice`](Self::as_slice); the driver's error from the copy.
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T]) -> Result<()> {
        self.as_mut_slice::<T>()?.copy_from_host(src)
    }

    /// Copies the buffer into `dst`, which must be exactly the buffer's size, and waits.
    ///
    /// # Errors
    ///
    /// As [`copy_from_host`](Self::copy_from_host).
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T]) -> Result<()> {
        self.as_slice::<T>()?.copy_to_host(dst)
    }

    /// The buffer's contents as a vector of `T`.
    ///
    /// # Errors
    ///
    /// As [`as_slice`](Self::as_slice); the driver's error from the copy.
    pub fn to_vec<T: Pod>(&self) -> Result<Vec<T>> {
        self.as_slice::<T>()?.to_vec()
    }

    /// Queues a copy of `src`, which must be the same size, into this buffer, ordered after the
    /// work queued on `src`'s stream (a pinned `src` makes this a truly asynchronous upload).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the sizes differ; the driver's error.
    pub fn copy_from(&mut self, src: &Buffer) -> Result<()> {
        self.as_mut_slice::<u8>()?.copy_from(&src.as_slice::<u8>()?)
    }

    /// Queues setting every element to `value`: the buffer's size must be a whole number of
    /// `T`s. One memset when `value`'s bytes repeat every 1, 2 or 4 bytes (every integer and
    /// float of up to 32 bits, zero of any type), else one 2-D memset per 4-byte column of `T`
    /// (two for an `f64`).
    ///
    /// # Errors
    ///
    /// As [`as_slice`](Self::as_slice); the driver's error.
    #[doc(
        alias = "cuMemsetD8Async",
        alias = "cuMemsetD16Async",
        alias = "cuMemsetD32Async"
    )]
    pub fn fill<T: Pod>(&mut self, value: T) -> Result<()> {
        self.as_mut_slice::<T>()?.fill(value)
    }

    /// Sets every byte to `value`.
    ///
    /// # Errors
    ///
    /// As [`fill`](Self::fill).
    #[deprecated(since = "0.2.0", note = "use `Buffer::fill(value)`")]
    pub fn fill_u8(&mut self, value: u8) -> Result<()> {
        self.fill(value)
    }

    /// Sets every 2-byte word to `value`.
    ///
    /// # Errors
    ///
    /// As [`fill`](Self::fill).
    #[deprecated(since = "0.2.0", note = "use `Buffer::fill(value)`")]
    pub fn fill_u16(&mut self, value: u16) -> Result<()> {
        self.fill(value)
    }

    /// Sets every 4-byte word to `value`.
    ///
    /// # Errors
    ///
    /// As [`fill`](Self::fill).
    #[deprecated(since = "0.2.0", note = "use `Buffer::fill(value)`")]
    pub fn fill_u32(&mut self, value: u32) -> Result<()> {
        self.fill(value)
    }

    /// The memory as a host slice, after waiting for the buffer's stream; only for
    /// host-accessible (pinned or managed) memory.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for device memory, or as [`as_slice`](Self::as_slice); the
    /// driver's error from the wait.
    pub fn as_host_slice<T: Pod>(&self) -> Result<&[T]> {
        let len = self.host_view::<T>()?;
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: host-accessible memory of `len` aligned `T`s (checked), owned by this buffer,
        // with no queued work left on its stream; `&self` prevents safe writes meanwhile.
        Ok(unsafe { std::slice::from_raw_parts(self.inner.ptr as *const T, len) })
    }

    /// The memory as a mutable host slice, after waiting for the buffer's stream; only for
    /// host-accessible (pinned or managed) memory.
    ///
    /// # Errors
    ///
    /// As [`as_host_slice`](Self::as_host_slice).
    pub fn as_host_mut_slice<T: Pod>(&mut self) -> Result<&mut [T]> {
        let len = self.host_view::<T>()?;
        if len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in `as_host_slice`, and `&mut self` makes the view exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.inner.ptr as *mut T, len) })
    }

    /// Checks host access and waits for the stream; returns the element count.
    fn host_view<T: Pod>(&self) -> Result<usize> {
        if !self.inner.host_accessible {
            return Err(Error::invalid_argument(
                "device memory cannot be viewed from the host; copy it or use pinned memory",
            ));
        }
        let len = element_count::<T>(self.inner.ptr, self.inner.size)?;
        if self.inner.host_needs_idle_device {
            self.inner.stream.context().sync()?;
        } else {
            self.inner.stream.drain()?;
        }
        Ok(len)
    }

    /// Frees the buffer now (in order on its stream), returning the driver's error.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

/// The bytes of `len` values of `T`, or an error when they overflow.
pub(crate) fn array_bytes<T>(len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>()).ok_or_else(|| {
        Error::invalid_argument(format!(
            "{len} values of {} bytes overflow the address space",
            size_of::<T>()
        ))
    })
}

impl Release for Allocation {
    const WHAT: &'static str = "buffer";

    #[inline]
    fn release(&mut self) -> Result<()> {
        if self.size == 0 {
            return Ok(());
        }
        // SAFETY: the allocation came from this resource with this size and is freed once (by
        // `Owned`); every safe operation on it was queued on `self.stream`.
        unsafe {
            self.resource
                .deallocate_raw(self.ptr, self.size, &self.stream)
        }
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("ptr", &format_args!("{:#x}", self.inner.ptr))
            .field("size", &self.inner.size)
            .field("host_accessible", &self.inner.host_accessible)
            .field("resource", &self.inner.resource)
            .finish()
    }
}

assert_send_sync!(Buffer);
