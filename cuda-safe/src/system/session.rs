//! [`Session`]: a hold on NVML and the system-wide queries (device count, driver, NVML and
//! CUDA versions, process names), plus free functions that open a session for one call.

use std::sync::Arc;

use super::device::Device;
use super::init::{self, Guard};
use super::text::read_string;
use super::version::VersionString;
use crate::error::{Result, nvml};
use crate::ffi::from_c_chars;
use nvml_sys::CudaVersion;
use nvml_sys::Nvml;

/// A hold on NVML: while a `Session` (or any [`Device`]) is alive, NVML stays initialised.
///
/// The free functions of [`system`](super) open a session for the one call, which
/// initialises NVML again if nothing else holds it; keep a `Session` to make several queries.
///
/// ```no_run
/// let nvml = cuda_safe::system::Session::new()?;
/// println!("driver {}, CUDA {}", nvml.driver_version()?, nvml.cuda_driver_version()?);
/// for gpu in nvml.devices()? {
///     println!("{}: {}", gpu.index()?, gpu.name()?);
/// }
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Session {
    guard: Arc<Guard>,
}

impl Session {
    /// Initialises NVML (`nvmlInit_v2`) unless it already is; never initialises CUDA.
    ///
    /// Fails with [`Error::Load`](crate::Error::Load) (library not found) on a machine without
    /// NVML, and with [`Error::Nvml`](crate::Error::Nvml) when initialisation fails (no driver
    /// loaded, no permission).
    #[doc = nvml_sys::api_doc!(nvmlInit_v2)]
    #[doc(alias = "nvmlInit_v2")]
    pub fn new() -> Result<Self> {
        Ok(Self::from_guard(init::acquire()?))
    }

    /// A session over a guard a device already holds.
    pub(super) fn from_guard(guard: Arc<Guard>) -> Self {
        Self { guard }
    }

    fn nvml(&self) -> &'static Nvml {
        self.guard.nvml()
    }

    /// The number of GPUs NVML sees (all of them, whatever `CUDA_VISIBLE_DEVICES` says).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetCount_v2)]
    #[doc(alias = "nvmlDeviceGetCount_v2")]
    pub fn device_count(&self) -> Result<u32> {
        let mut count = 0;
        // SAFETY: NVML is initialised; `count` is a valid out-pointer.
        unsafe { nvml!(self.nvml(), nvmlDeviceGetCount_v2(&mut count)) }?;
        Ok(count)
    }

    /// The GPU at NVML index `index`.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetHandleByIndex_v2)]
    #[doc(alias = "nvmlDeviceGetHandleByIndex_v2")]
    pub fn device(&self, index: u32) -> Result<Device> {
        Device::from_index_in(Arc::clone(&self.guard), index)
    }

    /// Every GPU NVML sees, in index order.
    pub fn devices(&self) -> Result<Vec<Device>> {
        (0..self.device_count()?)
            .map(|index| self.device(index))
            .collect()
    }

    /// The driver's version (`"580.65.06"`): the kernel module's, which NVML's user-mode
    /// library always matches (it refuses to initialise otherwise).
    #[doc = nvml_sys::api_doc!(nvmlSystemGetDriverVersion)]
    #[doc(alias = "nvmlSystemGetDriverVersion")]
    pub fn driver_version(&self) -> Result<VersionString> {
        const LEN: usize = nvml_sys::NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE as usize;
        let text = read_string::<LEN>(|buffer, length| {
            // SAFETY: NVML is initialised; `buffer` holds `length` chars.
            unsafe { nvml!(self.nvml(), nvmlSystemGetDriverVersion(buffer, length)) }
        })?;
        Ok(VersionString::new(text))
    }

    /// NVML's own version (`"13.580.65.06"`: the CUDA major version, then the driver's).
    #[doc = nvml_sys::api_doc!(nvmlSystemGetNVMLVersion)]
    #[doc(alias = "nvmlSystemGetNVMLVersion")]
    pub fn nvml_version(&self) -> Result<VersionString> {
        const LEN: usize = nvml_sys::NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE as usize;
        let text = read_string::<LEN>(|buffer, length| {
            // SAFETY: NVML is initialised; `buffer` holds `length` chars.
            unsafe { nvml!(self.nvml(), nvmlSystemGetNVMLVersion(buffer, length)) }
        })?;
        Ok(VersionString::new(text))
    }

    /// The newest CUDA version the driver supports (what `cuDriverGetVersion` returns),
    /// read without initialising CUDA.
    #[doc = nvml_sys::api_doc!(nvmlSystemGetCudaDriverVersion_v2)]
    #[doc(alias = "nvmlSystemGetCudaDriverVersion_v2")]
    pub fn cuda_driver_version(&self) -> Result<CudaVersion> {
        let mut version = 0;
        // SAFETY: NVML is initialised; `version` is a valid out-pointer.
        unsafe { nvml!(self.nvml(), nvmlSystemGetCudaDriverVersion_v2(&mut version)) }?;
        Ok(CudaVersion(u32::try_from(version).unwrap_or(0)))
    }

    /// The driver's branch (`"r580_00"`). A driver older than this function gives an error for
    /// which [`Error::is_symbol_missing`](crate::Error::is_symbol_missing) is true.
    #[doc = nvml_sys::api_doc!(nvmlSystemGetDriverBranch)]
    #[doc(alias = "nvmlSystemGetDriverBranch")]
    pub fn driver_branch(&self) -> Result<String> {
        let mut info = nvml_sys::nvmlSystemDriverBranchInfo_t {
            version: nvml_sys::nvmlSystemDriverBranchInfo_v1,
            ..Default::default()
        };
        let length = u32::try_from(info.branch.len()).unwrap_or(u32::MAX);
        // SAFETY: NVML is initialised; `info` is a versioned struct whose `branch` field holds
        // `length` chars.
        unsafe { nvml!(self.nvml(), nvmlSystemGetDriverBranch(&mut info, length)) }?;
        Ok(from_c_chars(&info.branch))
    }

    /// The name of process `pid` (as NVML reads it from the OS; cut to 1023 bytes).
    #[doc = nvml_sys::api_doc!(nvmlSystemGetProcessName)]
    #[doc(alias = "nvmlSystemGetProcessName")]
    pub fn process_name(&self, pid: u32) -> Result<String> {
        read_string::<1024>(|buffer, length| {
            // SAFETY: NVML is initialised; `buffer` holds `length` chars.
            unsafe { nvml!(self.nvml(), nvmlSystemGetProcessName(pid, buffer, length)) }
        })
    }
}

