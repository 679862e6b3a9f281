//! `Buffer`: one allocation from a memory resource, freed in order on its stream.

use std::fmt;
use std::sync::Arc;

use bytemuck::Pod;

use super::slice::element_count;
use crate::error::check;
use crate::sys::CUdeviceptr;
use crate::{DeviceSlice, DeviceSliceMut, Error, MemoryResource, Result, Stream};

/// One allocation: its address, its size in bytes, the resource that frees it and the stream
/// its operations (and its free) are ordered on.
///
/// Dropping a buffer frees it on its stream; [`close`](Self::close) does the same and returns
/// the driver's error. A zero-size buffer allocates nothing and every operation on it is a
/// no-op.
pub struct Buffer {
    ptr: CUdeviceptr,
    size: usize,
    host_accessible: bool,
    host_needs_idle_device: bool,
    resource: Arc<dyn MemoryResource>,
    stream: Stream,
}

impl Buffer {
    /// Allocates `size` bytes from `resource`, ordered on `stream`.
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
        Ok(Self {
            ptr,
            size,
            host_accessible: resource.is_host_accessible(),
            host_needs_idle_device: resource.host_access_needs_idle_device(),
            resource,
            stream: stream.clone(),
        })
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
            ptr,
            size,
            host_accessible: resource.is_host_accessible(),
            host_needs_idle_device: resource.host_access_needs_idle_device(),
            resource,
            stream: stream.clone(),
        }
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.size
    }

    /// Whether the buffer holds no byte.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The address (a device address; for host-accessible memory also the host address).
    #[inline]
    pub fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The stream the buffer's operations and its free are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Moves the buffer to another stream: work queued there from now on (and the buffer's
    /// free) comes after everything queued on the old stream so far.
    pub fn set_stream(&mut self, stream: &Stream) -> Result<()> {
        if !self.stream.same_as(stream) {
            stream.wait_stream(&self.stream)?;
            self.stream = stream.clone();
        }
        Ok(())
    }

    /// The resource that allocated the buffer.
    pub fn memory_resource(&self) -> &Arc<dyn MemoryResource> {
        &self.resource
    }

    /// Whether the host can read and write the memory (pinned and managed memory).
    pub fn is_host_accessible(&self) -> bool {
        self.host_accessible
    }

    /// Whether kernels can read and write the memory.
    pub fn is_device_accessible(&self) -> bool {
        self.resource.is_device_accessible()
    }

    /// A typed view of the whole buffer; its size must be a whole number of `T`s.
    pub fn as_slice<T: Pod>(&self) -> Result<DeviceSlice<'_, T>> {
        let len = element_count::<T>(self.ptr, self.size)?;
        Ok(DeviceSlice::from_parts(self.ptr, len, &self.stream))
    }

    /// An exclusive typed view of the whole buffer; its size must be a whole number of `T`s.
    pub fn as_mut_slice<T: Pod>(&mut self) -> Result<DeviceSliceMut<'_, T>> {
        let len = element_count::<T>(self.ptr, self.size)?;
        Ok(DeviceSliceMut::from_parts(self.ptr, len, &self.stream))
    }

    /// Copies `src`, which must be exactly the buffer's size, into the buffer and waits.
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T]) -> Result<()> {
        self.as_mut_slice::<T>()?.copy_from_host(src)
    }

    /// Copies the buffer into `dst`, which must be exactly the buffer's size, and waits.
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T]) -> Result<()> {
        self.as_slice::<T>()?.copy_to_host(dst)
    }

    /// The buffer's contents as a vector of `T`.
    pub fn to_vec<T: Pod>(&self) -> Result<Vec<T>> {
        self.as_slice::<T>()?.to_vec()
    }

    /// Queues a copy of `src`, which must be the same size, into this buffer, ordered after the
    /// work queued on `src`'s stream (a pinned `src` makes this a truly asynchronous upload).
    pub fn copy_from(&mut self, src: &Buffer) -> Result<()> {
        self.as_mut_slice::<u8>()?.copy_from(&src.as_slice::<u8>()?)
    }

    /// Queues setting every byte to `value`.
    #[doc(alias = "cuMemsetD8Async")]
    pub fn fill_u8(&mut self, value: u8) -> Result<()> {
        self.fill::<u8>("cuMemsetD8Async", |driver, ptr, count, stream| {
            // SAFETY: `count` bytes fit the buffer's own allocation.
            unsafe { driver.cuMemsetD8Async(ptr, value, count, stream) }
        })
    }

    /// Queues setting every 16-bit word to `value`; the size must be a multiple of 2.
    #[doc(alias = "cuMemsetD16Async")]
    pub fn fill_u16(&mut self, value: u16) -> Result<()> {
        self.fill::<u16>("cuMemsetD16Async", |driver, ptr, count, stream| {
            // SAFETY: `count` words fit the buffer's own allocation.
            unsafe { driver.cuMemsetD16Async(ptr, value, count, stream) }
        })
    }

    /// Queues setting every 32-bit word to `value` (the bits of an `f32` fill with a float);
    /// the size must be a multiple of 4.
    #[doc(alias = "cuMemsetD32Async")]
    pub fn fill_u32(&mut self, value: u32) -> Result<()> {
        self.fill::<u32>("cuMemsetD32Async", |driver, ptr, count, stream| {
            // SAFETY: `count` words fit the buffer's own allocation.
            unsafe { driver.cuMemsetD32Async(ptr, value, count, stream) }
        })
    }

    /// Queues one `cuMemsetD*Async` over the whole buffer as words of `W`; nothing for an
    /// empty buffer.
    fn fill<W>(
        &mut self,
        api: &'static str,
        memset: impl FnOnce(
            &'static crate::sys::Driver,
            CUdeviceptr,
            usize,
            crate::sys::CUstream,
        ) -> std::result::Result<crate::sys::CUresult, crate::sys::LoadError>,
    ) -> Result<()> {
        let count = element_count::<W>(self.ptr, self.size)?;
        if count == 0 {
            return Ok(());
        }
        check(
            api,
            memset(self.stream.driver(), self.ptr, count, self.stream.as_raw()),
        )
    }

    /// The memory as a host slice, after waiting for the buffer's stream; only for
    /// host-accessible (pinned or managed) memory.
    pub fn as_host_slice<T: Pod>(&self) -> Result<&[T]> {
        let len = self.host_view::<T>()?;
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: host-accessible memory of `len` aligned `T`s (checked), owned by this buffer,
        // with no queued work left on its stream; `&self` prevents safe writes meanwhile.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as *const T, len) })
    }

    /// The memory as a mutable host slice, after waiting for the buffer's stream; only for
    /// host-accessible (pinned or managed) memory.
    pub fn as_host_mut_slice<T: Pod>(&mut self) -> Result<&mut [T]> {
        let len = self.host_view::<T>()?;
        if len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in `as_host_slice`, and `&mut self` makes the view exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, len) })
    }

    /// Checks host access and waits for the stream; returns the element count.
    fn host_view<T: Pod>(&self) -> Result<usize> {
        if !self.host_accessible {
            return Err(Error::invalid_argument(
                "device memory cannot be viewed from the host; copy it or use pinned memory",
            ));
        }
        let len = element_count::<T>(self.ptr, self.size)?;
        if self.host_needs_idle_device {
            self.stream.context().sync()?;
        } else {
            self.stream.sync()?;
        }
        Ok(len)
    }

    /// Frees the buffer now (in order on its stream), returning the driver's error.
    pub fn close(mut self) -> Result<()> {
        let result = self.free();
        self.size = 0; // freed: the drop that follows has nothing left to free
        result
    }

    fn free(&self) -> Result<()> {
        if self.size == 0 {
            return Ok(());
        }
        // SAFETY: the allocation came from this resource with this size and is freed once;
        // every safe operation on it was queued on `self.stream`.
        unsafe {
            self.resource
                .deallocate_raw(self.ptr, self.size, &self.stream)
        }
    }
}

impl Drop for Buffer {
    #[inline]
    fn drop(&mut self) {
        if let Err(error) = self.free() {
            crate::log_drop_error("buffer", &error);
        }
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .field("host_accessible", &self.host_accessible)
            .field("resource", &self.resource)
            .finish()
    }
}

crate::assert_send_sync!(Buffer);
