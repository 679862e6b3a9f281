//! NVML's enumerations as open newtypes: a value the header does not list (a newer driver's)
//! is kept as its number, never undefined behaviour.
//!
//! ```
//! use cuda_safe::system::{Architecture, PerformanceState};
//!
//! assert_eq!(Architecture::HOPPER.to_string(), "Hopper");
//! assert_eq!(Architecture(99).name(), None);
//! assert_eq!(Architecture(99).to_string(), "unknown (99)");
//! assert_eq!(PerformanceState::P0.number(), Some(0));
//! ```

use std::fmt;

/// Defines an open newtype over `u32` with named constants and their display names.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $($(#[$konst_meta:meta])* $konst:ident = $value:literal => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            $($(#[$konst_meta])* pub const $konst: Self = Self($value);)*

            /// The value's name, or `None` for a value this crate does not list.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($text),)*
                    _ => None,
                }
            }
        }

        /// As its name (`"Hopper"`), or `"unknown (N)"` for a value this crate does not list.
        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "unknown ({})", self.0),
                }
            }
        }
    };
}

open_enum! {
    /// A product brand (`nvmlBrandType_t`).
    Brand {
        /// `NVML_BRAND_UNKNOWN`.
        UNKNOWN = 0 => "Unknown",
        /// `NVML_BRAND_QUADRO`.
        QUADRO = 1 => "Quadro",
        /// `NVML_BRAND_TESLA`: data-centre GPUs.
        TESLA = 2 => "Tesla",
        /// `NVML_BRAND_NVS`.
        NVS = 3 => "NVS",
        /// `NVML_BRAND_GRID`.
        GRID = 4 => "GRID",
        /// `NVML_BRAND_GEFORCE`.
        GEFORCE = 5 => "GeForce",
        /// `NVML_BRAND_TITAN`.
        TITAN = 6 => "Titan",
        /// `NVML_BRAND_NVIDIA_VAPPS`.
        NVIDIA_VAPPS = 7 => "NVIDIA Virtual Applications",
        /// `NVML_BRAND_NVIDIA_VPC`.
        NVIDIA_VPC = 8 => "NVIDIA Virtual PC",
        /// `NVML_BRAND_NVIDIA_VCS`.
        NVIDIA_VCS = 9 => "NVIDIA Virtual Compute Server",
        /// `NVML_BRAND_NVIDIA_VWS`.
        NVIDIA_VWS = 10 => "NVIDIA RTX Virtual Workstation",
        /// `NVML_BRAND_NVIDIA_CLOUD_GAMING` (also `NVML_BRAND_NVIDIA_VGAMING`).
        NVIDIA_CLOUD_GAMING = 11 => "NVIDIA Cloud Gaming",
        /// `NVML_BRAND_QUADRO_RTX`.
        QUADRO_RTX = 12 => "Quadro RTX",
        /// `NVML_BRAND_NVIDIA_RTX`.
        NVIDIA_RTX = 13 => "NVIDIA RTX",
        /// `NVML_BRAND_NVIDIA`.
        NVIDIA = 14 => "NVIDIA",
        /// `NVML_BRAND_GEFORCE_RTX`.
        GEFORCE_RTX = 15 => "GeForce RTX",
        /// `NVML_BRAND_TITAN_RTX`.
        TITAN_RTX = 16 => "Titan RTX",
    }
}

open_enum! {
    /// A GPU architecture (`nvmlDeviceArchitecture_t`).
    Architecture {
        /// `NVML_DEVICE_ARCH_KEPLER`.
        KEPLER = 2 => "Kepler",
        /// `NVML_DEVICE_ARCH_MAXWELL`.
        MAXWELL = 3 => "Maxwell",
        /// `NVML_DEVICE_ARCH_PASCAL`.
        PASCAL = 4 => "Pascal",
        /// `NVML_DEVICE_ARCH_VOLTA`.
        VOLTA = 5 => "Volta",
        /// `NVML_DEVICE_ARCH_TURING`.
        TURING = 6 => "Turing",
        /// `NVML_DEVICE_ARCH_AMPERE`.
        AMPERE = 7 => "Ampere",
        /// `NVML_DEVICE_ARCH_ADA`.
        ADA = 8 => "Ada",
        /// `NVML_DEVICE_ARCH_HOPPER`.
        HOPPER = 9 => "Hopper",
        /// `NVML_DEVICE_ARCH_BLACKWELL`.
        BLACKWELL = 10 => "Blackwell",
        /// `NVML_DEVICE_ARCH_RUBIN` (CUDA 13 headers).
        RUBIN = 13 => "Rubin",
        /// `NVML_DEVICE_ARCH_UNKNOWN`.
        UNKNOWN = 0xFFFF_FFFF => "Unknown",
    }
}

