//! Memory the host can touch: page-locked (pinned) host memory and managed (unified) memory.
//!
//! Neither is stream-ordered, so a buffer of either kind waits for its stream to drain before
//! it is freed.

use std::fmt;
use std::sync::Arc;

use super::buffer::Buffer;
use super::resource::{MemoryResource, forward_memory_resource, typed_allocations};
use crate::context::Context;
use crate::device::Device;
use crate::error::{Result, cu};
use crate::handle::assert_send_sync;
use crate::stream::Stream;
use cuda_sys::{CU_MEMHOSTALLOC_PORTABLE, CUdeviceptr, CUmemAttach_flags, Driver};

/// Page-locked host memory (`cuMemHostAlloc`): fast, truly asynchronous transfers, readable
/// from kernels through unified addressing. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct PinnedMemoryResource {
    inner: Arc<HostMemory>,
}

/// Managed memory (`cuMemAllocManaged`), migrated between host and device on demand.
/// Cloning is cheap. Never ask for more than the device's free memory.
#[derive(Clone, Debug)]
pub struct ManagedMemoryResource {
    inner: Arc<HostMemory>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostKind {
    Pinned,
    Managed,
}

struct HostMemory {
    kind: HostKind,
    context: Context,
    driver: &'static Driver,
    /// Managed memory on a device without concurrent managed access: the host may touch it
    /// only while the device is idle.
    needs_idle_device: bool,
}

impl PinnedMemoryResource {
    /// A resource allocating pinned memory in `device`'s primary context (usable from every
    /// context: the allocations are portable).
    pub fn new(device: &Device) -> Result<Self> {
        Ok(Self {
            inner: HostMemory::new(HostKind::Pinned, device)?,
        })
    }
}

impl ManagedMemoryResource {
    /// A resource allocating managed memory attached globally, in `device`'s primary context.
    pub fn new(device: &Device) -> Result<Self> {
        Ok(Self {
            inner: HostMemory::new(HostKind::Managed, device)?,
        })
    }
}

forward_memory_resource!(PinnedMemoryResource, ManagedMemoryResource);
typed_allocations!(PinnedMemoryResource, cuMemHostAlloc "cuMemHostAlloc");
typed_allocations!(ManagedMemoryResource, cuMemAllocManaged "cuMemAllocManaged");

impl HostMemory {
    fn new(kind: HostKind, device: &Device) -> Result<Arc<Self>> {
        let context = device.context()?;
        let needs_idle_device = kind == HostKind::Managed
            && device.attribute(
                cuda_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
            )? == 0;
        Ok(Arc::new(Self {
            kind,
            driver: context.driver(),
            context,
            needs_idle_device,
        }))
    }
}

// SAFETY: allocations come from `cuMemHostAlloc` / `cuMemAllocManaged` with the size asked,
// both host-accessible through the returned address (unified addressing), and are freed once
// after their stream drained; managed memory on a device without concurrent managed access
// says so through `host_access_needs_idle_device`.
unsafe impl MemoryResource for HostMemory {
    fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<CUdeviceptr> {
        let _current = self.context.scoped()?;
        match self.kind {
            HostKind::Pinned => {
                let mut ptr = std::ptr::null_mut();
                // SAFETY: valid out-pointer; the context is current.
                unsafe {
                    cu!(
                        self.driver,
                        cuMemHostAlloc(&mut ptr, size, CU_MEMHOSTALLOC_PORTABLE)
                    )
                }?;
                Ok(ptr as CUdeviceptr)
            }
            HostKind::Managed => {
                let mut ptr: CUdeviceptr = 0;
                // SAFETY: valid out-pointer; the context is current.
                unsafe {
                    cu!(
                        self.driver,
                        cuMemAllocManaged(
                            &mut ptr,
                            size,
                            CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL.0,
                        )
                    )
                }?;
                Ok(ptr)
            }
        }
    }

    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, _size: usize, stream: &Stream) -> Result<()> {
        // Not stream-ordered: wait until nothing queued on the buffer's stream can touch it.
        stream.drain()?;
        let _current = self.context.scoped()?;
        match self.kind {
            // SAFETY: `ptr` came from cuMemHostAlloc and its stream has drained.
            HostKind::Pinned => unsafe {
                cu!(self.driver, cuMemFreeHost(ptr as *mut std::ffi::c_void))
            },
            // SAFETY: `ptr` came from cuMemAllocManaged and its stream has drained.
            HostKind::Managed => unsafe { cu!(self.driver, cuMemFree_v2(ptr)) },
        }
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn device(&self) -> Option<Device> {
        match self.kind {
            HostKind::Pinned => None,
            HostKind::Managed => Some(*self.context.device()),
        }
    }

    fn host_access_needs_idle_device(&self) -> bool {
        self.needs_idle_device
    }

    fn is_managed(&self) -> bool {
        self.kind == HostKind::Managed
    }
}

impl fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostMemory")
            .field("kind", &self.kind)
            .field("device", &self.context.device().ordinal())
            .finish()
    }
}

assert_send_sync!(PinnedMemoryResource, ManagedMemoryResource);
