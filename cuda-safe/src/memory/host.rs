//! Memory the host can touch: page-locked (pinned) host memory and managed (unified) memory.
//!
//! Neither is stream-ordered, so a buffer of either kind waits for its stream to drain before
//! it is freed.

use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use super::buffer::Buffer;
use super::resource::{MemoryResource, forward_memory_resource, typed_allocations};
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release, assert_send_sync};
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

    /// Allocates a [`PinnedBlock`] of `size` bytes (more than 0), set to zero: pinned memory
    /// ordered on no stream, for staging whose copies the caller orders itself (a pool of
    /// reusable blocks). It is freed when dropped, without waiting for any stream.
    ///
    #[doc = cuda_sys::api_doc!(cuMemHostAlloc)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a size of 0; the driver's error when memory runs out
    /// ([`Error::is_out_of_memory`]).
    #[doc(alias = "cuMemHostAlloc")]
    pub fn allocate_block(&self, size: usize) -> Result<PinnedBlock> {
        if size == 0 {
            return Err(Error::invalid_argument(
                "a pinned block holds at least one byte",
            ));
        }
        let ptr = NonNull::new(self.inner.allocate_pinned(size)?.cast::<u8>())
            .ok_or_else(|| Error::unexpected("cuMemHostAlloc", "a null block"))?;
        let block = PinnedBlock {
            inner: Owned::new(BlockHandle {
                ptr,
                len: size,
                memory: Arc::clone(&self.inner),
            }),
        };
        // SAFETY: `size` bytes of host memory at `ptr`, owned by the block alone: zeroed once,
        // so that its bytes are always initialized.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, size) };
        Ok(block)
    }
}

/// Pinned host memory of its own, ordered on no stream
/// ([`PinnedMemoryResource::allocate_block`]): zeroed when made, freed (`cuMemFreeHost`) when
/// dropped or closed, without waiting for anything. Whoever queues GPU work on it (an `unsafe`
/// copy or launch) keeps it until that work is done.
pub struct PinnedBlock {
    inner: Owned<BlockHandle>,
}

impl fmt::Debug for PinnedBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBlock")
            .field("len", &self.inner.len)
            .field("device", &self.inner.memory.context.device().ordinal())
            .finish()
    }
}

/// What a [`PinnedBlock`] owns: the allocation, and the resource (its context) it came from.
struct BlockHandle {
    ptr: NonNull<u8>,
    len: usize,
    memory: Arc<HostMemory>,
}

impl Release for BlockHandle {
    const WHAT: &'static str = "pinned block";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the block came from `allocate_pinned` of this resource and is freed once (by
        // `Owned`); its holder keeps no GPU work on it by now.
        unsafe { self.memory.free(self.ptr.as_ptr() as CUdeviceptr) }
    }
}

// SAFETY: the block is plain host memory owned by whoever holds it; it only gives out its
// address, and touching the memory through it is the holder's `unsafe` business.
unsafe impl Send for BlockHandle {}
// SAFETY: as above.
unsafe impl Sync for BlockHandle {}

impl PinnedBlock {
    /// Its size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Whether it holds no byte (never: a block holds at least one).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// The address of its first byte (page-aligned), for the host and for the copies the
    /// holder queues (through unified addressing).
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.inner.ptr.as_ptr()
    }

    /// Frees it now, returning the driver's error (dropping does the same and only logs).
    #[doc = cuda_sys::api_doc!(cuMemFreeHost)]
    #[doc(alias = "cuMemFreeHost")]
    pub fn close(self) -> Result<()> {
        self.inner.close()
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

    /// `size` bytes of portable pinned memory, in this resource's context.
    fn allocate_pinned(&self, size: usize) -> Result<*mut c_void> {
        let _current = self.context.scoped()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the context is current.
        unsafe {
            cu!(
                self.driver,
                cuMemHostAlloc(&mut ptr, size, CU_MEMHOSTALLOC_PORTABLE)
            )
        }?;
        Ok(ptr)
    }

    /// Frees an allocation of this resource, in its context.
    ///
    /// # Safety
    ///
    /// `ptr` came from this resource, is not freed already, and no work uses it any more.
    unsafe fn free(&self, ptr: CUdeviceptr) -> Result<()> {
        let _current = self.context.scoped()?;
        match self.kind {
            // SAFETY: the caller's promise: `ptr` came from cuMemHostAlloc.
            HostKind::Pinned => unsafe { cu!(self.driver, cuMemFreeHost(ptr as *mut c_void)) },
            // SAFETY: the caller's promise: `ptr` came from cuMemAllocManaged.
            HostKind::Managed => unsafe { cu!(self.driver, cuMemFree_v2(ptr)) },
        }
    }
}

// SAFETY: allocations come from `cuMemHostAlloc` / `cuMemAllocManaged` with the size asked,
// both host-accessible through the returned address (unified addressing), and are freed once
// after their stream drained; managed memory on a device without concurrent managed access
// says so through `host_access_needs_idle_device`.
unsafe impl MemoryResource for HostMemory {
    fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<CUdeviceptr> {
        match self.kind {
            HostKind::Pinned => self.allocate_pinned(size).map(|ptr| ptr as CUdeviceptr),
            HostKind::Managed => {
                let _current = self.context.scoped()?;
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
        // SAFETY: `ptr` came from `allocate_raw` and its stream has drained.
        unsafe { self.free(ptr) }
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

assert_send_sync!(PinnedMemoryResource, ManagedMemoryResource, PinnedBlock);