open_enum! {
    /// A performance state (`nvmlPstates_t`): P0 is the fastest, P15 the slowest.
    PerformanceState {
        /// `NVML_PSTATE_0`: maximum performance.
        P0 = 0 => "P0",
        /// `NVML_PSTATE_1`.
        P1 = 1 => "P1",
        /// `NVML_PSTATE_2`.
        P2 = 2 => "P2",
        /// `NVML_PSTATE_3`.
        P3 = 3 => "P3",
        /// `NVML_PSTATE_4`.
        P4 = 4 => "P4",
        /// `NVML_PSTATE_5`.
        P5 = 5 => "P5",
        /// `NVML_PSTATE_6`.
        P6 = 6 => "P6",
        /// `NVML_PSTATE_7`.
        P7 = 7 => "P7",
        /// `NVML_PSTATE_8`.
        P8 = 8 => "P8",
        /// `NVML_PSTATE_9`.
        P9 = 9 => "P9",
        /// `NVML_PSTATE_10`.
        P10 = 10 => "P10",
        /// `NVML_PSTATE_11`.
        P11 = 11 => "P11",
        /// `NVML_PSTATE_12`.
        P12 = 12 => "P12",
        /// `NVML_PSTATE_13`.
        P13 = 13 => "P13",
        /// `NVML_PSTATE_14`.
        P14 = 14 => "P14",
        /// `NVML_PSTATE_15`: minimum performance.
        P15 = 15 => "P15",
        /// `NVML_PSTATE_UNKNOWN`.
        UNKNOWN = 32 => "unknown",
    }
}

impl PerformanceState {
    /// The state's number (`Some(2)` for P2), or `None` outside P0..=P15.
    pub const fn number(self) -> Option<u32> {
        if self.0 <= 15 { Some(self.0) } else { None }
    }
}

open_enum! {
    /// Who may create contexts on a GPU (`nvmlComputeMode_t`).
    ComputeMode {
        /// `NVML_COMPUTEMODE_DEFAULT`: any number of contexts from any process.
        DEFAULT = 0 => "Default",
        /// `NVML_COMPUTEMODE_EXCLUSIVE_THREAD` (no longer supported by drivers).
        EXCLUSIVE_THREAD = 1 => "Exclusive thread",
        /// `NVML_COMPUTEMODE_PROHIBITED`: no compute contexts.
        PROHIBITED = 2 => "Prohibited",
        /// `NVML_COMPUTEMODE_EXCLUSIVE_PROCESS`: one process at a time.
        EXCLUSIVE_PROCESS = 3 => "Exclusive process",
    }
}

open_enum! {
    /// Whether a feature is on (`nvmlEnableState_t`; also MIG's `NVML_DEVICE_MIG_*`).
    FeatureState {
        /// `NVML_FEATURE_DISABLED`.
        DISABLED = 0 => "Disabled",
        /// `NVML_FEATURE_ENABLED`.
        ENABLED = 1 => "Enabled",
    }
}

impl FeatureState {
    /// Whether this is [`FeatureState::ENABLED`].
    pub const fn is_enabled(self) -> bool {
        self.0 == Self::ENABLED.0
    }
}

