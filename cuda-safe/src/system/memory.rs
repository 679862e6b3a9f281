//! Utilization and memory: GPU/memory busy percentages, frame-buffer and BAR1 memory.

use super::device::{Device, query};
use crate::error::Result;

/// How busy the GPU was over NVML's last sample period (1/6 s to 1 s, by product).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Utilization {
    /// Percent of the time one or more kernels ran.
    pub gpu: u32,
    /// Percent of the time device memory was read or written.
    pub memory: u32,
}

/// Device memory, in bytes (`nvmlMemory_v2_t`): `reserved + used + free == total`.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct MemoryInfo {
    /// Installed memory.
    pub total: u64,
    /// Memory the driver and firmware reserve.
    pub reserved: u64,
    /// Memory allocated (by all processes), not counting `reserved`.
    pub used: u64,
    /// Memory not allocated.
    pub free: u64,
}

/// BAR1 memory (the window the CPU and peers map device memory through), in bytes.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Bar1Memory {
    /// The window's size.
    pub total: u64,
    /// Bytes not mapped.
    pub free: u64,
    /// Bytes mapped.
    pub used: u64,
}

impl Device {
    /// GPU and memory utilization, in percent. One NVML call, no allocation.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetUtilizationRates)]
    #[doc(alias = "nvmlDeviceGetUtilizationRates")]
    #[inline]
    pub fn utilization(&self) -> Result<Utilization> {
        let rates = query!(
            self,
            nvmlDeviceGetUtilizationRates,
            nvml_sys::nvmlUtilization_t::default(),
        )?;
        Ok(Utilization {
            gpu: rates.gpu,
            memory: rates.memory,
        })
    }

    /// Device memory: total, reserved, used and free. One NVML call, no allocation.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMemoryInfo_v2)]
    #[doc(alias = "nvmlDeviceGetMemoryInfo_v2")]
    #[inline]
    pub fn memory_info(&self) -> Result<MemoryInfo> {
        let versioned = nvml_sys::nvmlMemory_v2_t {
            version: nvml_sys::nvmlMemory_v2,
            ..Default::default()
        };
        let memory = query!(self, nvmlDeviceGetMemoryInfo_v2, versioned,)?;
        Ok(MemoryInfo {
            total: memory.total,
            reserved: memory.reserved,
            used: memory.used,
            free: memory.free,
        })
    }

    /// BAR1 memory: total, free and used.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetBAR1MemoryInfo)]
    #[doc(alias = "nvmlDeviceGetBAR1MemoryInfo")]
    pub fn bar1_memory(&self) -> Result<Bar1Memory> {
        let bar1 = query!(
            self,
            nvmlDeviceGetBAR1MemoryInfo,
            nvml_sys::nvmlBAR1Memory_t::default(),
        )?;
        Ok(Bar1Memory {
            total: bar1.bar1Total,
            free: bar1.bar1Free,
            used: bar1.bar1Used,
        })
    }
}
