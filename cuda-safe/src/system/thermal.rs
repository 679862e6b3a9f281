//! Temperature, temperature thresholds and fans.

use super::device::Device;
use super::enums::TemperatureThreshold;
use crate::Result;
use crate::error::check_nvml;
use crate::nvml_sys;

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
        #[cfg(feature = "cuda-12")]
        {
            let mut celsius = 0;
            // SAFETY: the handle is live; `celsius` is a valid out-pointer.
            let result = unsafe {
                self.nvml.nvmlDeviceGetTemperature(
                    self.handle,
                    nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU,
                    &mut celsius,
                )
            };
            check_nvml("nvmlDeviceGetTemperature", result)?;
            Ok(i32::try_from(celsius).unwrap_or(i32::MAX))
        }
        #[cfg(not(feature = "cuda-12"))]
        {
            let mut reading = nvml_sys::nvmlTemperature_t {
                version: nvml_sys::nvmlTemperature_v1,
                sensorType: nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU,
                temperature: 0,
            };
            // SAFETY: the handle is live; `reading` is a valid, versioned out-pointer.
            let result = unsafe {
                self.nvml
                    .nvmlDeviceGetTemperatureV(self.handle, &mut reading)
            };
            check_nvml("nvmlDeviceGetTemperatureV", result)?;
            Ok(reading.temperature)
        }
    }

    /// A temperature threshold, in degrees Celsius.
    #[doc(alias = "nvmlDeviceGetTemperatureThreshold")]
    pub fn temperature_threshold_c(&self, threshold: TemperatureThreshold) -> Result<u32> {
        let mut celsius = 0;
        // SAFETY: the handle is live; `celsius` is a valid out-pointer; an unknown threshold
        // is NVML's invalid-argument error.
        let result = unsafe {
            self.nvml.nvmlDeviceGetTemperatureThreshold(
                self.handle,
                nvml_sys::nvmlTemperatureThresholds_t(threshold.0),
                &mut celsius,
            )
        };
        check_nvml("nvmlDeviceGetTemperatureThreshold", result)?;
        Ok(celsius)
    }

    /// How many fans the board has (not supported on passively cooled boards).
    #[doc(alias = "nvmlDeviceGetNumFans")]
    pub fn fan_count(&self) -> Result<u32> {
        let mut fans = 0;
        // SAFETY: the handle is live; `fans` is a valid out-pointer.
        let result = unsafe { self.nvml.nvmlDeviceGetNumFans(self.handle, &mut fans) };
        check_nvml("nvmlDeviceGetNumFans", result)?;
        Ok(fans)
    }

    /// The speed fan `fan` is asked to run at, in percent of its maximum.
    #[doc(alias = "nvmlDeviceGetFanSpeed_v2")]
    pub fn fan_speed_percent(&self, fan: u32) -> Result<u32> {
        let mut percent = 0;
        // SAFETY: the handle is live; `percent` is a valid out-pointer; a fan index out of
        // range is NVML's invalid-argument error.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetFanSpeed_v2(self.handle, fan, &mut percent)
        };
        check_nvml("nvmlDeviceGetFanSpeed_v2", result)?;
        Ok(percent)
    }
}