open_enum! {
    /// The closest link two GPUs share in the system's topology (`nvmlGpuTopologyLevel_t`).
    TopologyLevel {
        /// `NVML_TOPOLOGY_INTERNAL`: the same board (multi-GPU boards).
        INTERNAL = 0 => "Internal",
        /// `NVML_TOPOLOGY_SINGLE`: one PCIe switch.
        SINGLE = 10 => "Single PCIe switch",
        /// `NVML_TOPOLOGY_MULTIPLE`: several PCIe switches, no host bridge.
        MULTIPLE = 20 => "Multiple PCIe switches",
        /// `NVML_TOPOLOGY_HOSTBRIDGE`: one host bridge.
        HOSTBRIDGE = 30 => "Host bridge",
        /// `NVML_TOPOLOGY_NODE`: one NUMA node (also `NVML_TOPOLOGY_CPU`).
        NODE = 40 => "NUMA node",
        /// `NVML_TOPOLOGY_SYSTEM`: across NUMA nodes (SMP interconnect).
        SYSTEM = 50 => "System",
    }
}

open_enum! {
    /// A kind of peer-to-peer access between two GPUs (`nvmlGpuP2PCapsIndex_t`).
    P2pCapability {
        /// `NVML_P2P_CAPS_INDEX_READ`.
        READ = 0 => "Read",
        /// `NVML_P2P_CAPS_INDEX_WRITE`.
        WRITE = 1 => "Write",
        /// `NVML_P2P_CAPS_INDEX_NVLINK`.
        NVLINK = 2 => "NVLink",
        /// `NVML_P2P_CAPS_INDEX_ATOMICS`.
        ATOMICS = 3 => "Atomics",
        /// `NVML_P2P_CAPS_INDEX_PCI` (also `NVML_P2P_CAPS_INDEX_PROP`).
        PCI = 4 => "PCI",
    }
}

open_enum! {
    /// Whether two GPUs can access each other (`nvmlGpuP2PStatus_t`).
    P2pStatus {
        /// `NVML_P2P_STATUS_OK`.
        OK = 0 => "OK",
        /// `NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED`.
        CHIPSET_NOT_SUPPORTED = 1 => "Chipset not supported",
        /// `NVML_P2P_STATUS_GPU_NOT_SUPPORTED`.
        GPU_NOT_SUPPORTED = 2 => "GPU not supported",
        /// `NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED`.
        IOH_TOPOLOGY_NOT_SUPPORTED = 3 => "IOH topology not supported",
        /// `NVML_P2P_STATUS_DISABLED_BY_REGKEY`.
        DISABLED_BY_REGKEY = 4 => "Disabled by registry key",
        /// `NVML_P2P_STATUS_NOT_SUPPORTED`.
        NOT_SUPPORTED = 5 => "Not supported",
        /// `NVML_P2P_STATUS_UNKNOWN`.
        UNKNOWN = 6 => "Unknown",
    }
}

impl P2pStatus {
    /// Whether the access is possible ([`P2pStatus::OK`]).
    pub const fn is_ok(self) -> bool {
        self.0 == Self::OK.0
    }
}

open_enum! {
    /// A clock domain (`nvmlClockType_t`).
    ClockType {
        /// `NVML_CLOCK_GRAPHICS`.
        GRAPHICS = 0 => "Graphics",
        /// `NVML_CLOCK_SM`.
        SM = 1 => "SM",
        /// `NVML_CLOCK_MEM`.
        MEMORY = 2 => "Memory",
        /// `NVML_CLOCK_VIDEO`.
        VIDEO = 3 => "Video",
    }
}

open_enum! {
    /// Which value of a clock to read (`nvmlClockId_t`).
    ClockId {
        /// `NVML_CLOCK_ID_CURRENT`: the clock now.
        CURRENT = 0 => "Current",
        /// `NVML_CLOCK_ID_APP_CLOCK_TARGET`: the application clock target.
        APP_CLOCK_TARGET = 1 => "Application clock target",
        /// `NVML_CLOCK_ID_APP_CLOCK_DEFAULT`: the default application clock target.
        APP_CLOCK_DEFAULT = 2 => "Application clock default",
        /// `NVML_CLOCK_ID_CUSTOMER_BOOST_MAX`: the OEM-defined maximum.
        CUSTOMER_BOOST_MAX = 3 => "Customer boost maximum",
    }
}

