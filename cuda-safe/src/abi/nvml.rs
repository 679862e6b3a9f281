//! NVML: the GPU temperature (`nvmlDeviceGetTemperature` under 12, `...V` under 13).

use crate::error::{Error, Result};
use nvml_sys::{Nvml, nvmlDevice_t};

/// The GPU die temperature in degrees Celsius: `nvmlDeviceGetTemperature` under 12 (every CUDA
/// 12 driver has it), `nvmlDeviceGetTemperatureV` under 13 (which replaces it).
///
/// # Safety
///
/// `device` must be a handle NVML returned, with NVML still initialised.
pub(crate) unsafe fn gpu_temperature(nvml: &'static Nvml, device: nvmlDevice_t) -> Result<i32> {
    let sensor = nvml_sys::nvmlTemperatureSensors_t::NVML_TEMPERATURE_GPU;
    let _ = (nvml, device, sensor);
    nvml_sys::if_abi12! {
        let mut celsius = 0u32;
        // SAFETY: the handle is the caller's promise; `celsius` is a valid out-pointer.
        unsafe {
            crate::error::nvml!(nvml, nvmlDeviceGetTemperature(device, sensor, &mut celsius))
        }?;
        return Ok(i32::try_from(celsius).unwrap_or(i32::MAX));
    }
    nvml_sys::if_abi13! {
        let mut reading = nvml_sys::nvmlTemperature_t {
            version: nvml_sys::nvmlTemperature_v1,
            sensorType: sensor,
            temperature: 0,
        };
        // SAFETY: as above; the struct carries its version.
        unsafe { crate::error::nvml!(nvml, nvmlDeviceGetTemperatureV(device, &mut reading)) }?;
        return Ok(reading.temperature);
    }
    #[allow(unreachable_code)]
    Err(Error::unexpected("nvml-sys", "no ABI selected"))
}