/// The number of GPUs NVML sees: [`Session::device_count`] in a session of its own.
#[doc = nvml_sys::api_doc!(nvmlDeviceGetCount_v2)]
#[doc(alias = "nvmlDeviceGetCount_v2")]
pub fn device_count() -> Result<u32> {
    Session::new()?.device_count()
}

/// The driver's version: [`Session::driver_version`] in a session of its own.
#[doc = nvml_sys::api_doc!(nvmlSystemGetDriverVersion)]
#[doc(alias = "nvmlSystemGetDriverVersion")]
pub fn driver_version() -> Result<VersionString> {
    Session::new()?.driver_version()
}

/// NVML's version: [`Session::nvml_version`] in a session of its own.
#[doc = nvml_sys::api_doc!(nvmlSystemGetNVMLVersion)]
#[doc(alias = "nvmlSystemGetNVMLVersion")]
pub fn nvml_version() -> Result<VersionString> {
    Session::new()?.nvml_version()
}

/// The CUDA version the driver supports: [`Session::cuda_driver_version`] in a session of
/// its own.
#[doc = nvml_sys::api_doc!(nvmlSystemGetCudaDriverVersion_v2)]
#[doc(alias = "nvmlSystemGetCudaDriverVersion_v2")]
pub fn cuda_driver_version() -> Result<CudaVersion> {
    Session::new()?.cuda_driver_version()
}

/// The driver's branch: [`Session::driver_branch`] in a session of its own.
#[doc = nvml_sys::api_doc!(nvmlSystemGetDriverBranch)]
#[doc(alias = "nvmlSystemGetDriverBranch")]
pub fn driver_branch() -> Result<String> {
    Session::new()?.driver_branch()
}

/// The name of process `pid`: [`Session::process_name`] in a session of its own.
#[doc = nvml_sys::api_doc!(nvmlSystemGetProcessName)]
#[doc(alias = "nvmlSystemGetProcessName")]
pub fn process_name(pid: u32) -> Result<String> {
    Session::new()?.process_name(pid)
}