open_enum! {
    /// A temperature threshold (`nvmlTemperatureThresholds_t`).
    TemperatureThreshold {
        /// `NVML_TEMPERATURE_THRESHOLD_SHUTDOWN`: the GPU shuts down.
        SHUTDOWN = 0 => "Shutdown",
        /// `NVML_TEMPERATURE_THRESHOLD_SLOWDOWN`: the GPU slows down.
        SLOWDOWN = 1 => "Slowdown",
        /// `NVML_TEMPERATURE_THRESHOLD_MEM_MAX`: the memory's maximum operating temperature.
        MEM_MAX = 2 => "Memory maximum",
        /// `NVML_TEMPERATURE_THRESHOLD_GPU_MAX`: the GPU's maximum operating temperature.
        GPU_MAX = 3 => "GPU maximum",
        /// `NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN`.
        ACOUSTIC_MIN = 4 => "Acoustic minimum",
        /// `NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR`.
        ACOUSTIC_CURR = 5 => "Acoustic current",
        /// `NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX`.
        ACOUSTIC_MAX = 6 => "Acoustic maximum",
        /// `NVML_TEMPERATURE_THRESHOLD_GPS_CURR`.
        GPS_CURR = 7 => "GPS current",
    }
}

open_enum! {
    /// Corrected or uncorrected memory errors (`nvmlMemoryErrorType_t`).
    EccErrorType {
        /// `NVML_MEMORY_ERROR_TYPE_CORRECTED` (single-bit).
        CORRECTED = 0 => "Corrected",
        /// `NVML_MEMORY_ERROR_TYPE_UNCORRECTED` (double-bit).
        UNCORRECTED = 1 => "Uncorrected",
    }
}

open_enum! {
    /// Which ECC counter to read (`nvmlEccCounterType_t`).
    EccCounter {
        /// `NVML_VOLATILE_ECC`: since the driver was loaded.
        VOLATILE = 0 => "Volatile",
        /// `NVML_AGGREGATE_ECC`: over the GPU's life.
        AGGREGATE = 1 => "Aggregate",
    }
}

open_enum! {
    /// A PCIe throughput direction (`nvmlPcieUtilCounter_t`).
    PcieCounter {
        /// `NVML_PCIE_UTIL_TX_BYTES`: sent by the GPU.
        TX_BYTES = 0 => "TX",
        /// `NVML_PCIE_UTIL_RX_BYTES`: received by the GPU.
        RX_BYTES = 1 => "RX",
    }
}

