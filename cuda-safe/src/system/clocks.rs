//! Clocks: current, maximum and application clocks per domain, and why clocks are held down.

use super::device::Device;
use super::enums::{ClockId, ClockType};
use super::flags::ClockEventReasons;
use crate::Result;
use crate::error::check_nvml;
use crate::nvml_sys::{nvmlClockId_t, nvmlClockType_t};

impl Device {
    /// The clock of `domain` now, in MHz. One NVML call, no allocation.
    #[doc(alias = "nvmlDeviceGetClockInfo")]
    #[inline]
    pub fn clock_mhz(&self, domain: ClockType) -> Result<u32> {
        let mut mhz = 0;
        // SAFETY: the handle is live; `mhz` is a valid out-pointer; an unknown domain is
        // NVML's invalid-argument error.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetClockInfo(self.handle, nvmlClockType_t(domain.0), &mut mhz)
        };
        check_nvml("nvmlDeviceGetClockInfo", result)?;
        Ok(mhz)
    }

    /// The highest clock `domain` can run at, in MHz.
    #[doc(alias = "nvmlDeviceGetMaxClockInfo")]
    pub fn max_clock_mhz(&self, domain: ClockType) -> Result<u32> {
        let mut mhz = 0;
        // SAFETY: as in `clock_mhz`.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetMaxClockInfo(self.handle, nvmlClockType_t(domain.0), &mut mhz)
        };
        check_nvml("nvmlDeviceGetMaxClockInfo", result)?;
        Ok(mhz)
    }

    /// One of the clock values NVML keeps for `domain` (current, application target or
    /// default, customer boost maximum), in MHz.
    #[doc(alias = "nvmlDeviceGetClock")]
    pub fn clock_by_id_mhz(&self, domain: ClockType, id: ClockId) -> Result<u32> {
        let mut mhz = 0;
        // SAFETY: the handle is live; `mhz` is a valid out-pointer; unknown enum values are
        // NVML's invalid-argument error.
        let result = unsafe {
            self.nvml.nvmlDeviceGetClock(
                self.handle,
                nvmlClockType_t(domain.0),
                nvmlClockId_t(id.0),
                &mut mhz,
            )
        };
        check_nvml("nvmlDeviceGetClock", result)?;
        Ok(mhz)
    }

    /// The application clock target of `domain`, in MHz: what the clock runs at under load
    /// unless something holds it down. (`nvmlDeviceGetApplicationsClock` is deprecated; this
    /// asks `nvmlDeviceGetClock` for `NVML_CLOCK_ID_APP_CLOCK_TARGET`.)
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
        let mut bits = 0;
        // SAFETY: the handle is live; `bits` is a valid out-pointer.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetCurrentClocksEventReasons(self.handle, &mut bits)
        };
        // Drivers before CUDA 12.2 know the function by its older name only.
        #[cfg(feature = "cuda-12")]
        let result = match result {
            Err(crate::nvml_sys::LoadError::SymbolMissing { .. }) => {
                // SAFETY: as above.
                unsafe {
                    self.nvml
                        .nvmlDeviceGetCurrentClocksThrottleReasons(self.handle, &mut bits)
                }
            }
            other => other,
        };
        check_nvml("nvmlDeviceGetCurrentClocksEventReasons", result)?;
        Ok(ClockEventReasons::from_bits_retain(bits))
    }

    /// Which clock-event reasons this device can report.
    #[doc(
        alias = "nvmlDeviceGetSupportedClocksEventReasons",
        alias = "nvmlDeviceGetSupportedClocksThrottleReasons"
    )]
    pub fn supported_clock_event_reasons(&self) -> Result<ClockEventReasons> {
        let mut bits = 0;
        // SAFETY: the handle is live; `bits` is a valid out-pointer.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetSupportedClocksEventReasons(self.handle, &mut bits)
        };
        // Drivers before CUDA 12.2 know the function by its older name only.
        #[cfg(feature = "cuda-12")]
        let result = match result {
            Err(crate::nvml_sys::LoadError::SymbolMissing { .. }) => {
                // SAFETY: as above.
                unsafe {
                    self.nvml
                        .nvmlDeviceGetSupportedClocksThrottleReasons(self.handle, &mut bits)
                }
            }
            other => other,
        };
        check_nvml("nvmlDeviceGetSupportedClocksEventReasons", result)?;
        Ok(ClockEventReasons::from_bits_retain(bits))
    }
}
