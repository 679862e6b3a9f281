//! NVLink, per link: whether it is up, its version, and what is at its other end.

use super::device::{Device, query_with};
use super::enums::{FeatureState, NvLinkVersion};
use super::pci::PciInfo;
use crate::error::Result;

/// The number of NVLink links the selected headers describe (`NVML_NVLINK_MAX_LINKS`: 18 for
/// CUDA 12, 36 for CUDA 13). Links a device lacks give NVML's invalid-argument error, and a
/// device without NVLink gives not-supported.
pub const NVLINK_MAX_LINKS: u32 = nvml_sys::NVML_NVLINK_MAX_LINKS;

impl Device {
    /// Whether NVLink `link` is up.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetNvLinkState)]
    #[doc(alias = "nvmlDeviceGetNvLinkState")]
    pub fn nvlink_state(&self, link: u32) -> Result<FeatureState> {
        // A link out of range is NVML's invalid-argument error.
        query_with!(
            self,
            nvmlDeviceGetNvLinkState,
            link,
            nvml_sys::nvmlEnableState_t::NVML_FEATURE_DISABLED,
        )
        .map(|active| FeatureState(active.0))
    }

    /// The NVLink version of link `link`.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetNvLinkVersion)]
    #[doc(alias = "nvmlDeviceGetNvLinkVersion")]
    pub fn nvlink_version(&self, link: u32) -> Result<NvLinkVersion> {
        query_with!(self, nvmlDeviceGetNvLinkVersion, link, 0,).map(NvLinkVersion)
    }

    /// The PCI address of the device at the other end of link `link` (a GPU or an NVSwitch).
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetNvLinkRemotePciInfo_v2)]
    #[doc(alias = "nvmlDeviceGetNvLinkRemotePciInfo_v2")]
    pub fn nvlink_remote_pci_info(&self, link: u32) -> Result<PciInfo> {
        let pci = query_with!(
            self,
            nvmlDeviceGetNvLinkRemotePciInfo_v2,
            link,
            nvml_sys::nvmlPciInfo_t::default(),
        )?;
        Ok(PciInfo::from_raw(&pci))
    }
}