open_enum! {
    /// An NVLink version (`nvmlNvlinkVersion_t`).
    NvLinkVersion {
        /// `NVML_NVLINK_VERSION_INVALID`.
        INVALID = 0 => "invalid",
        /// `NVML_NVLINK_VERSION_1_0`.
        V1_0 = 1 => "1.0",
        /// `NVML_NVLINK_VERSION_2_0`.
        V2_0 = 2 => "2.0",
        /// `NVML_NVLINK_VERSION_2_2`.
        V2_2 = 3 => "2.2",
        /// `NVML_NVLINK_VERSION_3_0`.
        V3_0 = 4 => "3.0",
        /// `NVML_NVLINK_VERSION_3_1`.
        V3_1 = 5 => "3.1",
        /// `NVML_NVLINK_VERSION_4_0`.
        V4_0 = 6 => "4.0",
        /// `NVML_NVLINK_VERSION_5_0`.
        V5_0 = 7 => "5.0",
        /// `NVML_NVLINK_VERSION_6_0` (CUDA 13 headers).
        V6_0 = 8 => "6.0",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_sys as sys;

    #[test]
    fn constants_match_the_header() {
        assert_eq!(Brand::TESLA.0, sys::nvmlBrandType_t::NVML_BRAND_TESLA.0);
        assert_eq!(
            Brand::TITAN_RTX.0,
            sys::nvmlBrandType_t::NVML_BRAND_TITAN_RTX.0
        );
        assert_eq!(Architecture::HOPPER.0, sys::NVML_DEVICE_ARCH_HOPPER);
        assert_eq!(Architecture::BLACKWELL.0, sys::NVML_DEVICE_ARCH_BLACKWELL);
        assert_eq!(Architecture::UNKNOWN.0, sys::NVML_DEVICE_ARCH_UNKNOWN);
        assert_eq!(
            PerformanceState::P15.0,
            sys::nvmlPstates_t::NVML_PSTATE_15.0
        );
        assert_eq!(
            PerformanceState::UNKNOWN.0,
            sys::nvmlPstates_t::NVML_PSTATE_UNKNOWN.0
        );
        assert_eq!(
            ComputeMode::EXCLUSIVE_PROCESS.0,
            sys::nvmlComputeMode_t::NVML_COMPUTEMODE_EXCLUSIVE_PROCESS.0
        );
        assert_eq!(
            FeatureState::ENABLED.0,
            sys::nvmlEnableState_t::NVML_FEATURE_ENABLED.0
        );
        assert_eq!(FeatureState::ENABLED.0, sys::NVML_DEVICE_MIG_ENABLE);
        assert_eq!(
            TopologyLevel::SYSTEM.0,
            sys::nvmlGpuTopologyLevel_t::NVML_TOPOLOGY_SYSTEM.0
        );
        assert_eq!(
            P2pCapability::PCI.0,
            sys::nvmlGpuP2PCapsIndex_t::NVML_P2P_CAPS_INDEX_PCI.0
        );
        assert_eq!(
            P2pStatus::UNKNOWN.0,
            sys::nvmlGpuP2PStatus_t::NVML_P2P_STATUS_UNKNOWN.0
        );
        assert_eq!(ClockType::MEMORY.0, sys::nvmlClockType_t::NVML_CLOCK_MEM.0);
        assert_eq!(
            ClockId::CUSTOMER_BOOST_MAX.0,
            sys::nvmlClockId_t::NVML_CLOCK_ID_CUSTOMER_BOOST_MAX.0
        );
        assert_eq!(
            TemperatureThreshold::GPS_CURR.0,
            sys::nvmlTemperatureThresholds_t::NVML_TEMPERATURE_THRESHOLD_GPS_CURR.0
        );
        assert_eq!(
            EccErrorType::UNCORRECTED.0,
            sys::nvmlMemoryErrorType_t::NVML_MEMORY_ERROR_TYPE_UNCORRECTED.0
        );
        assert_eq!(
            EccCounter::AGGREGATE.0,
            sys::nvmlEccCounterType_t::NVML_AGGREGATE_ECC.0
        );
        assert_eq!(
            PcieCounter::RX_BYTES.0,
            sys::nvmlPcieUtilCounter_t::NVML_PCIE_UTIL_RX_BYTES.0
        );
        assert_eq!(
            NvLinkVersion::V5_0.0,
            sys::nvmlNvlinkVersion_enum::NVML_NVLINK_VERSION_5_0.0
        );
    }

    #[test]
    fn unknown_values_are_kept_and_shown_as_numbers() {
        let future = Architecture(42);
        assert_eq!(future.0, 42);
        assert_eq!(future.name(), None);
        assert_eq!(future.to_string(), "unknown (42)");
        assert_ne!(future, Architecture::HOPPER);
        assert_eq!(Brand(1000).to_string(), "unknown (1000)");
        assert_eq!(PerformanceState(16).number(), None);
        assert_eq!(PerformanceState::P8.number(), Some(8));
        assert_eq!(PerformanceState::UNKNOWN.number(), None);
    }

    #[test]
    fn named_values_display_their_name_and_match_as_patterns() {
        assert_eq!(ClockType::SM.to_string(), "SM");
        assert_eq!(NvLinkVersion::V4_0.to_string(), "4.0");
        assert!(FeatureState::ENABLED.is_enabled());
        assert!(!FeatureState::DISABLED.is_enabled());
        assert!(!FeatureState(7).is_enabled());
        assert!(P2pStatus::OK.is_ok());
        assert!(!P2pStatus::NOT_SUPPORTED.is_ok());
        let described = match ComputeMode(3) {
            ComputeMode::DEFAULT => "shared",
            ComputeMode::EXCLUSIVE_PROCESS => "exclusive",
            _ => "other",
        };
        assert_eq!(described, "exclusive");
    }
}
