//! Power: draw, limits, energy, and the performance state.

use super::device::{Device, query};
use super::enums::PerformanceState;
use crate::error::{Result, nvml};

impl Device {
    /// The power the board draws now, in milliwatts. One NVML call, no allocation.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetPowerUsage)]
    #[doc(alias = "nvmlDeviceGetPowerUsage")]
    #[inline]
    pub fn power_usage_mw(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetPowerUsage, 0)
    }

    /// The power limit set by power management, in milliwatts.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetPowerManagementLimit)]
    #[doc(alias = "nvmlDeviceGetPowerManagementLimit")]
    pub fn power_limit_mw(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetPowerManagementLimit, 0,)
    }

    /// The power limit in force (the lowest of every limit that applies), in milliwatts.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetEnforcedPowerLimit)]
    #[doc(alias = "nvmlDeviceGetEnforcedPowerLimit")]
    pub fn enforced_power_limit_mw(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetEnforcedPowerLimit, 0,)
    }

    /// The range the power limit may be set in, `(min, max)`, in milliwatts.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetPowerManagementLimitConstraints)]
    #[doc(alias = "nvmlDeviceGetPowerManagementLimitConstraints")]
    pub fn power_limit_constraints_mw(&self) -> Result<(u32, u32)> {
        let (mut min, mut max) = (0, 0);
        // SAFETY: the handle is live; both are valid out-pointers.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetPowerManagementLimitConstraints(self.handle, &mut min, &mut max)
            )
        }?;
        Ok((min, max))
    }

    /// The energy used since the driver was last loaded, in millijoules.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetTotalEnergyConsumption)]
    #[doc(alias = "nvmlDeviceGetTotalEnergyConsumption")]
    pub fn total_energy_mj(&self) -> Result<u64> {
        query!(self, nvmlDeviceGetTotalEnergyConsumption, 0,)
    }

    /// The performance state now (P0 fastest).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetPerformanceState)]
    #[doc(alias = "nvmlDeviceGetPerformanceState")]
    pub fn performance_state(&self) -> Result<PerformanceState> {
        query!(
            self,
            nvmlDeviceGetPerformanceState,
            nvml_sys::nvmlPstates_t::NVML_PSTATE_UNKNOWN,
        )
        .map(|state| PerformanceState(state.0))
    }
}
