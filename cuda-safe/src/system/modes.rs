//! Modes and reliability: ECC mode and error counts, persistence mode, compute mode.

use super::device::Device;
use super::enums::{ComputeMode, EccCounter, EccErrorType, FeatureState};
use crate::Result;
use crate::error::check_nvml;
use crate::nvml_sys::{self, Nvml};

/// A setting's value now and the value it takes at the next reboot or GPU reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CurrentAndPending<T> {
    /// In force now.
    pub current: T,
    /// In force after the next reboot or GPU reset.
    pub pending: T,
}

impl Device {
    /// Whether ECC is on, now and after the next reboot.
    #[doc(alias = "nvmlDeviceGetEccMode")]
    pub fn ecc_mode(&self) -> Result<CurrentAndPending<FeatureState>> {
        let mut current = nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED;
        let mut pending = nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED;
        // SAFETY: the handle is live; both are valid out-pointers.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetEccMode(self.handle, &mut current, &mut pending)
        };
        check_nvml("nvmlDeviceGetEccMode", result)?;
        Ok(CurrentAndPending {
            current: FeatureState(current.0),
            pending: FeatureState(pending.0),
        })
    }

    /// The number of memory errors of `kind` counted by `counter` (since the driver loaded, or
    /// over the GPU's life).
    #[doc(alias = "nvmlDeviceGetTotalEccErrors")]
    pub fn total_ecc_errors(&self, kind: EccErrorType, counter: EccCounter) -> Result<u64> {
        let mut count = 0;
        // SAFETY: the handle is live; `count` is a valid out-pointer; unknown enum values are
        // NVML's invalid-argument error.
        let result = unsafe {
            self.nvml.nvmlDeviceGetTotalEccErrors(
                self.handle,
                nvml_sys::nvmlMemoryErrorType_t(kind.0),
                nvml_sys::nvmlEccCounterType_t(counter.0),
                &mut count,
            )
        };
        check_nvml("nvmlDeviceGetTotalEccErrors", result)?;
        Ok(count)
    }

    /// Whether the driver stays loaded with no client (persistence mode; Linux only).
    #[doc(alias = "nvmlDeviceGetPersistenceMode")]
    pub fn persistence_mode(&self) -> Result<FeatureState> {
        self.query(
            "nvmlDeviceGetPersistenceMode",
            Nvml::nvmlDeviceGetPersistenceMode,
            nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED,
        )
        .map(|mode| FeatureState(mode.0))
    }

    /// Who may create compute contexts on the GPU.
    #[doc(alias = "nvmlDeviceGetComputeMode")]
    pub fn compute_mode(&self) -> Result<ComputeMode> {
        self.query(
            "nvmlDeviceGetComputeMode",
            Nvml::nvmlDeviceGetComputeMode,
            nvml_sys::nvmlComputeMode_t::NVML_COMPUTEMODE_DEFAULT,
        )
        .map(|mode| ComputeMode(mode.0))
    }
}
