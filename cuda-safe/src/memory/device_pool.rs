//! Device memory from a stream-ordered pool (`cuMemAllocFromPoolAsync` / `cuMemFreeAsync`).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::buffer::Buffer;
use super::resource::{MemoryResource, forward_memory_resource, typed_allocations};
use crate::abi;
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::stream::Stream;
use crate::trace::span;
use cuda_sys::{
    CUdevice_attribute, CUdeviceptr, CUmemAllocationHandleType, CUmemAllocationType,
    CUmemPool_attribute, CUmemPoolProps, CUmemoryPool, Driver,
};

/// The properties of a pool of `ordinal`'s device memory, shareable through `ipc` handles
/// when given: what [`DeviceMemoryResource::new_pool`] creates and what a graph's allocation
/// node allocates from.
pub(crate) fn pool_props(ordinal: i32, ipc: Option<IpcHandleType>) -> CUmemPoolProps {
    CUmemPoolProps {
        allocType: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        handleTypes: ipc.map_or(
            CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            IpcHandleType::raw,
        ),
        location: abi::device_location(ordinal),
        ..Default::default()
    }
}

/// Options of a pool created with [`DeviceMemoryResource::new_pool`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolOptions {
    /// The most bytes the pool may hold (`None`: no limit beyond the device's memory).
    pub max_size: Option<usize>,
    /// Bytes the pool keeps reserved after a synchronization instead of returning them to the
    /// driver (`None`: keep everything, so freed memory is always reused).
    pub release_threshold: Option<u64>,
    /// Make the pool shareable with other processes through this kind of handle (`None`: not
    /// shareable). See the `ipc` module (`cuda_safe::ipc`) for exporting and importing it.
    pub ipc: Option<IpcHandleType>,
}

crate::setters::setters! {
    impl PoolOptions {
        max_size: some usize,
        release_threshold: some u64,
        ipc: some IpcHandleType,
    }
}

/// The kind of operating-system handle a shareable pool is exported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IpcHandleType {
    /// A POSIX file descriptor, passed to another process over a UNIX socket (Linux).
    PosixFd,
    /// A fabric handle: 64 bytes that any process of the same NVLink fabric (IMEX domain) can
    /// import, sent by any means.
    Fabric,
}

impl IpcHandleType {
    /// The driver's handle type.
    pub(crate) fn raw(self) -> CUmemAllocationHandleType {
        match self {
            Self::PosixFd => CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            Self::Fabric => CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_FABRIC,
        }
    }

    /// The name in messages (`"posix_fd"`, as `cuda.core` spells it).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::PosixFd => "posix_fd",
            Self::Fabric => "fabric",
        }
    }

    /// Errors unless this process can use the handle type: a fabric handle needs an IMEX
    /// channel open to it, without which the driver refuses every export (and, on driver 580,
    /// then crashes destroying the pool it refused).
    pub(crate) fn usable_here(self) -> Result<()> {
        const IMEX_CHANNELS: &str = "/dev/nvidia-caps-imex-channels";
        if self == Self::PosixFd {
            return Ok(());
        }
        let open = std::fs::read_dir(IMEX_CHANNELS).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                entry.file_name().to_string_lossy().starts_with("channel")
                    && std::fs::File::open(entry.path()).is_ok()
            })
        });
        if open {
            return Ok(());
        }
        Err(Error::unsupported(
            "fabric handles",
            format!(
                "no IMEX channel is open to this process ({IMEX_CHANNELS}/channel*): fabric \
                 handles need the IMEX service of a multi-node NVLink system; share memory on \
                 one machine through IpcHandleType::PosixFd"
            ),
        ))
    }
}

/// Where a pool came from.
#[derive(Clone, Copy)]
enum PoolOrigin {
    /// The device's default pool: not ours to destroy.
    Default,
    /// Made by `new_pool`, shareable through this handle type if any.
    Created(Option<IpcHandleType>),
    /// Imported from another process through this handle type.
    Imported(IpcHandleType),
}

