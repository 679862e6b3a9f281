//! Topology between two GPUs: their closest common ancestor and whether they can reach each
//! other peer to peer.

use super::device::Device;
use super::enums::{P2pCapability, P2pStatus, TopologyLevel};
use crate::error::{Result, nvml};

impl Device {
    /// The closest point of the system's topology this GPU and `other` share.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetTopologyCommonAncestor)]
    #[doc(alias = "nvmlDeviceGetTopologyCommonAncestor")]
    pub fn topology_common_ancestor(&self, other: &Device) -> Result<TopologyLevel> {
        let mut level = nvml_sys::nvmlGpuTopologyLevel_t::NVML_TOPOLOGY_SYSTEM;
        // SAFETY: both handles are live (both devices hold NVML open); `level` is a valid
        // out-pointer.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetTopologyCommonAncestor(self.handle, other.handle, &mut level)
            )
        }?;
        Ok(TopologyLevel(level.0))
    }

    /// Whether this GPU and `other` can use `capability` peer to peer.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetP2PStatus)]
    #[doc(alias = "nvmlDeviceGetP2PStatus")]
    pub fn p2p_status(&self, other: &Device, capability: P2pCapability) -> Result<P2pStatus> {
        let mut status = nvml_sys::nvmlGpuP2PStatus_t::NVML_P2P_STATUS_UNKNOWN;
        // SAFETY: both handles are live; `status` is a valid out-pointer; an unknown
        // capability is NVML's invalid-argument error.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetP2PStatus(
                    self.handle,
                    other.handle,
                    nvml_sys::nvmlGpuP2PCapsIndex_t(capability.0),
                    &mut status,
                )
            )
        }?;
        Ok(P2pStatus(status.0))
    }
}
