//! Temperature, temperature thresholds and fans.

use super::device::{Device, query, query_with};
use super::enums::TemperatureThreshold;
use crate::abi;
use crate::error::Result;

impl Device {
    /// The GPU die temperature, in degrees Celsius. One NVML call, no allocation.
    ///
    /// Under the `cuda-12` ABI this calls `nvmlDeviceGetTemperature`, which every CUDA 12
    /// driver has; under `cuda-13`, `nvmlDeviceGetTemperatureV`, which replaces it.
    #[doc(
        alias = "nvmlDeviceGetTemperature",
        alias = "nvmlDeviceGetTemperatureV"
    )]
    #[inline]
    pub fn temperature_c(&self) -> Result<i32> {
        // SAFETY: the handle is live while `self` holds NVML.
        unsafe { abi::gpu_temperature(self.nvml, self.handle) }
    }

    /// A temperature threshold, in degrees Celsius.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetTemperatureThreshold)]
    #[doc(alias = "nvmlDeviceGetTemperatureThreshold")]
    pub fn temperature_threshold_c(&self, threshold: TemperatureThreshold) -> Result<u32> {
        // An unknown threshold is NVML's invalid-argument error.
        query_with!(
            self,
            nvmlDeviceGetTemperatureThreshold,
            nvml_sys::nvmlTemperatureThresholds_t(threshold.0),
            0,
        )
    }

    /// How many fans the board has (not supported on passively cooled boards).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetNumFans)]
    #[doc(alias = "nvmlDeviceGetNumFans")]
    pub fn fan_count(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetNumFans, 0)
    }

    /// The speed fan `fan` is asked to run at, in percent of its maximum.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetFanSpeed_v2)]
    #[doc(alias = "nvmlDeviceGetFanSpeed_v2")]
    pub fn fan_speed_percent(&self, fan: u32) -> Result<u32> {
        // A fan index out of range is NVML's invalid-argument error.
        query_with!(self, nvmlDeviceGetFanSpeed_v2, fan, 0,)
    }
}
