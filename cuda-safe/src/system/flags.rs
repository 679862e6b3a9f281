//! NVML's bit masks as flag sets that keep bits this crate does not name.
//!
//! ```
//! use cuda_safe::system::ClockEventReasons;
//!
//! // A newer driver's bit survives decoding and is shown as a number.
//! let reasons = ClockEventReasons::from_bits_retain(0x4 | 0x8000);
//! assert!(reasons.contains(ClockEventReasons::SW_POWER_CAP));
//! assert_eq!(reasons.bits(), 0x8004);
//! assert_eq!(reasons.unknown_bits(), 0x8000);
//! ```

bitflags::bitflags! {
    /// Why the clocks are below their maximum (`nvmlClocksEventReason*`, formerly
    /// "throttle reasons"). Bits a newer driver adds are kept: see
    /// [`unknown_bits`](Self::unknown_bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct ClockEventReasons: u64 {
        /// `nvmlClocksEventReasonGpuIdle`: nothing is running.
        const GPU_IDLE = 0x1;
        /// `nvmlClocksEventReasonApplicationsClocksSetting`: application clocks are set lower.
        const APPLICATIONS_CLOCKS_SETTING = 0x2;
        /// `nvmlClocksEventReasonSwPowerCap`: the software power cap.
        const SW_POWER_CAP = 0x4;
        /// `nvmlClocksThrottleReasonHwSlowdown`: hardware slowdown (temperature, power brake).
        const HW_SLOWDOWN = 0x8;
        /// `nvmlClocksEventReasonSyncBoost`: held to the clocks of its sync-boost group.
        const SYNC_BOOST = 0x10;
        /// `nvmlClocksEventReasonSwThermalSlowdown`: software thermal slowdown.
        const SW_THERMAL_SLOWDOWN = 0x20;
        /// `nvmlClocksThrottleReasonHwThermalSlowdown`: hardware thermal slowdown.
        const HW_THERMAL_SLOWDOWN = 0x40;
        /// `nvmlClocksThrottleReasonHwPowerBrakeSlowdown`: the external power brake.
        const HW_POWER_BRAKE_SLOWDOWN = 0x80;
        /// `nvmlClocksEventReasonDisplayClockSetting`: held to the display clocks.
        const DISPLAY_CLOCK_SETTING = 0x100;
        /// `nvmlClocksEventReasonBoardLimit` (CUDA 13 headers): a board-level limit.
        const BOARD_LIMIT = 0x200;
        /// `nvmlClocksEventReasonReliability` (CUDA 13 headers): a reliability limit.
        const RELIABILITY = 0x400;
    }
}

impl ClockEventReasons {
    /// The set bits this crate has no name for (a newer driver's reasons).
    pub const fn unknown_bits(self) -> u64 {
        self.bits() & !Self::all().bits()
    }
}

bitflags::bitflags! {
    /// Kinds of events an [`EventSet`](super::EventSet) can wait for (`nvmlEventType*`).
    /// Bits a newer driver adds are kept: see [`unknown_bits`](Self::unknown_bits).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct EventTypes: u64 {
        /// `nvmlEventTypeSingleBitEccError`: a corrected memory error.
        const SINGLE_BIT_ECC_ERROR = 0x1;
        /// `nvmlEventTypeDoubleBitEccError`: an uncorrected memory error.
        const DOUBLE_BIT_ECC_ERROR = 0x2;
        /// `nvmlEventTypePState`: the performance state changed.
        const PSTATE = 0x4;
        /// `nvmlEventTypeXidCriticalError`: an Xid error; the event data is the Xid.
        const XID_CRITICAL_ERROR = 0x8;
        /// `nvmlEventTypeClock`: a clock changed.
        const CLOCK = 0x10;
        /// `nvmlEventTypePowerSourceChange`: AC/battery change.
        const POWER_SOURCE_CHANGE = 0x80;
        /// `nvmlEventMigConfigChange`: the MIG configuration changed.
        const MIG_CONFIG_CHANGE = 0x100;
        /// `nvmlEventTypeSingleBitEccErrorStorm`: a storm of corrected errors.
        const SINGLE_BIT_ECC_ERROR_STORM = 0x200;
        /// `nvmlEventTypeDramRetirementEvent`: DRAM rows were retired.
        const DRAM_RETIREMENT_EVENT = 0x400;
        /// `nvmlEventTypeDramRetirementFailure`: DRAM retirement failed.
        const DRAM_RETIREMENT_FAILURE = 0x800;
        /// `nvmlEventTypeNonFatalPoisonError`.
        const NON_FATAL_POISON_ERROR = 0x1000;
        /// `nvmlEventTypeFatalPoisonError`.
        const FATAL_POISON_ERROR = 0x2000;
        /// `nvmlEventTypeGpuUnavailableError`: the GPU became unavailable.
        const GPU_UNAVAILABLE_ERROR = 0x4000;
        /// `nvmlEventTypeGpuRecoveryAction`: the driver asks for a recovery action.
        const GPU_RECOVERY_ACTION = 0x8000;
    }
}

