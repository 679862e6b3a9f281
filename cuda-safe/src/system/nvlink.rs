//! NVLink, per link: whether it is up, its version, and what is at its other end.

use super::device::Device;
use super::enums::{FeatureState, NvLinkVersion};
use super::pci::PciInfo;
use crate::Result;
use crate::error::check_nvml;
use crate::nvml_sys;

/// The number of NVLink links the selected headers describe (`NVML_NVLINK_MAX_LINKS`: 18 for
/// CUDA 12, 36 for CUDA 13). Links a device lacks give NVML's invalid-argument error, and a
/// device without NVLink gives not-supported.
pub const NVLINK_MAX_LINKS: u32 = nvml_sys::NVML_NVLINK_MAX_LINKS;

impl Device {
    /// Whether NVLink `link` is up.
    #[doc(alias = "nvmlDeviceGetNvLinkState")]
    pub fn nvlink_state(&self, link: u32) -> Result<FeatureState> {
        let mut active = nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED;
        // SAFETY: the handle is live; `active` is a valid out-pointer; a link out of range is
        // NVML's invalid-argument error.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetNvLinkState(self.handle, link, &mut active)
        };
        check_nvml("nvmlDeviceGetNvLinkState", result)?;
        Ok(FeatureState(active.0))
    }

    /// The NVLink version of link `link`.
    #[doc(alias = "nvmlDeviceGetNvLinkVersion")]
    pub fn nvlink_version(&self, link: u32) -> Result<NvLinkVersion> {
        let mut version = 0;
        // SAFETY: as in `nvlink_state`.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetNvLinkVersion(self.handle, link, &mut version)
        };
        check_nvml("nvmlDeviceGetNvLinkVersion", result)?;
        Ok(NvLinkVersion(version))
    }

    /// The PCI address of the device at the other end of link `link` (a GPU or an NVSwitch).
    #[doc(alias = "nvmlDeviceGetNvLinkRemotePciInfo_v2")]
    pub fn nvlink_remote_pci_info(&self, link: u32) -> Result<PciInfo> {
        let mut pci = nvml_sys::nvmlPciInfo_t::default();
        // SAFETY: as in `nvlink_state`; `pci` is a valid out-pointer.
        let result = unsafe {
            self.nvml
                .nvmlDeviceGetNvLinkRemotePciInfo_v2(self.handle, link, &mut pci)
        };
        check_nvml("nvmlDeviceGetNvLinkRemotePciInfo_v2", result)?;
        Ok(PciInfo::from_raw(&pci))
    }
}
