//! Temperature, temperature thresholds and fans.

use super::device::Device;
use super::enums::TemperatureThreshold;
use crate::Result;
use crate::nvml_sys::{self, Nvml};

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
            self.query_with(
                "nvmlDeviceGetTemperature",
                Nvml::nvmlDeviceGetTemperature,
                nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU,
                0,
            )
            .map(|celsius| i32::try_from(celsius).unwrap_or(i32::MAX))
        }
        #[cfg(not(feature = "cuda-12"))]
        {
            let reading = nvml_sys::nvmlTemperature_t {
                version: nvml_sys::nvmlTemperature_v1,
                sensorType: nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU,
                temperature: 0,
            };
            self.query(
                "nvmlDeviceGetTemperatureV",
                Nvml::nvmlDeviceGetTemperatureV,
                reading,
            )
            .map(|reading| reading.temperature)
        }
    }

    /// A temperature threshold, in degrees Celsius.
    #[doc(alias = "nvmlDeviceGetTemperatureThreshold")]
    pub fn temperature_threshold_c(&self, threshold: TemperatureThreshold) -> Result<u32> {
        // An unknown threshold is NVML's invalid-argument error.
        self.query_with(
            "nvmlDeviceGetTemperatureThreshold",
            Nvml::nvmlDeviceGetTemperatureThreshold,
            nvml_sys::nvmlTemperatureThresholds_t(threshold.0),
            0,
        )
    }

    /// How many fans the board has (not supported on passively cooled boards).
    #[doc(alias = "nvmlDeviceGetNumFans")]
    pub fn fan_count(&self) -> Result<u32> {
        self.query("nvmlDeviceGetNumFans", Nvml::nvmlDeviceGetNumFans, 0)
    }

    /// The speed fan `fan` is asked to run at, in percent of its maximum.
    #[doc(alias = "nvmlDeviceGetFanSpeed_v2")]
    pub fn fan_speed_percent(&self, fan: u32) -> Result<u32> {
        // A fan index out of range is NVML's invalid-argument error.
        self.query_with(
            "nvmlDeviceGetFanSpeed_v2",
            Nvml::nvmlDeviceGetFanSpeed_v2,
            fan,
            0,
        )
    }
}
