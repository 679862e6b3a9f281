//! Modes and reliability: ECC mode and error counts, persistence mode, compute mode.

use super::device::{Device, query};
use super::enums::{ComputeMode, EccCounter, EccErrorType, FeatureState};
use crate::error::{Result, nvml};

/// A setting's value now and the value it takes at the next reboot or GPU reset.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CurrentAndPending<T> {
    /// In force now.
    pub current: T,
    /// In force after the next reboot or GPU reset.
    pub pending: T,
}

impl Device {
    /// Whether ECC is on, now and after the next reboot.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetEccMode)]
    #[doc(alias = "nvmlDeviceGetEccMode")]
    pub fn ecc_mode(&self) -> Result<CurrentAndPending<FeatureState>> {
        let mut current = nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED;
        let mut pending = nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED;
        // SAFETY: the handle is live; both are valid out-pointers.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetEccMode(self.handle, &mut current, &mut pending)
            )
        }?;
        Ok(CurrentAndPending {
            current: FeatureState(current.0),
            pending: FeatureState(pending.0),
        })
    }

    /// The number of memory errors of `kind` counted by `counter` (since the driver loaded, or
    /// over the GPU's life).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetTotalEccErrors)]
    #[doc(alias = "nvmlDeviceGetTotalEccErrors")]
    pub fn total_ecc_errors(&self, kind: EccErrorType, counter: EccCounter) -> Result<u64> {
        let mut count = 0;
        // SAFETY: the handle is live; `count` is a valid out-pointer; unknown enum values are
        // NVML's invalid-argument error.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetTotalEccErrors(
                    self.handle,
                    nvml_sys::nvmlMemoryErrorType_t(kind.0),
                    nvml_sys::nvmlEccCounterType_t(counter.0),
                    &mut count,
                )
            )
        }?;
        Ok(count)
    }

    /// Whether the driver stays loaded with no client (persistence mode; Linux only).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetPersistenceMode)]
    #[doc(alias = "nvmlDeviceGetPersistenceMode")]
    pub fn persistence_mode(&self) -> Result<FeatureState> {
        query!(
            self,
            nvmlDeviceGetPersistenceMode,
            nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED,
        )
        .map(|mode| FeatureState(mode.0))
    }

    /// Who may create compute contexts on the GPU.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetComputeMode)]
    #[doc(alias = "nvmlDeviceGetComputeMode")]
    pub fn compute_mode(&self) -> Result<ComputeMode> {
        query!(
            self,
            nvmlDeviceGetComputeMode,
            nvml_sys::nvmlComputeMode_t::NVML_COMPUTEMODE_DEFAULT,
        )
        .map(|mode| ComputeMode(mode.0))
    }
}