/// Device memory from a stream-ordered pool: the device's default pool, or one this handle
/// owns. Cloning is cheap and shares the pool; buffers keep it alive.
///
/// The default pool's release threshold is raised to "keep everything" when this resource is
/// made, so memory freed by one buffer is reused by the next allocation instead of going back
/// to the driver at every synchronization (which makes pool allocation several times slower;
/// `cuda.core` had to add the same fix).
#[derive(Clone, Debug)]
pub struct DeviceMemoryResource {
    inner: Arc<Owned<DevicePool>>,
}

/// The resources over each device's default pool, made once per device (while its primary
/// context is retained: [`Device::release_primary_context`] forgets them).
static DEFAULT_POOLS: Mutex<Vec<(usize, DeviceMemoryResource)>> = Mutex::new(Vec::new());

struct DevicePool {
    raw: CUmemoryPool,
    owned: bool,
    // How the pool is shared with other processes, if it is.
    ipc: Option<IpcHandleType>,
    // Imported from another process: it maps that process's allocations and allocates none.
    imported: bool,
    // Left to the process's end instead of destroyed (see `keep_until_exit`).
    kept: AtomicBool,
    device: Device,
    // Keeps the primary context (and with it the pool's memory) alive.
    _context: Context,
    driver: &'static Driver,
}

// SAFETY: a CUmemoryPool may be used from any thread; the handle is immutable after creation.
unsafe impl Send for DevicePool {}
// SAFETY: as above.
unsafe impl Sync for DevicePool {}

