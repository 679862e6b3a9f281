//! CUDA devices: enumeration, identity, properties and the entry to contexts, streams, events
//! and memory.
//!
//! ```no_run
//! use cuda_safe::Device;
//!
//! for device in Device::all()? {
//!     let (major, minor) = device.compute_capability()?;
//!     println!("{}: {} sm_{major}{minor}, {} SMs", device.ordinal(), device.name()?,
//!         device.properties()?.multiprocessor_count);
//! }
//! let device = Device::new(0)?;
//! device.set_current()?;
//! let stream = device.create_stream(Default::default())?;
//! stream.sync()?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::ffi::c_char;
use std::fmt;

use crate::context::Context;
use crate::error::{Error, Result, cu};
use crate::event::{Event, EventOptions};
use crate::ffi::from_c_chars;
use crate::handle::assert_send_sync;
use crate::memory::{Buffer, DeviceMemoryResource};
use crate::stream::{Stream, StreamOptions};
use crate::uuid::Uuid;
use cuda_sys::{CUdevice, CUdevice_attribute, CUuuid, Driver};

/// A CUDA device, by ordinal. Cheap to copy; it owns nothing itself (its primary context, once
/// used, is kept retained by the process until [`Device::release_primary_context`]).
#[derive(Clone, Copy)]
pub struct Device {
    driver: &'static Driver,
    ordinal: i32,
    raw: CUdevice,
}

/// Free and total memory of a device, in bytes.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MemInfo {
    /// Bytes not allocated by anyone.
    pub free: usize,
    /// The device's memory size.
    pub total: usize,
}

/// The attributes most programs need, read in one call of [`Device::properties`].
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceProperties {
    /// Streaming multiprocessors.
    pub multiprocessor_count: u32,
    /// Compute capability major version.
    pub compute_capability_major: u32,
    /// Compute capability minor version.
    pub compute_capability_minor: u32,
    /// Threads in a warp.
    pub warp_size: u32,
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Most threads resident on one SM.
    pub max_threads_per_multiprocessor: u32,
    /// Most blocks resident on one SM.
    pub max_blocks_per_multiprocessor: u32,
    /// Largest block, per dimension.
    pub max_block_dim: [u32; 3],
    /// Largest grid, per dimension.
    pub max_grid_dim: [u32; 3],
    /// Static shared memory a block may use without opting in, in bytes.
    pub max_shared_memory_per_block: u32,
    /// Shared memory a block may use after opting in, in bytes.
    pub max_shared_memory_per_block_optin: u32,
    /// Shared memory per SM, in bytes.
    pub max_shared_memory_per_multiprocessor: u32,
    /// 32-bit registers available to one block.
    pub max_registers_per_block: u32,
    /// 32-bit registers per SM.
    pub max_registers_per_multiprocessor: u32,
    /// Constant memory, in bytes.
    pub total_constant_memory: u32,
    /// L2 cache, in bytes.
    pub l2_cache_size: u32,
    /// Memory bus width, in bits.
    pub global_memory_bus_width: u32,
    /// Asynchronous copy engines.
    pub async_engine_count: u32,
    /// Whether kernels may run concurrently.
    pub concurrent_kernels: bool,
    /// Whether the device shares memory with the host (an integrated GPU).
    pub integrated: bool,
    /// Whether ECC is on.
    pub ecc_enabled: bool,
    /// Whether host and device share one address space.
    pub unified_addressing: bool,
    /// Whether managed memory is supported.
    pub managed_memory: bool,
    /// Whether host and device may access managed memory at once.
    pub concurrent_managed_access: bool,
    /// Whether stream-ordered memory pools are supported.
    pub memory_pools_supported: bool,
    /// Whether cooperative launches are supported.
    pub cooperative_launch: bool,
    /// Whether thread-block clusters are supported (sm_90 on).
    pub cluster_launch: bool,
    /// Whether stream priorities are supported.
    pub stream_priorities_supported: bool,
    /// PCI domain, bus and device numbers.
    pub pci_domain_bus_device: [u32; 3],
}

/// The device limits a launch configuration is checked against; a [`Context`] reads them once
/// ([`Context::launch_limits`]).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchLimits {
    /// Most threads in a block.
    pub max_threads_per_block: u32,
    /// Largest block per dimension.
    pub max_block_dim: [u32; 3],
    /// Largest grid per dimension.
    pub max_grid_dim: [u32; 3],
    /// Most dynamic shared memory a block may opt in to.
    pub max_shared_memory_per_block_optin: u32,
    /// Whether clusters are supported.
    pub cluster_launch: bool,
    /// Whether cooperative launches are supported.
    pub cooperative_launch: bool,
}