impl EventTypes {
    /// The set bits this crate has no name for (a newer driver's event types).
    pub const fn unknown_bits(self) -> u64 {
        self.bits() & !Self::all().bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_sys as sys;

    #[test]
    fn clock_event_bits_match_the_header() {
        let pairs = [
            (
                ClockEventReasons::GPU_IDLE,
                sys::nvmlClocksEventReasonGpuIdle,
            ),
            (
                ClockEventReasons::APPLICATIONS_CLOCKS_SETTING,
                sys::nvmlClocksEventReasonApplicationsClocksSetting,
            ),
            (
                ClockEventReasons::SW_POWER_CAP,
                sys::nvmlClocksEventReasonSwPowerCap,
            ),
            (
                ClockEventReasons::HW_SLOWDOWN,
                sys::nvmlClocksThrottleReasonHwSlowdown,
            ),
            (
                ClockEventReasons::SYNC_BOOST,
                sys::nvmlClocksEventReasonSyncBoost,
            ),
            (
                ClockEventReasons::SW_THERMAL_SLOWDOWN,
                sys::nvmlClocksEventReasonSwThermalSlowdown,
            ),
            (
                ClockEventReasons::HW_THERMAL_SLOWDOWN,
                sys::nvmlClocksThrottleReasonHwThermalSlowdown,
            ),
            (
                ClockEventReasons::HW_POWER_BRAKE_SLOWDOWN,
                sys::nvmlClocksThrottleReasonHwPowerBrakeSlowdown,
            ),
            (
                ClockEventReasons::DISPLAY_CLOCK_SETTING,
                sys::nvmlClocksEventReasonDisplayClockSetting,
            ),
        ];
        for (flag, raw) in pairs {
            assert_eq!(flag.bits(), u64::from(raw), "{flag:?}");
        }
        // Every bit the selected header lists has a name here.
        assert_eq!(
            ClockEventReasons::from_bits_retain(sys::nvmlClocksEventReasonAll).unknown_bits(),
            0
        );
    }

    #[test]
    fn event_type_bits_match_the_header() {
        assert_eq!(
            EventTypes::XID_CRITICAL_ERROR.bits(),
            u64::from(sys::nvmlEventTypeXidCriticalError)
        );
        assert_eq!(
            EventTypes::MIG_CONFIG_CHANGE.bits(),
            u64::from(sys::nvmlEventMigConfigChange)
        );
        assert_eq!(
            EventTypes::GPU_RECOVERY_ACTION.bits(),
            u64::from(sys::nvmlEventTypeGpuRecoveryAction)
        );
        // Every bit the selected header lists has a name here.
        assert_eq!(EventTypes::all().bits(), u64::from(sys::nvmlEventTypeAll));
    }

    #[test]
    fn unknown_bits_survive_decoding() {
        let raw = 0x8000_0000_0000_0000 | 0x40 | 0x1;
        let reasons = ClockEventReasons::from_bits_retain(raw);
        assert_eq!(reasons.bits(), raw);
        assert!(reasons.contains(ClockEventReasons::HW_THERMAL_SLOWDOWN));
        assert!(reasons.contains(ClockEventReasons::GPU_IDLE));
        assert!(!reasons.contains(ClockEventReasons::SW_POWER_CAP));
        assert_eq!(reasons.unknown_bits(), 0x8000_0000_0000_0000);
        let named: Vec<&str> = reasons.iter_names().map(|(name, _)| name).collect();
        assert_eq!(named, ["GPU_IDLE", "HW_THERMAL_SLOWDOWN"]);

        let events = EventTypes::from_bits_retain(1 << 40 | 0x8);
        assert!(events.contains(EventTypes::XID_CRITICAL_ERROR));
        assert_eq!(events.unknown_bits(), 1 << 40);
        assert_eq!(ClockEventReasons::empty().unknown_bits(), 0);
    }
}
