//! The interface every memory resource implements.

use std::fmt;

use crate::sys::CUdeviceptr;
use crate::{Device, Result, Stream};

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
/// - the answers of the `is_*` and `host_access_needs_idle_device` methods never change.
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
}
