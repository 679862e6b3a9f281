//! [`Device`]: one GPU (or MIG device) as NVML sees it, found by index, UUID or PCI bus id,
//! and its identity: name, UUID, serial, brand, architecture.

use std::ffi::c_char;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::enums::{Architecture, Brand};
use super::init::{self, Guard};
use super::text::read_string;
use crate::error::{Error, Result, check_nvml, nvml};
use crate::ffi::to_c_string;
use crate::uuid::{GPU_UUID_PREFIX, MIG_UUID_PREFIX, uuid_bytes, uuid_string};
use nvml_sys::{LoadError, Nvml, nvmlDevice_t, nvmlReturn_t};

/// Calls an NVML getter of the [`Getter`] shape on a [`Device`], naming it once:
/// `query!(device, nvmlDeviceGetPowerUsage, 0)`.
macro_rules! query {
    ($device:expr, $getter:ident, $initial:expr $(,)?) => {
        $device.query(stringify!($getter), ::nvml_sys::Nvml::$getter, $initial)
    };
}

/// [`query!`] for a getter of the [`GetterWith`] shape:
/// `query_with!(device, nvmlDeviceGetClockInfo, clock_type, 0)`.
macro_rules! query_with {
    ($device:expr, $getter:ident, $argument:expr, $initial:expr $(,)?) => {
        $device.query_with(
            stringify!($getter),
            ::nvml_sys::Nvml::$getter,
            $argument,
            $initial,
        )
    };
}

pub(super) use {query, query_with};

/// An NVML getter of the shape `(device, out)` (a method of [`Nvml`]): it writes one `T`
/// through `out`, or nothing when it fails, and reads nothing else.
pub(super) type Getter<T> =
    unsafe fn(&Nvml, nvmlDevice_t, *mut T) -> std::result::Result<nvmlReturn_t, LoadError>;

/// An NVML getter of the shape `(device, argument, out)`: as [`Getter`], for a function that
/// accepts any value of `A` (a domain, link, fan or counter number; an unknown or
/// out-of-range one is NVML's invalid-argument error).
pub(super) type GetterWith<A, T> =
    unsafe fn(&Nvml, nvmlDevice_t, A, *mut T) -> std::result::Result<nvmlReturn_t, LoadError>;

/// A GPU, or a MIG device of one, as NVML sees it.
///
/// Holding a `Device` keeps NVML initialised; cloning is cheap (a reference count). Every
/// query is one NVML call; one the GPU or driver does not support fails with an error for
/// which [`Error::is_not_supported`] is true (or [`Error::is_symbol_missing`] when the driver
/// lacks the function).
///
/// NVML's device indices follow PCI order and ignore `CUDA_VISIBLE_DEVICES`, so they can differ
/// from CUDA's ordinals: match devices by [`uuid`](Self::uuid) instead.
///
/// `Device` is `Send` and `Sync`: NVML is thread-safe and the handle stays valid while NVML is
/// initialised, which this value ensures.
#[derive(Clone)]
pub struct Device {
    pub(super) handle: nvmlDevice_t,
    pub(super) nvml: &'static Nvml,
    pub(super) guard: Arc<Guard>,
}

// SAFETY: an `nvmlDevice_t` is an identifier valid in every thread until `nvmlShutdown`, which
// the guard held here defers; NVML's functions are thread-safe.
unsafe impl Send for Device {}
// SAFETY: as above; no method mutates the value, and NVML serialises what it must.
unsafe impl Sync for Device {}

impl Device {
    /// Wraps a handle NVML returned while `guard` was alive.
    pub(super) fn from_handle(handle: nvmlDevice_t, guard: Arc<Guard>) -> Self {
        Self {
            handle,
            nvml: guard.nvml(),
            guard,
        }
    }

