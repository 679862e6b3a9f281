//! Clocks: current, maximum and application clocks per domain, and why clocks are held down.

use super::device::{Device, query, query_with};
use super::enums::{ClockId, ClockType};
use super::flags::ClockEventReasons;
use crate::error::{Result, nvml};
use nvml_sys::{nvmlClockId_t, nvmlClockType_t};

impl Device {
    /// The clock of `domain` now, in MHz. One NVML call, no allocation.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetClockInfo)]
    #[doc(alias = "nvmlDeviceGetClockInfo")]
    #[inline]
    pub fn clock_mhz(&self, domain: ClockType) -> Result<u32> {
        // An unknown domain is NVML's invalid-argument error.
        query_with!(self, nvmlDeviceGetClockInfo, nvmlClockType_t(domain.0), 0,)
    }

    /// The highest clock `domain` can run at, in MHz.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMaxClockInfo)]
    #[doc(alias = "nvmlDeviceGetMaxClockInfo")]
    pub fn max_clock_mhz(&self, domain: ClockType) -> Result<u32> {
        query_with!(
            self,
            nvmlDeviceGetMaxClockInfo,
            nvmlClockType_t(domain.0),
            0,
        )
    }

    /// One of the clock values NVML keeps for `domain` (current, application target or
    /// default, customer boost maximum), in MHz.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetClock)]
    #[doc(alias = "nvmlDeviceGetClock")]
    pub fn clock_by_id_mhz(&self, domain: ClockType, id: ClockId) -> Result<u32> {
        let mut mhz = 0;
        // SAFETY: the handle is live; `mhz` is a valid out-pointer; unknown enum values are
        // NVML's invalid-argument error.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetClock(
                    self.handle,
                    nvmlClockType_t(domain.0),
                    nvmlClockId_t(id.0),
                    &mut mhz,
                )
            )
        }?;
        Ok(mhz)
    }

    /// The application clock target of `domain`, in MHz: what the clock runs at under load
    /// unless something holds it down. (`nvmlDeviceGetApplicationsClock` is deprecated; this
    /// asks `nvmlDeviceGetClock` for `NVML_CLOCK_ID_APP_CLOCK_TARGET`.)
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetClock)]
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetApplicationsClock)]
    #[doc(alias = "nvmlDeviceGetClock", alias = "nvmlDeviceGetApplicationsClock")]
    pub fn applications_clock_mhz(&self, domain: ClockType) -> Result<u32> {
        self.clock_by_id_mhz(domain, ClockId::APP_CLOCK_TARGET)
    }

    /// Why the clocks are below their maximum now; bits this crate does not name are kept.
    #[doc(
        alias = "nvmlDeviceGetCurrentClocksEventReasons",
        alias = "nvmlDeviceGetCurrentClocksThrottleReasons"
    )]
    pub fn clock_event_reasons(&self) -> Result<ClockEventReasons> {
        let bits = match query!(self, nvmlDeviceGetCurrentClocksEventReasons, 0) {
            Err(error) if error.is_symbol_missing() => {
                query!(self, nvmlDeviceGetCurrentClocksThrottleReasons, 0)
            }
            other => other,
        }?;
        Ok(ClockEventReasons::from_bits_retain(bits))
    }

    /// Which clock-event reasons this device can report.
    ///
    /// Both calls fall back to the same function under its older "throttle reasons" name when
    /// the driver lacks the current one (drivers before CUDA 12.2 export only that; a CUDA 13
    /// driver always has the current one).
    #[doc(
        alias = "nvmlDeviceGetSupportedClocksEventReasons",
        alias = "nvmlDeviceGetSupportedClocksThrottleReasons"
    )]
    pub fn supported_clock_event_reasons(&self) -> Result<ClockEventReasons> {
        let bits = match query!(self, nvmlDeviceGetSupportedClocksEventReasons, 0) {
            Err(error) if error.is_symbol_missing() => {
                query!(self, nvmlDeviceGetSupportedClocksThrottleReasons, 0)
            }
            other => other,
        }?;
        Ok(ClockEventReasons::from_bits_retain(bits))
    }
}

#[cfg(test)]
mod tests {
    use super::super::init::guard_without_symbols;
    use super::*;
    use crate::error::Error;
    use nvml_sys::LoadError;

    /// A device over NVML entry points none of which exist: every call stops at the loader.
    fn device_without_nvml() -> Device {
        Device::from_handle(std::ptr::null_mut(), guard_without_symbols())
    }

    fn missing_symbol(error: &Error) -> &'static str {
        match error {
            Error::Load(LoadError::SymbolMissing { symbol, .. }) => symbol,
            other => panic!("not a missing symbol: {other:?}"),
        }
    }

    #[test]
    fn clock_event_reasons_fall_back_to_the_throttle_reasons_name() {
        let device = device_without_nvml();
        // The current name is missing, so the older one is asked (and is missing too).
        let error = device.clock_event_reasons().unwrap_err();
        assert_eq!(
            missing_symbol(&error),
            "nvmlDeviceGetCurrentClocksThrottleReasons"
        );
        let error = device.supported_clock_event_reasons().unwrap_err();
        assert_eq!(
            missing_symbol(&error),
            "nvmlDeviceGetSupportedClocksThrottleReasons"
        );
    }

    #[test]
    fn getters_call_the_function_they_name() {
        let device = device_without_nvml();
        let error = device.clock_mhz(ClockType::SM).unwrap_err();
        assert_eq!(missing_symbol(&error), "nvmlDeviceGetClockInfo");
        let error = device.max_clock_mhz(ClockType::SM).unwrap_err();
        assert_eq!(missing_symbol(&error), "nvmlDeviceGetMaxClockInfo");
        let error = device.power_usage_mw().unwrap_err();
        assert_eq!(missing_symbol(&error), "nvmlDeviceGetPowerUsage");
        let error = device.memory_info().unwrap_err();
        assert_eq!(missing_symbol(&error), "nvmlDeviceGetMemoryInfo_v2");
        let error = device.nvlink_state(0).unwrap_err();
        assert_eq!(missing_symbol(&error), "nvmlDeviceGetNvLinkState");
        let error = device.mig_device(0).unwrap_err();
        assert_eq!(
            missing_symbol(&error),
            "nvmlDeviceGetMigDeviceHandleByIndex"
        );
    }
}
