//! GPU monitoring through NVML: what `cuda.core.system` offers Python, and more (power, energy,
//! clocks, MIG, NVLink, events), without initialising CUDA.
//!
//! NVML is initialised (`nvmlInit_v2`) when the first [`Session`], [`Device`] or [`EventSet`]
//! is created and shut down when the last is dropped. `cuInit` is never called, so these
//! queries work while no CUDA context exists and do not create one. On a machine without
//! NVML every entry point fails with [`Error::Load`](crate::Error::Load)
//! (`LoadError::LibraryNotFound`, listing the paths tried).
//!
//! ```no_run
//! use cuda_safe::system::{self, ClockType, Device};
//!
//! println!("driver {}, CUDA {}", system::driver_version()?, system::cuda_driver_version()?);
//! let gpu = Device::from_index(0)?;
//! let memory = gpu.memory_info()?;
//! println!(
//!     "{} {}: {} % busy, {} of {} MiB used, {} W, {} C, SM at {} MHz",
//!     gpu.name()?,
//!     gpu.uuid()?,
//!     gpu.utilization()?.gpu,
//!     memory.used >> 20,
//!     memory.total >> 20,
//!     gpu.power_usage_mw()? / 1000,
//!     gpu.temperature_c()?,
//!     gpu.clock_mhz(ClockType::SM)?,
//! );
//! for process in gpu.compute_processes()? {
//!     println!("  pid {} uses {:?} bytes", process.pid(), process.used_gpu_memory());
//! }
//! match gpu.mig_mode() {
//!     Ok(mode) => println!("MIG {}", mode.current),
//!     Err(error) if error.is_not_supported() => println!("no MIG on this GPU"),
//!     Err(error) => return Err(error),
//! }
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Every query is one NVML call; those that return numbers allocate nothing. Enumerations are
//! open newtypes and flag sets keep unknown bits, so a newer driver's values are kept as
//! numbers.
//!
//! # Errors
//!
//! The queries share their errors, so they are listed here rather than on each:
//! - not supported: a query the GPU or driver does not support (`NVML_ERROR_NOT_SUPPORTED`),
//!   or a function the installed NVML lacks (only when it is called, told apart by
//!   [`Error::is_symbol_missing`](crate::Error::is_symbol_missing)); for both,
//!   [`Error::is_not_supported`](crate::Error::is_not_supported) is true;
//! - [`Error::Load`](crate::Error::Load) without NVML, and NVML's driver-not-loaded code: for
//!   both, [`Error::is_no_device`](crate::Error::is_no_device) is true;
//! - [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a UUID or PCI bus id with a
//!   NUL byte, refused before NVML;
//! - [`Error::Nvml`](crate::Error::Nvml) with NVML's code otherwise.

mod clocks;
mod device;
mod enums;
mod events;
mod flags;
mod init;
mod memory;
mod mig;
mod modes;
mod nvlink;
mod pci;
mod power;
mod processes;
mod session;
mod text;
mod thermal;
mod topology;
mod version;

pub use crate::uuid::{GPU_UUID_PREFIX, MIG_UUID_PREFIX, uuid_bytes, uuid_string};
pub use device::Device;
pub use enums::{
    Architecture, Brand, ClockId, ClockType, ComputeMode, EccCounter, EccErrorType, FeatureState,
    NvLinkVersion, P2pCapability, P2pStatus, PcieCounter, PerformanceState, TemperatureThreshold,
    TopologyLevel,
};
pub use events::{Event, EventSet};
pub use flags::{ClockEventReasons, EventTypes};
pub use memory::{Bar1Memory, MemoryInfo, Utilization};
pub use modes::CurrentAndPending;
pub use nvlink::NVLINK_MAX_LINKS;
pub use pci::PciInfo;
pub use processes::ProcessInfo;
pub use session::{
    Session, cuda_driver_version, device_count, driver_branch, driver_version, nvml_version,
    process_name,
};
pub use version::VersionString;

/// Compile-time proof of the thread-safety the types document.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Session>();
    send_sync::<Device>();
    send_sync::<EventSet>();
    send_sync::<Event>();
    send_sync::<ProcessInfo>();
    send_sync::<MemoryInfo>();
    send_sync::<PciInfo>();
    send_sync::<VersionString>();
};

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use nvml_sys::{LoadError, nvmlReturn_t};
    use std::path::PathBuf;

    #[test]
    fn missing_functions_are_unsupported_and_told_apart_by_is_symbol_missing() {
        let unsupported = Error::nvml(
            "nvmlDeviceGetFanSpeed_v2",
            nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED,
        );
        assert!(unsupported.is_not_supported());
        assert!(!unsupported.is_symbol_missing());
        assert_eq!(
            unsupported.nvml_code(),
            Some(nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED)
        );
        assert!(
            unsupported
                .to_string()
                .starts_with("nvmlDeviceGetFanSpeed_v2 failed: ")
        );

        let other = Error::nvml(
            "nvmlDeviceGetPowerUsage",
            nvmlReturn_t::NVML_ERROR_GPU_IS_LOST,
        );
        assert!(!other.is_not_supported());
        assert_eq!(
            other.nvml_code(),
            Some(nvmlReturn_t::NVML_ERROR_GPU_IS_LOST)
        );

        let missing = Error::Load(LoadError::SymbolMissing {
            library: "NVML (libnvidia-ml)",
            path: PathBuf::from("libnvidia-ml.so.1"),
            symbol: "nvmlDeviceGetTemperatureV",
            since: None,
        });
        assert!(missing.is_symbol_missing());
        assert!(
            missing.is_not_supported(),
            "an old driver does not support the query"
        );
        assert_eq!(missing.nvml_code(), None);
        assert!(!Error::invalid_argument("x").is_not_supported());
    }
}
