//! Constants of `nvml.h` that bindgen drops: macros that cast, or that alias an enum value or a
//! type. Written by hand. (The `NVML_STRUCT_VERSION(...)` values are generated with the
//! bindings, since they follow one rule from the structs' sizes.)

use crate::{
    nvmlClocksEventReasonApplicationsClocksSetting, nvmlClocksEventReasonDisplayClockSetting,
    nvmlClocksEventReasonGpuIdle, nvmlClocksEventReasonSwPowerCap,
    nvmlClocksEventReasonSwThermalSlowdown, nvmlClocksEventReasonSyncBoost,
    nvmlClocksThrottleReasonHwPowerBrakeSlowdown, nvmlClocksThrottleReasonHwSlowdown,
    nvmlClocksThrottleReasonHwThermalSlowdown, nvmlClocksThrottleReasonNone,
    nvmlExcludedDeviceInfo_t, nvmlGpuTopologyLevel_t, nvmlMemoryErrorType_t,
};

/// `nvmlClocksEventReasonAll`: every clock-event reason bit the header lists.
#[cfg(not(feature = "cuda-13"))]
pub const nvmlClocksEventReasonAll: u64 = (nvmlClocksThrottleReasonNone
    | nvmlClocksEventReasonGpuIdle
    | nvmlClocksEventReasonApplicationsClocksSetting
    | nvmlClocksEventReasonSwPowerCap
    | nvmlClocksThrottleReasonHwSlowdown
    | nvmlClocksEventReasonSyncBoost
    | nvmlClocksEventReasonSwThermalSlowdown
    | nvmlClocksThrottleReasonHwThermalSlowdown
    | nvmlClocksThrottleReasonHwPowerBrakeSlowdown
    | nvmlClocksEventReasonDisplayClockSetting) as u64;

/// `nvmlClocksEventReasonAll`: every clock-event reason bit the header lists.
#[cfg(feature = "cuda-13")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda-13")))]
pub const nvmlClocksEventReasonAll: u64 = (nvmlClocksThrottleReasonNone
    | nvmlClocksEventReasonGpuIdle
    | nvmlClocksEventReasonApplicationsClocksSetting
    | nvmlClocksEventReasonSwPowerCap
    | nvmlClocksThrottleReasonHwSlowdown
    | nvmlClocksEventReasonSyncBoost
    | nvmlClocksEventReasonSwThermalSlowdown
    | nvmlClocksThrottleReasonHwThermalSlowdown
    | nvmlClocksThrottleReasonHwPowerBrakeSlowdown
    | nvmlClocksEventReasonDisplayClockSetting
    | crate::nvmlClocksEventReasonBoardLimit
    | crate::nvmlClocksEventReasonReliability) as u64;

/// `nvmlClocksThrottleReasonAll`: deprecated name of [`nvmlClocksEventReasonAll`].
pub const nvmlClocksThrottleReasonAll: u64 = nvmlClocksEventReasonAll;

/// `NVML_CPER_CURSOR_HANDLE_INIT`: a CPER cursor before its first use.
#[cfg(feature = "cuda-13")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda-13")))]
pub const NVML_CPER_CURSOR_HANDLE_INIT: crate::nvmlCPERCursorHandle_t = 0;

/// `NVML_TOPOLOGY_CPU`: deprecated name of `NVML_TOPOLOGY_NODE`.
pub const NVML_TOPOLOGY_CPU: nvmlGpuTopologyLevel_t = nvmlGpuTopologyLevel_t::NVML_TOPOLOGY_NODE;

/// `NVML_SINGLE_BIT_ECC`: deprecated name of `NVML_MEMORY_ERROR_TYPE_CORRECTED`.
pub const NVML_SINGLE_BIT_ECC: nvmlMemoryErrorType_t =
    nvmlMemoryErrorType_t::NVML_MEMORY_ERROR_TYPE_CORRECTED;
/// `NVML_DOUBLE_BIT_ECC`: deprecated name of `NVML_MEMORY_ERROR_TYPE_UNCORRECTED`.
pub const NVML_DOUBLE_BIT_ECC: nvmlMemoryErrorType_t =
    nvmlMemoryErrorType_t::NVML_MEMORY_ERROR_TYPE_UNCORRECTED;

/// `nvmlEccBitType_t`: deprecated name of [`nvmlMemoryErrorType_t`].
pub type nvmlEccBitType_t = nvmlMemoryErrorType_t;
/// `nvmlBlacklistDeviceInfo_t`: deprecated name of [`nvmlExcludedDeviceInfo_t`].
pub type nvmlBlacklistDeviceInfo_t = nvmlExcludedDeviceInfo_t;