impl Device {
    /// How many CUDA devices this process can see.
    #[doc = cuda_sys::api_doc!(cuDeviceGetCount)]
    #[doc(alias = "cuDeviceGetCount")]
    pub fn count() -> Result<usize> {
        let driver = crate::driver::driver()?;
        let mut count = 0;
        // SAFETY: `count` is a valid place for an int.
        unsafe { cu!(driver, cuDeviceGetCount(&mut count)) }?;
        Ok(count.max(0) as usize)
    }

    /// Every device, by ordinal.
    pub fn all() -> Result<Vec<Device>> {
        (0..Self::count()?).map(Self::new).collect()
    }

    /// The device with this ordinal.
    ///
    #[doc = cuda_sys::api_doc!(cuDeviceGet)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an ordinal past the visible devices; without a usable
    /// driver, an error for which [`Error::is_no_device`] is true (the driver library could
    /// not be loaded, or it reports no device).
    #[doc(alias = "cuDeviceGet")]
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = Self::count()?;
        if ordinal >= count {
            return Err(Error::invalid_argument(format!(
                "device ordinal {ordinal}, but {count} device(s) are visible"
            )));
        }
        let driver = crate::driver::driver()?;
        let ordinal = ordinal as i32;
        let mut raw = 0;
        // SAFETY: `raw` is a valid place for a CUdevice; the ordinal is in range.
        unsafe { cu!(driver, cuDeviceGet(&mut raw, ordinal)) }?;
        Ok(Self {
            driver,
            ordinal,
            raw,
        })
    }

    /// The ordinal this device was opened with.
    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    /// The raw `CUdevice` (`as_raw` since 0.2).
    #[deprecated(since = "0.2.0", note = "use `Device::as_raw`")]
    pub fn raw(&self) -> CUdevice {
        self.as_raw()
    }

    /// The raw `CUdevice`.
    pub fn as_raw(&self) -> CUdevice {
        self.raw
    }

    /// The device of the context current on the calling thread, if any.
    #[doc = cuda_sys::api_doc!(cuCtxGetDevice)]
    #[doc(alias = "cuCtxGetDevice")]
    pub fn current() -> Result<Option<Device>> {
        let driver = crate::driver::driver()?;
        let mut context = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        unsafe { cu!(driver, cuCtxGetCurrent(&mut context)) }?;
        if context.is_null() {
            return Ok(None);
        }
        let mut raw = 0;
        // SAFETY: valid out-pointer; a context is current.
        unsafe { cu!(driver, cuCtxGetDevice(&mut raw)) }?;
        Self::all()?
            .into_iter()
            .find(|device| device.raw == raw)
            .map(Some)
            .ok_or_else(|| {
                Error::unexpected(
                    "cuCtxGetDevice",
                    "the current context's device is not a visible device",
                )
            })
    }

    pub(crate) fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// The product name (`NVIDIA H200`).
    #[doc = cuda_sys::api_doc!(cuDeviceGetName)]
    #[doc(alias = "cuDeviceGetName")]
    pub fn name(&self) -> Result<String> {
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds `name.len()` bytes.
        unsafe {
            cu!(
                self.driver,
                cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, self.raw)
            )
        }?;
        Ok(from_c_chars(&name))
    }

    /// The device's UUID.
    #[doc = cuda_sys::api_doc!(cuDeviceGetUuid_v2)]
    #[doc(alias = "cuDeviceGetUuid_v2")]
    pub fn uuid(&self) -> Result<Uuid> {
        let mut uuid = CUuuid::default();
        // SAFETY: `uuid` is a valid out-pointer.
        unsafe { cu!(self.driver, cuDeviceGetUuid_v2(&mut uuid, self.raw)) }?;
        Ok(Uuid(uuid.bytes.map(|byte| byte as u8)))
    }

    /// The PCI bus id (`0000:19:00.0`).
    #[doc = cuda_sys::api_doc!(cuDeviceGetPCIBusId)]
    #[doc(alias = "cuDeviceGetPCIBusId")]
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut id = [0 as c_char; 64];
        // SAFETY: the buffer holds `id.len()` bytes.
        unsafe {
            cu!(
                self.driver,
                cuDeviceGetPCIBusId(id.as_mut_ptr(), id.len() as i32, self.raw)
            )
        }?;
        Ok(from_c_chars(&id))
    }

    /// The compute capability, `(major, minor)`.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        Ok((
            self.attribute_u32(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            self.attribute_u32(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ))
    }

    /// The architecture as NVRTC and `cuda.core` spell it: `"90"` for sm_90.
    pub fn arch(&self) -> Result<String> {
        let (major, minor) = self.compute_capability()?;
        Ok(format!("{major}{minor}"))
    }

    /// The device's memory size in bytes.
    #[doc = cuda_sys::api_doc!(cuDeviceTotalMem_v2)]
    #[doc(alias = "cuDeviceTotalMem_v2")]
    pub fn total_memory(&self) -> Result<usize> {
        let mut bytes = 0;
        // SAFETY: `bytes` is a valid place for a size_t.
        unsafe { cu!(self.driver, cuDeviceTotalMem_v2(&mut bytes, self.raw)) }?;
        Ok(bytes)
    }

    /// Free and total memory, as the driver sees it now. The query needs the primary context,
    /// which is retained on the first call (and kept, as for any use of the device).
    #[doc = cuda_sys::api_doc!(cuMemGetInfo_v2)]
    #[doc(alias = "cuMemGetInfo_v2")]
    pub fn mem_info(&self) -> Result<MemInfo> {
        let context = self.context()?;
        let _current = context.scoped()?;
        let (mut free, mut total) = (0, 0);
        // SAFETY: valid out-pointers; this device's primary context is current.
        unsafe { cu!(self.driver, cuMemGetInfo_v2(&mut free, &mut total)) }?;
        Ok(MemInfo { free, total })
    }

    /// A raw attribute (`cuDeviceGetAttribute`).
    #[doc = cuda_sys::api_doc!(cuDeviceGetAttribute)]
    #[doc(alias = "cuDeviceGetAttribute")]
    pub fn attribute(&self, attribute: CUdevice_attribute) -> Result<i32> {
        let mut value = 0;
        // SAFETY: `value` is a valid place for an int; an unknown attribute is an error code.
        unsafe {
            cu!(
                self.driver,
                cuDeviceGetAttribute(&mut value, attribute, self.raw)
            )
        }?;
        Ok(value)
    }

    fn attribute_u32(&self, attribute: CUdevice_attribute) -> Result<u32> {
        Ok(self.attribute(attribute)?.max(0) as u32)
    }

    fn attribute_bool(&self, attribute: CUdevice_attribute) -> Result<bool> {
        Ok(self.attribute(attribute)? != 0)
    }

    /// The common attributes in one struct (one `cuDeviceGetAttribute` call each).
    pub fn properties(&self) -> Result<DeviceProperties> {
        use CUdevice_attribute as A;
        let u = |attribute| self.attribute_u32(attribute);
        let b = |attribute| self.attribute_bool(attribute);
        Ok(DeviceProperties {
            multiprocessor_count: u(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            compute_capability_major: u(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            compute_capability_minor: u(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            warp_size: u(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_threads_per_block: u(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_multiprocessor: u(
                A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?,
            max_blocks_per_multiprocessor: u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
            max_block_dim: [
                u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_memory_per_block: u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_memory_per_block_optin: u(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            max_shared_memory_per_multiprocessor: u(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )?,
            max_registers_per_block: u(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            max_registers_per_multiprocessor: u(
                A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            )?,
            total_constant_memory: u(A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)?,
            l2_cache_size: u(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            global_memory_bus_width: u(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            async_engine_count: u(A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)?,
            concurrent_kernels: b(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)?,
            integrated: b(A::CU_DEVICE_ATTRIBUTE_INTEGRATED)?,
            ecc_enabled: b(A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED)?,
            unified_addressing: b(A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)?,
            managed_memory: b(A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)?,
            concurrent_managed_access: b(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)?,
            memory_pools_supported: b(A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)?,
            cooperative_launch: b(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)?,
            cluster_launch: b(A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)?,
            stream_priorities_supported: b(A::CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED)?,
            pci_domain_bus_device: [
                u(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
                u(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
                u(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
            ],
        })
    }

    /// The limits a launch on this device is checked against, read now from the device's
    /// attributes (a context keeps them: [`Context::launch_limits`]).
    pub fn launch_limits(&self) -> Result<LaunchLimits> {
        use CUdevice_attribute as A;
        let u = |attribute| self.attribute_u32(attribute);
        let optin = u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let plain = u(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?;
        Ok(LaunchLimits {
            max_threads_per_block: u(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: [
                u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                u(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_memory_per_block_optin: optin.max(plain),
            cluster_launch: self.attribute_bool(A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)?,
            cooperative_launch: self.attribute_bool(A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)?,
        })
    }

    /// Whether this device can access `peer`'s memory directly.
    #[doc = cuda_sys::api_doc!(cuDeviceCanAccessPeer)]
    #[doc(alias = "cuDeviceCanAccessPeer")]
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool> {
        let mut can = 0;
        // SAFETY: `can` is a valid place for an int; both handles came from cuDeviceGet.
        unsafe {
            cu!(
                self.driver,
                cuDeviceCanAccessPeer(&mut can, self.raw, peer.raw)
            )
        }?;
        Ok(can != 0)
    }

    /// The device's primary context, retained on first use and kept retained for the process
    /// (shared with every other handle to it) until [`release_primary_context`](Self::release_primary_context).
    #[doc = cuda_sys::api_doc!(cuDevicePrimaryCtxRetain)]
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    pub fn context(&self) -> Result<Context> {
        Context::primary(self)
    }

    /// Makes the device's primary context current on the calling thread, retaining it first
    /// if needed. The context stays retained after this returns (also after an earlier
    /// [`release_primary_context`](Self::release_primary_context): making it current asks for
    /// it again), so the natural `device.set_current()?;` followed by streams and allocations
    /// re-uses it.
    #[doc = cuda_sys::api_doc!(cuCtxSetCurrent)]
    #[doc(alias = "cuCtxSetCurrent")]
    pub fn set_current(&self) -> Result<()> {
        Context::keep_primary(self);
        self.context()?.bind()
    }

    /// Keeps the primary context retained for the process from its next use on (the default),
    /// undoing [`release_primary_context`](Self::release_primary_context).
    #[doc = cuda_sys::api_doc!(cuDevicePrimaryCtxRetain)]
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    pub fn retain_primary_context(&self) {
        Context::keep_primary(self);
    }

    /// Lets the primary context go: the crate stops keeping it retained, now and until
    /// [`set_current`](Self::set_current) or
    /// [`retain_primary_context`](Self::retain_primary_context) asks for it again. It is
    /// released (its memory freed) once every handle still using it (contexts, streams,
    /// events, buffers, memory resources) is dropped. Until then and after, what needs the
    /// context ([`context`](Self::context), [`mem_info`](Self::mem_info),
    /// [`create_stream`](Self::create_stream),
    /// [`default_memory_resource`](Self::default_memory_resource), ...) retains it for as
    /// long as the handle it returns lives, and no longer: a query with no handle to return
    /// makes and releases the context each time. Returns whether the crate was keeping it. Work
    /// of other libraries on the same primary context (the CUDA runtime shares it) keeps it
    /// alive through their own retains.
    #[doc = cuda_sys::api_doc!(cuDevicePrimaryCtxRelease)]
    #[doc(alias = "cuDevicePrimaryCtxRelease")]
    pub fn release_primary_context(&self) -> bool {
        let kept = Context::unpin_primary(self);
        DeviceMemoryResource::forget_default_pool(self);
        kept
    }

    /// Waits for all work on this device's primary context to finish. When the primary context
    /// is not retained there is no work and nothing is created: it returns at once.
    #[doc = cuda_sys::api_doc!(cuCtxSynchronize)]
    #[doc(alias = "cuCtxSynchronize")]
    pub fn sync(&self) -> Result<()> {
        match Context::live_primary(self) {
            Some(context) => context.sync(),
            None => Ok(()),
        }
    }

    /// A new stream on the primary context.
    ///
    /// # Errors
    ///
    /// As [`Stream::new`].
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        Stream::new(&self.context()?, options)
    }

    /// A new event on the primary context.
    pub fn create_event(&self, options: EventOptions) -> Result<Event> {
        Event::new(&self.context()?, options)
    }

    /// The visible device with this UUID.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when no visible device has it (it may be hidden by
    /// `CUDA_VISIBLE_DEVICES`).
    pub fn from_uuid(uuid: Uuid) -> Result<Device> {
        for candidate in Self::all()? {
            if candidate.uuid()? == uuid {
                return Ok(candidate);
            }
        }
        Err(Error::invalid_argument(format!(
            "{uuid} is not visible to CUDA in this process"
        )))
    }

    /// The memory resource over the device's default stream-ordered pool (made once, then
    /// shared). A device without pools answers `CUDA_ERROR_NOT_SUPPORTED`
    /// ([`Error::is_not_supported`]); allocate there with
    /// [`SyncDeviceMemoryResource`](crate::SyncDeviceMemoryResource).
    pub fn default_memory_resource(&self) -> Result<DeviceMemoryResource> {
        DeviceMemoryResource::default_pool(self)
    }

    /// Allocates `size` bytes from the device's default pool, ordered on `stream` (as
    /// `cuda.core`'s `Device.allocate`). Keep a [`DeviceMemoryResource`] for hot loops: this
    /// looks the shared resource up on each call.
    ///
    #[doc = cuda_sys::api_doc!(cuMemAllocFromPoolAsync)]
    /// # Errors
    ///
    /// The driver's when memory runs out ([`Error::is_out_of_memory`]);
    /// [`Error::InvalidArgument`] for a stream of another device.
    #[doc(alias = "cuMemAllocFromPoolAsync")]
    pub fn allocate(&self, size: usize, stream: &Stream) -> Result<Buffer> {
        self.default_memory_resource()?.allocate(size, stream)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.ordinal)
            .finish()
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl Eq for Device {}

assert_send_sync!(Device);
