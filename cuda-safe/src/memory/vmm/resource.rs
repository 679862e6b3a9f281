//! `VirtualMemoryResource`: device memory through the VMM calls, as buffers, raw mappings and
//! growable buffers.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::growable::GrowableBuffer;
use super::options::{
    VirtualMemoryResourceOptions, VmmAccess, VmmLocation, check_alignment, round_up,
};
use super::region::Region;
use crate::abi;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, assert_send_sync};
use crate::memory::IpcHandleType;
use crate::memory::{Buffer, MemoryResource, forward_memory_resource, typed_allocations};
use crate::stream::Stream;
use cuda_sys::{
    CUdevice_attribute, CUdeviceptr, CUmemAccessDesc, CUmemAllocationHandleType,
    CUmemAllocationProp, CUmemAllocationType, CUmemLocationType, Driver,
};

/// Device memory through the virtual memory management calls (`cuMemAddressReserve`,
/// `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`), modelled on `cuda.core`'s
/// `VirtualMemoryResource`. Cloning is cheap and shares the resource.
///
/// It hands out memory three ways:
/// - [`Buffer`]s ([`allocate`](Self::allocate), [`Buffer::allocate_in`]): each a reservation
///   with one physical chunk, rounded up to the granularity; freed after the buffer's stream
///   drains (unmapping is not stream-ordered);
/// - [`VirtualMapping`]s ([`map`](Self::map)): exactly the four driver calls of a hand-written
///   allocation, and the three of its release, for callers that order their own work;
/// - [`GrowableBuffer`]s ([`growable`](Self::growable)): a large reservation whose mapped
///   part grows in place, without copying.
///
/// Every allocation is readable and writable by the resource's device (`self_access`) and by
/// its `peers` (`peer_access`), set in one `cuMemSetAccess`.
#[derive(Clone)]
pub struct VirtualMemoryResource {
    pub(super) inner: Arc<VmmInner>,
}

/// What a resource knows, fixed at creation.
pub(super) struct VmmInner {
    pub(super) device: Device,
    pub(super) driver: &'static Driver,
    /// The properties every `cuMemCreate` is given.
    pub(super) prop: CUmemAllocationProp,
    /// The granularity sizes are rounded to (queried once).
    pub(super) granularity: usize,
    /// The access descriptors every mapping gets: the device's, then each peer's.
    pub(super) access: Vec<CUmemAccessDesc>,
    /// The alignment of reservations (0: the driver's).
    pub(super) align: usize,
    pub(super) options: VirtualMemoryResourceOptions,
    /// The regions behind live buffers, by base address.
    live: Mutex<HashMap<CUdeviceptr, Owned<Region>>>,
}

// SAFETY: the properties' only pointer (`win32HandleMetaData`) is null and never read; the
// rest is plain data, read only after creation (the live map is behind a mutex).
unsafe impl Send for VmmInner {}
// SAFETY: as above.
unsafe impl Sync for VmmInner {}

/// An access descriptor for the device with `ordinal`.
pub(super) fn access_desc(ordinal: usize, access: VmmAccess) -> CUmemAccessDesc {
    CUmemAccessDesc {
        location: abi::device_location(ordinal as i32),
        flags: access.raw(),
    }
}

/// Errors with [`Error::Unsupported`] unless `device` reports `attribute` as non-zero.
fn require(device: &Device, attribute: CUdevice_attribute, feature: &'static str) -> Result<()> {
    if device.attribute(attribute)? == 0 {
        return Err(Error::unsupported(
            feature,
            format!("device {} does not support it", device.ordinal()),
        ));
    }
    Ok(())
}

