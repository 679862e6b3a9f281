//! The interface every memory resource implements.

use std::fmt;

use crate::sys::CUdeviceptr;
use crate::{Device, Result, Stream};

/// Something that allocates memory the GPU (or the host, or both) can reach.
///
/// Implement it to plug a custom allocator into [`Buffer`](crate::Buffer): wrap the resource in
/// an `Arc` and hand raw allocations to
/// [`Buffer::from_raw_parts`](crate::Buffer::from_raw_parts).
pub trait MemoryResource: Send + Sync + fmt::Debug {
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
}