impl DeviceMemoryResource {
    /// The resource over `device`'s default pool: made (and the pool's release threshold
    /// raised) on the first call, then shared, so asking again costs a lock and a clone.
    ///
    #[doc = cuda_sys::api_doc!(cuDeviceGetDefaultMemPool)]
    /// # Errors
    ///
    /// The driver's error; on a device without stream-ordered pools
    /// ([`DeviceProperties::memory_pools_supported`](crate::DeviceProperties::memory_pools_supported)
    /// false) that is `CUDA_ERROR_NOT_SUPPORTED` ([`Error::is_not_supported`]): allocate there
    /// with [`SyncDeviceMemoryResource`](crate::SyncDeviceMemoryResource).
    #[doc(alias = "cuDeviceGetDefaultMemPool")]
    pub fn default_pool(device: &Device) -> Result<Self> {
        let mut pools = DEFAULT_POOLS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, pool)) = pools
            .iter()
            .find(|(ordinal, _)| *ordinal == device.ordinal())
        {
            return Ok(pool.clone());
        }
        let pool = Self::open_default_pool(device)?;
        // After `Device::release_primary_context`, the pool's handle must not keep the context.
        if Context::keeps_primary(device) {
            pools.push((device.ordinal(), pool.clone()));
        }
        Ok(pool)
    }

    /// Forgets `device`'s shared default-pool resource (buffers and clones keep theirs).
    pub(crate) fn forget_default_pool(device: &Device) {
        let forgotten = {
            let mut pools = DEFAULT_POOLS.lock().unwrap_or_else(PoisonError::into_inner);
            let index = pools
                .iter()
                .position(|(ordinal, _)| *ordinal == device.ordinal());
            index.map(|index| pools.swap_remove(index))
        };
        drop(forgotten); // outside the lock: it may release the primary context
    }

    fn open_default_pool(device: &Device) -> Result<Self> {
        let context = device.context()?;
        let driver = device.driver();
        let mut raw: CUmemoryPool = std::ptr::null_mut();
        // SAFETY: valid out-pointer and device.
        unsafe { cu!(driver, cuDeviceGetDefaultMemPool(&mut raw, device.as_raw())) }?;
        let resource = Self::from_pool(raw, PoolOrigin::Default, device, context);
        resource.set_release_threshold(u64::MAX)?;
        Ok(resource)
    }

    /// A new pool on `device`, owned by this resource and destroyed with its last handle and
    /// buffer.
    ///
    #[doc = cuda_sys::api_doc!(cuMemPoolCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `max_size` of 0; [`Error::Unsupported`] for an `ipc`
    /// handle type the device's pools cannot be shared with; the driver's error.
    #[doc(alias = "cuMemPoolCreate")]
    pub fn new_pool(device: &Device, options: PoolOptions) -> Result<Self> {
        let _span = span!(DEBUG, "pool_create", device = device.ordinal());
        if options.max_size == Some(0) {
            return Err(Error::invalid_argument(
                "a pool's max_size must be more than 0",
            ));
        }
        if let Some(handle_type) = options.ipc {
            handle_type.usable_here()?;
            let supported = device
                .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)?
                as u32;
            if supported & handle_type.raw().0 == 0 {
                return Err(Error::unsupported(
                    "shareable memory pools",
                    format!(
                        "device {} cannot share pools through {handle_type:?} handles \
                         (CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES is {supported:#x})",
                        device.ordinal()
                    ),
                ));
            }
        }
        let context = device.context()?;
        let driver = device.driver();
        let props = CUmemPoolProps {
            maxSize: options.max_size.unwrap_or(0),
            ..pool_props(device.ordinal() as i32, options.ipc)
        };
        let mut raw: CUmemoryPool = std::ptr::null_mut();
        // SAFETY: valid out-pointer and fully initialised properties.
        unsafe { cu!(driver, cuMemPoolCreate(&mut raw, &props)) }?;
        let resource = Self::from_pool(raw, PoolOrigin::Created(options.ipc), device, context);
        resource.set_release_threshold(options.release_threshold.unwrap_or(u64::MAX))?;
        Ok(resource)
    }

    /// The resource over a pool imported from another process (`cuMemPoolImportFromShareableHandle`),
    /// which it owns and destroys with its last handle and buffer.
    pub(crate) fn from_imported(
        raw: CUmemoryPool,
        handle_type: IpcHandleType,
        device: &Device,
    ) -> Result<Self> {
        let context = device.context()?;
        Ok(Self::from_pool(
            raw,
            PoolOrigin::Imported(handle_type),
            device,
            context,
        ))
    }

    fn from_pool(raw: CUmemoryPool, origin: PoolOrigin, device: &Device, context: Context) -> Self {
        let (owned, ipc, imported) = match origin {
            PoolOrigin::Default => (false, None, false),
            PoolOrigin::Created(ipc) => (true, ipc, false),
            PoolOrigin::Imported(handle_type) => (true, Some(handle_type), true),
        };
        Self {
            inner: Arc::new(Owned::new(DevicePool {
                raw,
                owned,
                ipc,
                imported,
                kept: AtomicBool::new(false),
                device: *device,
                _context: context,
                driver: device.driver(),
            })),
        }
    }

    /// The raw pool handle.
    pub fn as_raw(&self) -> CUmemoryPool {
        self.inner.raw
    }

    /// The device whose memory the pool holds.
    pub(crate) fn home(&self) -> Device {
        self.inner.device
    }

    /// How the pool can be shared with other processes (`None`: it cannot).
    pub fn ipc_handle_type(&self) -> Option<IpcHandleType> {
        self.inner.ipc
    }

    /// Whether the pool was imported from another process: it maps that process's buffers
    /// and cannot allocate.
    pub fn is_imported(&self) -> bool {
        self.inner.imported
    }

    /// Makes the last handle leave the pool to the process's end instead of destroying it: for
    /// a pool the driver cannot destroy safely (on driver 580, destroying a fabric pool whose
    /// export was refused crashes the process).
    pub(crate) fn keep_until_exit(&self) {
        self.inner.kept.store(true, Ordering::Relaxed);
    }

    /// Whether this resource owns (and will destroy) its pool.
    pub fn owns_pool(&self) -> bool {
        self.inner.owned
    }

    /// Sets how many bytes the pool keeps reserved after a synchronization.
    #[doc = cuda_sys::api_doc!(cuMemPoolSetAttribute)]
    #[doc(alias = "cuMemPoolSetAttribute")]
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        let mut value = bytes;
        // SAFETY: the attribute takes a cuuint64_t, which `value` is.
        unsafe {
            cu!(
                self.inner.driver,
                cuMemPoolSetAttribute(
                    self.inner.raw,
                    CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&raw mut value).cast(),
                )
            )
        }
    }

    fn attribute_u64(&self, attribute: CUmemPool_attribute) -> Result<u64> {
        let mut value = 0u64;
        // SAFETY: the memory attributes are cuuint64_t values, which `value` is.
        unsafe {
            cu!(
                self.inner.driver,
                cuMemPoolGetAttribute(self.inner.raw, attribute, (&raw mut value).cast(),)
            )
        }?;
        Ok(value)
    }

    /// Bytes of the pool's memory handed out to live allocations.
    pub fn used_memory(&self) -> Result<u64> {
        self.attribute_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    }

    /// Bytes the pool holds from the driver (used or kept for reuse).
    pub fn reserved_memory(&self) -> Result<u64> {
        self.attribute_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    }

    /// Destroys an owned pool now if this is the last handle (no buffer of it alive),
    /// returning the driver's error (dropping does the same and only logs). For the default
    /// pool, or while other handles or buffers live, it only releases this handle.
    #[doc = cuda_sys::api_doc!(cuMemPoolDestroy)]
    #[doc(alias = "cuMemPoolDestroy")]
    pub fn close(self) -> Result<()> {
        Arc::try_unwrap(self.inner).map_or(Ok(()), Owned::close)
    }

    /// Returns kept memory to the driver until at most `bytes` stay reserved.
    #[doc = cuda_sys::api_doc!(cuMemPoolTrimTo)]
    #[doc(alias = "cuMemPoolTrimTo")]
    pub fn trim_to(&self, bytes: usize) -> Result<()> {
        // SAFETY: valid pool handle.
        unsafe { cu!(self.inner.driver, cuMemPoolTrimTo(self.inner.raw, bytes)) }
    }
}