    /// Looks a handle up with `lookup`, under `guard` (NVML initialised).
    fn lookup(
        guard: Arc<Guard>,
        lookup: impl FnOnce(&'static Nvml, *mut nvmlDevice_t) -> Result<()>,
    ) -> Result<Self> {
        let mut handle: nvmlDevice_t = std::ptr::null_mut();
        lookup(guard.nvml(), &mut handle)?;
        Ok(Self::from_handle(handle, guard))
    }

    /// Calls `getter` on this device with an out-value that starts as `initial` (where a
    /// versioned struct carries its version) and returns what NVML wrote; `api` names the call
    /// in the error.
    #[inline]
    pub(super) fn query<T>(&self, api: &'static str, getter: Getter<T>, initial: T) -> Result<T> {
        let mut value = initial;
        // SAFETY: the handle is live while `self` holds NVML; `value` is a valid, initialised
        // `T`, and a `Getter` only writes one `T` through the pointer.
        let result = unsafe { getter(self.nvml, self.handle, &mut value) };
        check_nvml(api, result)?;
        Ok(value)
    }

    /// [`query`](Self::query) for a getter that also takes `argument`.
    #[inline]
    pub(super) fn query_with<A, T>(
        &self,
        api: &'static str,
        getter: GetterWith<A, T>,
        argument: A,
        initial: T,
    ) -> Result<T> {
        let mut value = initial;
        // SAFETY: as in `query`; a `GetterWith` accepts any value of `A`.
        let result = unsafe { getter(self.nvml, self.handle, argument, &mut value) };
        check_nvml(api, result)?;
        Ok(value)
    }

    /// The GPU at NVML index `index` (PCI order; see the type's note on CUDA ordinals).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetHandleByIndex_v2)]
    #[doc(alias = "nvmlDeviceGetHandleByIndex_v2")]
    pub fn from_index(index: u32) -> Result<Self> {
        Self::from_index_in(init::acquire()?, index)
    }

    /// [`Device::from_index`] under an existing guard.
    pub(super) fn from_index_in(guard: Arc<Guard>, index: u32) -> Result<Self> {
        Self::lookup(guard, |nvml, handle| {
            // SAFETY: NVML is initialised (the guard); `handle` is a valid out-pointer.
            unsafe { nvml!(nvml, nvmlDeviceGetHandleByIndex_v2(index, handle)) }
        })
    }

    /// The GPU or MIG device with this UUID (`GPU-…` or `MIG-…`, as [`uuid`](Self::uuid)
    /// returns it).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetHandleByUUID)]
    #[doc(alias = "nvmlDeviceGetHandleByUUID")]
    pub fn from_uuid(uuid: &str) -> Result<Self> {
        let uuid = to_c_string("UUID", uuid)?;
        Self::lookup(init::acquire()?, |nvml, handle| {
            // SAFETY: NVML is initialised; `uuid` is NUL-terminated and outlives the call.
            unsafe { nvml!(nvml, nvmlDeviceGetHandleByUUID(uuid.as_ptr(), handle)) }
        })
    }

    /// The GPU or MIG device whose UUID has these 16 bytes (what `cuDeviceGetUuid_v2` gives):
    /// tried as a GPU UUID, then as a MIG device's.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetHandleByUUID)]
    #[doc(alias = "nvmlDeviceGetHandleByUUID")]
    pub fn from_uuid_bytes(bytes: &[u8; 16]) -> Result<Self> {
        match Self::from_uuid(&uuid_string(GPU_UUID_PREFIX, bytes)) {
            Err(error)
                if error.nvml_code() == Some(nvml_sys::nvmlReturn_t::NVML_ERROR_NOT_FOUND) =>
            {
                Self::from_uuid(&uuid_string(MIG_UUID_PREFIX, bytes))
            }
            found => found,
        }
    }

    /// The GPU at this PCI bus id (`"0000:1b:00.0"`, as [`PciInfo::bus_id`](super::PciInfo)
    /// shows it; the domain may be 4 or 8 hex digits).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetHandleByPciBusId_v2)]
    #[doc(alias = "nvmlDeviceGetHandleByPciBusId_v2")]
    pub fn from_pci_bus_id(bus_id: &str) -> Result<Self> {
        let bus_id = to_c_string("PCI bus id", bus_id)?;
        Self::lookup(init::acquire()?, |nvml, handle| {
            // SAFETY: NVML is initialised; `bus_id` is NUL-terminated and outlives the call.
            unsafe {
                nvml!(
                    nvml,
                    nvmlDeviceGetHandleByPciBusId_v2(bus_id.as_ptr(), handle)
                )
            }
        })
    }

    /// Every GPU NVML sees, in index order.
    pub fn all() -> Result<Vec<Self>> {
        super::Session::new()?.devices()
    }

    /// The raw NVML handle, for calls this crate does not wrap. It is valid while `self` (or
    /// any other holder of NVML) is alive.
    pub fn as_raw(&self) -> nvmlDevice_t {
        self.handle
    }

    /// A [`Session`](super::Session) sharing this device's hold on NVML.
    pub fn session(&self) -> super::Session {
        super::Session::from_guard(Arc::clone(&self.guard))
    }

    /// The product name (`"NVIDIA H200"`).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetName)]
    #[doc(alias = "nvmlDeviceGetName")]
    pub fn name(&self) -> Result<String> {
        const LEN: usize = nvml_sys::NVML_DEVICE_NAME_V2_BUFFER_SIZE as usize;
        read_string::<LEN>(|buffer: *mut c_char, length| {
            // SAFETY: the handle is live; `buffer` holds `length` chars.
            unsafe { nvml!(self.nvml, nvmlDeviceGetName(self.handle, buffer, length)) }
        })
    }

    /// The UUID as NVML writes it: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (`MIG-…` for a
    /// MIG device). The same UUID identifies the device to the CUDA driver.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetUUID)]
    #[doc(alias = "nvmlDeviceGetUUID")]
    pub fn uuid(&self) -> Result<String> {
        const LEN: usize = nvml_sys::NVML_DEVICE_UUID_V2_BUFFER_SIZE as usize;
        read_string::<LEN>(|buffer, length| {
            // SAFETY: the handle is live; `buffer` holds `length` chars.
            unsafe { nvml!(self.nvml, nvmlDeviceGetUUID(self.handle, buffer, length)) }
        })
    }

    /// The UUID's 16 bytes, comparable with `cuDeviceGetUuid_v2`'s.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetUUID)]
    #[doc(alias = "nvmlDeviceGetUUID")]
    pub fn uuid_bytes(&self) -> Result<[u8; 16]> {
        let text = self.uuid()?;
        uuid_bytes(&text).ok_or_else(|| {
            Error::unsupported(
                "reading a GPU UUID as bytes",
                format!("NVML's UUID {text:?} is not in the GPU-/MIG- hex form"),
            )
        })
    }

    /// The board's serial number (boards that have one: data-centre GPUs).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetSerial)]
    #[doc(alias = "nvmlDeviceGetSerial")]
    pub fn serial(&self) -> Result<String> {
        const LEN: usize = nvml_sys::NVML_DEVICE_SERIAL_BUFFER_SIZE as usize;
        read_string::<LEN>(|buffer, length| {
            // SAFETY: the handle is live; `buffer` holds `length` chars.
            unsafe { nvml!(self.nvml, nvmlDeviceGetSerial(self.handle, buffer, length)) }
        })
    }

    /// The product brand.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetBrand)]
    #[doc(alias = "nvmlDeviceGetBrand")]
    pub fn brand(&self) -> Result<Brand> {
        query!(
            self,
            nvmlDeviceGetBrand,
            nvml_sys::nvmlBrandType_t::NVML_BRAND_UNKNOWN,
        )
        .map(|brand| Brand(brand.0))
    }

    /// The GPU architecture.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetArchitecture)]
    #[doc(alias = "nvmlDeviceGetArchitecture")]
    pub fn architecture(&self) -> Result<Architecture> {
        query!(self, nvmlDeviceGetArchitecture, 0,).map(Architecture)
    }

    /// The CUDA compute capability, `(major, minor)` (`(9, 0)` on Hopper).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetCudaComputeCapability)]
    #[doc(alias = "nvmlDeviceGetCudaComputeCapability")]
    pub fn cuda_compute_capability(&self) -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the handle is live; both are valid out-pointers.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetCudaComputeCapability(self.handle, &mut major, &mut minor)
            )
        }?;
        Ok((major, minor))
    }

    /// NVML's index of this GPU (PCI order).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetIndex)]
    #[doc(alias = "nvmlDeviceGetIndex")]
    pub fn index(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetIndex, 0)
    }

    /// The minor number of the device file: `/dev/nvidia<minor>`.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMinorNumber)]
    #[doc(alias = "nvmlDeviceGetMinorNumber")]
    pub fn minor_number(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetMinorNumber, 0,)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

/// Two values are equal when they name the same NVML device.
impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.handle == other.handle
    }
}

impl Eq for Device {}

impl Hash for Device {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.handle.hash(state);
    }
}