impl VirtualMemoryResource {
    /// A resource allocating on `device` as `options` say. Checks what the device supports
    /// (virtual memory, the handle type, GPUDirect RDMA, host NUMA memory, peer access) and
    /// queries the granularity once.
    ///
    #[doc = cuda_sys::api_doc!(cuMemGetAllocationGranularity)]
    /// # Errors
    ///
    /// [`Error::Unsupported`] for what the device lacks (a fabric handle where
    /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED` is 0, a peer that cannot reach the
    /// device); [`Error::InvalidArgument`] for an `addr_align` that is not a power of two or
    /// a `max_size` of 0; the driver's error.
    #[doc(alias = "cuMemGetAllocationGranularity")]
    pub fn new(device: &Device, options: VirtualMemoryResourceOptions) -> Result<Self> {
        let align = check_alignment(options.addr_align)?;
        if options.max_size == Some(0) {
            return Err(Error::invalid_argument(
                "a virtual memory resource's max_size must be more than 0",
            ));
        }
        require(
            device,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            "virtual memory management",
        )?;
        if let Some(handle_type) = options.handle_type {
            let (attribute, feature) = match handle_type {
                IpcHandleType::PosixFd => (
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                    "POSIX file descriptor memory handles",
                ),
                IpcHandleType::Fabric => (
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
                    "fabric memory handles",
                ),
            };
            require(device, attribute, feature)?;
            handle_type.usable_here()?;
        }
        if options.gpu_direct_rdma {
            require(
                device,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                "GPUDirect RDMA with virtual memory",
            )?;
        }
        let location = match options.location {
            VmmLocation::Device => abi::device_location(device.ordinal() as i32),
            VmmLocation::HostNuma(node) => {
                require(
                    device,
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                    "virtual memory on host NUMA nodes",
                )?;
                let node = i32::try_from(node).map_err(|_| {
                    Error::invalid_argument(format!("NUMA node {node} is out of range"))
                })?;
                abi::location(CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST_NUMA, node)
            }
        };
        let mut access = vec![access_desc(device.ordinal(), options.self_access)];
        let mut peers: Vec<Device> = Vec::new();
        for peer in &options.peers {
            if peer == device || peers.contains(peer) {
                continue;
            }
            if !peer.can_access_peer(device)? {
                return Err(Error::unsupported(
                    "peer access to virtual memory",
                    format!(
                        "device {} cannot reach device {}'s memory",
                        peer.ordinal(),
                        device.ordinal()
                    ),
                ));
            }
            peers.push(*peer);
            access.push(access_desc(peer.ordinal(), options.peer_access));
        }
        let mut prop = CUmemAllocationProp {
            type_: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            requestedHandleTypes: options
                .handle_type
                .map_or(CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE, |kind| {
                    kind.raw()
                }),
            location,
            win32HandleMetaData: std::ptr::null_mut(),
            allocFlags: Default::default(),
        };
        prop.allocFlags.gpuDirectRDMACapable = u8::from(options.gpu_direct_rdma);
        let driver = device.driver();
        let mut granularity = 0usize;
        // SAFETY: valid out-pointer and fully initialised properties.
        unsafe {
            cu!(
                driver,
                cuMemGetAllocationGranularity(&mut granularity, &prop, options.granularity.raw())
            )
        }?;
        if !granularity.is_power_of_two() {
            return Err(Error::unexpected(
                "cuMemGetAllocationGranularity",
                format!("a granularity of {granularity} bytes is not a power of two"),
            ));
        }
        Ok(Self {
            inner: Arc::new(VmmInner {
                device: *device,
                driver,
                prop,
                granularity,
                access,
                align,
                options,
                live: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The device the memory is for.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// The granularity sizes are rounded up to (the minimum or recommended one, as the
    /// options chose).
    pub fn granularity(&self) -> usize {
        self.inner.granularity
    }

    /// The options the resource was made with.
    pub fn options(&self) -> &VirtualMemoryResourceOptions {
        &self.inner.options
    }

    /// `size` rounded up to the granularity: what an allocation of `size` bytes maps.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for 0, overflow, or more than `max_size`.
    pub fn round_up(&self, size: usize) -> Result<usize> {
        round_up(size, self.inner.granularity, self.inner.options.max_size)
    }

    /// Reserves, creates, maps and grants access to `size` bytes (rounded up to the
    /// granularity): exactly `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap` and
    /// `cuMemSetAccess`. Dropping or [closing](VirtualMapping::close) the mapping makes
    /// exactly `cuMemUnmap`, `cuMemRelease` and `cuMemAddressFree`, at once: no stream orders
    /// it, so the caller makes sure no queued work still uses the memory.
    ///
    /// # Errors
    ///
    /// As [`round_up`](Self::round_up); the driver's (out of memory:
    /// [`Error::is_out_of_memory`]). What was done before a failed step is undone.
    #[doc(
        alias = "cuMemAddressReserve",
        alias = "cuMemCreate",
        alias = "cuMemMap"
    )]
    pub fn map(&self, size: usize) -> Result<VirtualMapping> {
        let rounded = self.round_up(size)?;
        let region = self.inner.map_region(rounded, rounded)?;
        Ok(VirtualMapping::from_parts(region, self.clone()))
    }

    /// A buffer of `size` bytes (rounded up to the granularity) inside a reservation of
    /// `reserve` bytes (at least `size`, at most `max_size`, rounded up), whose mapped part
    /// [grows](GrowableBuffer::grow) in place. Its operations and its release are ordered on
    /// `stream`.
    ///
    /// # Errors
    ///
    /// As [`round_up`](Self::round_up) for `size`; the driver's.
    pub fn growable(&self, size: usize, reserve: usize, stream: &Stream) -> Result<GrowableBuffer> {
        let mapped = self.round_up(size)?;
        let reserve = self
            .inner
            .options
            .max_size
            .map_or(reserve, |max| reserve.min(max));
        let reserved = round_up(reserve.max(mapped), self.inner.granularity, None)?;
        let mut region = self.inner.map_region(reserved, mapped)?;
        region.set_stream(Some(stream.clone()));
        Ok(GrowableBuffer::from_parts(region, self.clone(), stream))
    }
}

impl VmmInner {
    /// Reserves `reserved` bytes and maps a new chunk of `mapped` bytes at its start (both
    /// multiples of the granularity).
    pub(super) fn map_region(&self, reserved: usize, mapped: usize) -> Result<Owned<Region>> {
        let mut region = Owned::new(Region::reserve(
            self.driver,
            reserved,
            self.align,
            self.options.addr_hint,
        )?);
        region.create_and_map(mapped, &self.prop, &self.access)?;
        Ok(region)
    }
}

// SAFETY: every allocation is a fresh reservation with its own physical chunk of at least
// `size` bytes (rounded up), mapped with read-write access for the device (unless the caller
// chose read-only self access, which makes writes fault, never touch other memory), and
// released once after its stream drained. It is device memory only.
unsafe impl MemoryResource for VmmInner {
    fn allocate_raw(&self, size: usize, _stream: &Stream) -> Result<CUdeviceptr> {
        let rounded = round_up(size, self.granularity, self.options.max_size)?;
        let region = self.map_region(rounded, rounded)?;
        let base = region.base();
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(base, region);
        Ok(base)
    }

    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, _size: usize, stream: &Stream) -> Result<()> {
        // Unmapping is not stream-ordered: wait until nothing queued can touch the memory.
        stream.drain()?;
        let region = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&ptr);
        match region {
            Some(region) => region.close(),
            None => Err(Error::invalid_argument(format!(
                "{ptr:#x} is no live allocation of this virtual memory resource"
            ))),
        }
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }

    fn device(&self) -> Option<Device> {
        Some(self.device)
    }

    fn copies_need_current_context(&self) -> bool {
        true
    }
}

impl fmt::Debug for VmmInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualMemoryResource")
            .field("device", &self.device.ordinal())
            .field("granularity", &self.granularity)
            .field("options", &self.options)
            .finish()
    }
}

impl fmt::Debug for VirtualMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

forward_memory_resource!(VirtualMemoryResource);
typed_allocations!(VirtualMemoryResource, cuMemCreate "cuMemCreate");

/// One reservation with physical memory mapped into it, made by
/// [`VirtualMemoryResource::map`] or imported from another process
/// ([`VirtualMemoryResource::import_fds`]).
///
/// Nothing orders it on a stream: dropping it unmaps, releases and frees at once, so work
/// that uses its address (a kernel launch, which is `unsafe` for that reason) must be finished
/// first.
#[must_use = "a mapping is unmapped when dropped"]
pub struct VirtualMapping {
    region: Owned<Region>,
    resource: VirtualMemoryResource,
}

impl VirtualMapping {
    pub(super) fn from_parts(region: Owned<Region>, resource: VirtualMemoryResource) -> Self {
        Self { region, resource }
    }

    /// The base address.
    #[inline]
    pub fn as_raw(&self) -> CUdeviceptr {
        self.region.base()
    }

    /// The bytes mapped (a multiple of the granularity).
    pub fn len(&self) -> usize {
        self.region.mapped()
    }

    /// Whether nothing is mapped (never, for a mapping that exists).
    pub fn is_empty(&self) -> bool {
        self.region.mapped() == 0
    }

    /// The resource that made (or imported) it.
    pub fn resource(&self) -> &VirtualMemoryResource {
        &self.resource
    }

    /// Grants devices access to the whole mapping, in one `cuMemSetAccess` (the resource's
    /// own device and peers keep theirs unless listed).
    ///
    #[doc = cuda_sys::api_doc!(cuMemSetAccess)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty list; the driver's (a device that cannot reach
    /// the memory).
    #[doc(alias = "cuMemSetAccess")]
    pub fn set_access(&self, grants: &[(Device, VmmAccess)]) -> Result<()> {
        let access = grant_descs(grants)?;
        self.region.set_access_all(&access)
    }

    /// Unmaps, releases and frees now, returning the first error (each later one is logged).
    pub fn close(self) -> Result<()> {
        self.region.close()
    }

    pub(super) fn region(&self) -> &Region {
        &self.region
    }

    pub(super) fn vmm_inner(&self) -> &VmmInner {
        &self.resource.inner
    }
}

/// The access descriptors for `grants`, refusing an empty list.
pub(super) fn grant_descs(grants: &[(Device, VmmAccess)]) -> Result<Vec<CUmemAccessDesc>> {
    if grants.is_empty() {
        return Err(Error::invalid_argument(
            "set_access needs at least one device",
        ));
    }
    Ok(grants
        .iter()
        .map(|(device, access)| access_desc(device.ordinal(), *access))
        .collect())
}

impl fmt::Debug for VirtualMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualMapping")
            .field("region", &*self.region)
            .field("device", &self.resource.inner.device.ordinal())
            .finish()
    }
}

assert_send_sync!(VirtualMemoryResource, VirtualMapping);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_descriptors_name_the_device_and_the_protection() {
        let desc = access_desc(3, VmmAccess::Read);
        assert_eq!(abi::location_id(&desc.location), 3);
        assert_eq!(
            desc.location.type_,
            CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE
        );
        assert_eq!(
            desc.flags,
            cuda_sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ
        );
        assert!(grant_descs(&[]).is_err());
    }
}