forward_memory_resource!(DeviceMemoryResource);
typed_allocations!(DeviceMemoryResource, cuMemAllocFromPoolAsync "cuMemAllocFromPoolAsync");

// SAFETY: allocations come from `cuMemAllocFromPoolAsync` with the size asked, freed once by
// `cuMemFreeAsync`; device memory is never host-accessible.
unsafe impl MemoryResource for DevicePool {
    #[inline]
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<CUdeviceptr> {
        if self.imported {
            return Err(Error::invalid_argument(
                "a pool imported from another process cannot allocate; import its buffers",
            ));
        }
        if stream.device() != &self.device {
            return Err(Error::invalid_argument(format!(
                "the stream belongs to device {}, the pool to device {}",
                stream.device().ordinal(),
                self.device.ordinal()
            )));
        }
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: valid out-pointer, pool and stream (kept alive by their owners).
        unsafe {
            cu!(
                self.driver,
                cuMemAllocFromPoolAsync(&mut ptr, size, self.raw, stream.as_raw())
            )
        }?;
        Ok(ptr)
    }

    #[inline]
    unsafe fn deallocate_raw(&self, ptr: CUdeviceptr, _size: usize, stream: &Stream) -> Result<()> {
        // SAFETY: the caller guarantees `ptr` is a live allocation of this pool.
        unsafe { cu!(self.driver, cuMemFreeAsync(ptr, stream.as_raw())) }
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
}

impl Release for DevicePool {
    const WHAT: &'static str = "memory pool";

    fn release(&mut self) -> Result<()> {
        if !self.owned {
            return Ok(());
        }
        if self.kept.load(Ordering::Relaxed) {
            log::warn!(
                "memory pool {:?} of device {} is left to the process's end: the driver refused \
                 its export, after which destroying it would crash",
                self.raw,
                self.device.ordinal()
            );
            return Ok(());
        }
        // SAFETY: the pool is owned and every buffer from it is gone (they hold this value);
        // the driver finishes pending frees before releasing the memory.
        unsafe { cu!(self.driver, cuMemPoolDestroy(self.raw)) }
    }
}

impl fmt::Debug for DevicePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevicePool")
            .field("raw", &self.raw)
            .field("owned", &self.owned)
            .field("ipc", &self.ipc)
            .field("imported", &self.imported)
            .field("device", &self.device.ordinal())
            .finish()
    }
}

assert_send_sync!(DeviceMemoryResource);
