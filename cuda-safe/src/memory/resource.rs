//! The interface every memory resource implements.

use std::fmt;

use crate::device::Device;
use crate::error::Result;
use crate::handle::{Owned, Release};
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

/// Something that allocates memory the GPU (or the host, or both) can reach.
///
/// Implement it to plug a custom allocator into [`Buffer`](crate::Buffer): wrap the resource in
/// an `Arc` and allocate with [`Buffer::allocate_in`](crate::Buffer::allocate_in).
///
/// # Safety
///
/// [`Buffer`](crate::Buffer) trusts an implementation for raw memory access, so it must
/// guarantee that:
/// - a successful [`allocate_raw`](Self::allocate_raw) returns an allocation of at least `size`
///   bytes, owned by nobody else and valid until [`deallocate_raw`](Self::deallocate_raw);
/// - when [`is_host_accessible`](Self::is_host_accessible) is true, the whole allocation can be
///   read and written by the host through the returned address (once the GPU work queued on
///   it is done, and, when [`host_access_needs_idle_device`](Self::host_access_needs_idle_device)
///   is true, once the whole device is idle);
/// - the answers of the `is_*`, `host_access_needs_idle_device` and
///   `copies_need_current_context` methods never change.
pub unsafe trait MemoryResource: Send + Sync + fmt::Debug {
    /// Allocates `size` bytes (more than 0), ordered on `stream` where the resource supports
    /// stream-ordered allocation. Returns the address, which is valid on the device (and on the
    /// host for host-accessible resources).
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<CUdeviceptr>;

    /// Frees an allocation, ordered on `stream` where the resource supports it.
    ///
    /// # Safety
    ///
    /// `ptr` must come from [`allocate_raw`](Self::allocate_raw) of this resource with this
    /// `size`, must not be freed already, and no work may use it after `stream`'s current end.
    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, size: usize, stream: &Stream) -> Result<()>;

    /// Whether kernels can read and write the memory.
    fn is_device_accessible(&self) -> bool;

    /// Whether the host can read and write the memory.
    fn is_host_accessible(&self) -> bool;

    /// The device the memory belongs to, for device memory.
    fn device(&self) -> Option<Device>;

    /// Whether the host may touch the memory only while no kernel runs on the device (managed
    /// memory on devices without concurrent managed access); host views then wait for the
    /// whole context rather than the buffer's stream.
    fn host_access_needs_idle_device(&self) -> bool {
        false
    }

    /// Whether copies to and from the memory need its device's context current on the calling
    /// thread: virtual memory mappings, for which `cuMemcpyAsync` with a host side answers
    /// `CUDA_ERROR_INVALID_VALUE` where no context is current. Views of such memory make the
    /// stream's context current around their copies and fills; others make no extra call.
    fn copies_need_current_context(&self) -> bool {
        false
    }

    /// Whether the memory is managed (`cuMemAllocManaged`): migrated between host and devices
    /// on demand, so prefetches and advice apply to it.
    fn is_managed(&self) -> bool {
        false
    }
}

/// Implements [`MemoryResource`] for a handle by forwarding to its shared inner resource.
macro_rules! forward_memory_resource {
    ($($handle:ty),*) => {$(
        // SAFETY: every method forwards to the inner resource, which upholds the contract.
        unsafe impl MemoryResource for $handle {
            #[inline]
            fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<CUdeviceptr> {
                self.inner.allocate_raw(size, stream)
            }

            #[inline]
            unsafe fn deallocate_raw(
                &self,
                ptr: CUdeviceptr,
                size: usize,
                stream: &Stream,
            ) -> Result<()> {
                // SAFETY: forwarded contract.
                unsafe { self.inner.deallocate_raw(ptr, size, stream) }
            }

            fn is_device_accessible(&self) -> bool {
                self.inner.is_device_accessible()
            }

            fn is_host_accessible(&self) -> bool {
                self.inner.is_host_accessible()
            }

            fn device(&self) -> Option<Device> {
                self.inner.device()
            }

            fn host_access_needs_idle_device(&self) -> bool {
                self.inner.host_access_needs_idle_device()
            }

            fn copies_need_current_context(&self) -> bool {
                self.inner.copies_need_current_context()
            }

            fn is_managed(&self) -> bool {
                self.inner.is_managed()
            }
        }
    )*};
}

/// The allocation methods of a resource handle whose `inner` is an `Arc` of a
/// [`MemoryResource`]: bytes, arrays of `T`, zero-filled arrays and copies of host slices.
macro_rules! typed_allocations {
    ($handle:ty, $call:ident $api:literal) => {
        impl $handle {
            /// Allocates `size` bytes, ordered on `stream`; a zero-size buffer allocates
            /// nothing. The contents are whatever the memory held.
            ///
            /// # Errors
            ///
            /// The driver's when memory runs out
            /// ([`Error::is_out_of_memory`](crate::Error::is_out_of_memory));
            /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) from a device pool
            /// for a stream of another device.
            #[doc = cuda_sys::api_doc!($call)]
            #[doc(alias = $api)]
            #[inline]
            pub fn allocate(&self, size: usize, stream: &Stream) -> Result<Buffer> {
                Buffer::allocate_in(self.inner.clone(), size, stream)
            }

            /// Allocates room for `len` values of `T`, ordered on `stream` (the contents are
            /// whatever the memory held).
            ///
            /// # Errors
            ///
            /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when
            /// `len * size_of::<T>()` overflows `usize`; then as `allocate`.
            #[inline]
            pub fn allocate_array<T: bytemuck::Pod>(
                &self,
                len: usize,
                stream: &Stream,
            ) -> Result<Buffer> {
                Buffer::allocate_array_in::<T, _>(self.inner.clone(), len, stream)
            }

            /// Allocates `len` values of `T` set to zero (one memset queued on `stream`).
            ///
            /// # Errors
            ///
            /// As `allocate_array`.
            pub fn allocate_zeroed<T: bytemuck::Pod>(
                &self,
                len: usize,
                stream: &Stream,
            ) -> Result<Buffer> {
                let mut buffer = self.allocate_array::<T>(len, stream)?;
                buffer.fill(0u8)?;
                Ok(buffer)
            }

            /// Allocates a copy of `values` (copied now; returns once the copy is done).
            ///
            /// # Errors
            ///
            /// As `allocate_array`; the driver's error from the copy.
            pub fn allocate_from_host<T: bytemuck::Pod>(
                &self,
                values: &[T],
                stream: &Stream,
            ) -> Result<Buffer> {
                let mut buffer = self.allocate_array::<T>(values.len(), stream)?;
                buffer.copy_from_host(values)?;
                Ok(buffer)
            }
        }
    };
}

pub(crate) use {forward_memory_resource, typed_allocations};

// SAFETY: forwards to the owned resource, which upholds the contract; `Owned` only adds the
// release of the resource's own handle when the last buffer and handle are gone.
unsafe impl<T: MemoryResource + Release> MemoryResource for Owned<T> {
    #[inline]
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<CUdeviceptr> {
        (**self).allocate_raw(size, stream)
    }

    #[inline]
    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, size: usize, stream: &Stream) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { (**self).deallocate_raw(ptr, size, stream) }
    }

    fn is_device_accessible(&self) -> bool {
        (**self).is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        (**self).is_host_accessible()
    }

    fn device(&self) -> Option<Device> {
        (**self).device()
    }

    fn host_access_needs_idle_device(&self) -> bool {
        (**self).host_access_needs_idle_device()
    }

    fn copies_need_current_context(&self) -> bool {
        (**self).copies_need_current_context()
    }

    fn is_managed(&self) -> bool {
        (**self).is_managed()
    }
}
