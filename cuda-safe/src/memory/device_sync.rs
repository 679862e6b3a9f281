//! Device memory allocated and freed synchronously (`cuMemAlloc` / `cuMemFree`), for devices
//! without stream-ordered pools and for code that wants plain `cuMemAlloc` memory.

use std::fmt;
use std::sync::Arc;

use super::buffer::Buffer;
use super::resource::{MemoryResource, forward_memory_resource, typed_allocations};
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::handle::assert_send_sync;
use crate::stream::Stream;
use cuda_sys::{CUdeviceptr, Driver};

/// Device memory from `cuMemAlloc`, freed with `cuMemFree` once the buffer's stream has
/// drained. Cloning is cheap.
///
/// Use it where [`DeviceMemoryResource`](crate::DeviceMemoryResource) cannot serve: a device
/// whose [`memory_pools_supported`](crate::DeviceProperties::memory_pools_supported) is false
/// (some virtualised and older configurations), or code that must allocate as a C program
/// calling `cuMemAlloc` does. Each allocation and each free is a driver call that may
/// synchronize the device, so keep such buffers out of hot loops; a pool reuses memory without
/// either.
///
/// ```no_run
/// use cuda_safe::{Device, SyncDeviceMemoryResource};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(Default::default())?;
/// let memory = SyncDeviceMemoryResource::new(&device)?;
/// let mut x = memory.allocate_zeroed::<f32>(1 << 20, &stream)?;
/// x.fill(1.5f32)?;
/// assert_eq!(x.to_vec::<f32>()?[0], 1.5);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SyncDeviceMemoryResource {
    inner: Arc<SyncDeviceMemory>,
}

struct SyncDeviceMemory {
    /// The device's primary context: current around each call, and kept alive (with the
    /// memory) while any buffer lives.
    context: Context,
    driver: &'static Driver,
}

impl SyncDeviceMemoryResource {
    /// A resource allocating device memory of `device`, in its primary context (green
    /// contexts of the device share that memory).
    pub fn new(device: &Device) -> Result<Self> {
        let context = device.context()?;
        Ok(Self {
            inner: Arc::new(SyncDeviceMemory {
                driver: context.driver(),
                context,
            }),
        })
    }

    /// The device whose memory this resource allocates.
    pub fn device(&self) -> &Device {
        self.inner.context.device()
    }
}

forward_memory_resource!(SyncDeviceMemoryResource);
typed_allocations!(SyncDeviceMemoryResource, cuMemAlloc_v2 "cuMemAlloc_v2");

// SAFETY: allocations come from `cuMemAlloc` with the size asked, owned by the buffer, and are
// freed once by `cuMemFree` after their stream drained; device memory is never
// host-accessible.
unsafe impl MemoryResource for SyncDeviceMemory {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<CUdeviceptr> {
        let device = self.context.device();
        if stream.device() != device {
            return Err(Error::invalid_argument(format!(
                "the stream belongs to device {}, the memory to device {}",
                stream.device().ordinal(),
                device.ordinal()
            )));
        }
        let _current = self.context.scoped()?;
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer; the device's primary context is current.
        unsafe { cu!(self.driver, cuMemAlloc_v2(&mut ptr, size)) }?;
        Ok(ptr)
    }

    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, _size: usize, stream: &Stream) -> Result<()> {
        // Not stream-ordered: wait until nothing queued on the buffer's stream can touch it.
        stream.drain()?;
        let _current = self.context.scoped()?;
        // SAFETY: `ptr` came from cuMemAlloc in this context, is freed once, and its stream
        // has drained.
        unsafe { cu!(self.driver, cuMemFree_v2(ptr)) }
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }

    fn device(&self) -> Option<Device> {
        Some(*self.context.device())
    }
}

impl fmt::Debug for SyncDeviceMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncDeviceMemory")
            .field("device", &self.context.device().ordinal())
            .finish()
    }
}

assert_send_sync!(SyncDeviceMemoryResource);
