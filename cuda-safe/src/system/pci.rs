//! PCI: the device's address and ids, PCIe link generation and width, PCIe throughput.

use super::device::{Device, query, query_with};
use super::enums::PcieCounter;
use crate::error::Result;
use crate::ffi::from_c_chars;

/// Where a device sits on the PCI bus (`nvmlPciInfo_t`).
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct PciInfo {
    /// The bus id, `domain:bus:device.function` (`"00000000:1B:00.0"`), which
    /// [`Device::from_pci_bus_id`] accepts.
    pub bus_id: String,
    /// The PCI domain.
    pub domain: u32,
    /// The bus number.
    pub bus: u32,
    /// The device number on the bus.
    pub device: u32,
    /// The combined device and vendor id (`0x233510de`: vendor `0x10de`, NVIDIA).
    pub pci_device_id: u32,
    /// The combined subsystem id and subsystem vendor id.
    pub pci_subsystem_id: u32,
}

impl PciInfo {
    /// Copies NVML's struct.
    pub(super) fn from_raw(raw: &nvml_sys::nvmlPciInfo_t) -> Self {
        Self {
            bus_id: from_c_chars(&raw.busId),
            domain: raw.domain,
            bus: raw.bus,
            device: raw.device,
            pci_device_id: raw.pciDeviceId,
            pci_subsystem_id: raw.pciSubSystemId,
        }
    }
}

impl Device {
    /// The device's PCI address and ids.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetPciInfo_v3)]
    #[doc(alias = "nvmlDeviceGetPciInfo_v3")]
    pub fn pci_info(&self) -> Result<PciInfo> {
        let pci = query!(
            self,
            nvmlDeviceGetPciInfo_v3,
            nvml_sys::nvmlPciInfo_t::default(),
        )?;
        Ok(PciInfo::from_raw(&pci))
    }

    /// The PCIe link generation now (it drops when the GPU idles).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetCurrPcieLinkGeneration)]
    #[doc(alias = "nvmlDeviceGetCurrPcieLinkGeneration")]
    pub fn current_pcie_link_generation(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetCurrPcieLinkGeneration, 0,)
    }

    /// The highest PCIe link generation the device and system support.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMaxPcieLinkGeneration)]
    #[doc(alias = "nvmlDeviceGetMaxPcieLinkGeneration")]
    pub fn max_pcie_link_generation(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetMaxPcieLinkGeneration, 0,)
    }

    /// The PCIe link width now, in lanes.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetCurrPcieLinkWidth)]
    #[doc(alias = "nvmlDeviceGetCurrPcieLinkWidth")]
    pub fn current_pcie_link_width(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetCurrPcieLinkWidth, 0,)
    }

    /// The widest PCIe link the device and system support, in lanes.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMaxPcieLinkWidth)]
    #[doc(alias = "nvmlDeviceGetMaxPcieLinkWidth")]
    pub fn max_pcie_link_width(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetMaxPcieLinkWidth, 0,)
    }

    /// PCIe throughput in one direction, in KB/s, measured by NVML over 20 ms (so the call
    /// takes about that long).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetPcieThroughput)]
    #[doc(alias = "nvmlDeviceGetPcieThroughput")]
    pub fn pcie_throughput_kb_per_s(&self, counter: PcieCounter) -> Result<u32> {
        // An unknown counter is NVML's invalid-argument error.
        query_with!(
            self,
            nvmlDeviceGetPcieThroughput,
            nvml_sys::nvmlPcieUtilCounter_t(counter.0),
            0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_char;

    #[test]
    fn pci_info_copies_the_raw_struct() {
        let mut raw = nvml_sys::nvmlPciInfo_t {
            domain: 0,
            bus: 0x1b,
            device: 0,
            pciDeviceId: 0x2335_10de,
            pciSubSystemId: 0x18be_10de,
            ..Default::default()
        };
        for (slot, byte) in raw.busId.iter_mut().zip(b"00000000:1B:00.0\0") {
            *slot = *byte as c_char;
        }
        let info = PciInfo::from_raw(&raw);
        assert_eq!(info.bus_id, "00000000:1B:00.0");
        assert_eq!(info.bus, 0x1b);
        assert_eq!(info.pci_device_id & 0xffff, 0x10de);
        assert_eq!(info.pci_subsystem_id, 0x18be_10de);
    }
}
