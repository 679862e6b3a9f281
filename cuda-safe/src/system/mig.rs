//! MIG (Multi-Instance GPU): the mode, the MIG devices of a GPU, and each one's parent.

use std::sync::Arc;

use super::device::{Device, query, query_with};
use super::enums::FeatureState;
use super::modes::CurrentAndPending;
use crate::error::{Result, nvml};
use nvml_sys::nvmlReturn_t;

impl Device {
    /// Whether MIG mode is on, now and after the next GPU reset. GPUs without MIG give an
    /// error for which [`Error::is_not_supported`](crate::Error::is_not_supported) is true.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMigMode)]
    #[doc(alias = "nvmlDeviceGetMigMode")]
    pub fn mig_mode(&self) -> Result<CurrentAndPending<FeatureState>> {
        let (mut current, mut pending) = (0, 0);
        // SAFETY: the handle is live; both are valid out-pointers.
        unsafe {
            nvml!(
                self.nvml,
                nvmlDeviceGetMigMode(self.handle, &mut current, &mut pending)
            )
        }?;
        Ok(CurrentAndPending {
            current: FeatureState(current),
            pending: FeatureState(pending),
        })
    }

    /// Whether this is a MIG device (a slice of a GPU) rather than a whole GPU.
    #[doc = nvml_sys::api_doc!(nvmlDeviceIsMigDeviceHandle)]
    #[doc(alias = "nvmlDeviceIsMigDeviceHandle")]
    pub fn is_mig_device(&self) -> Result<bool> {
        query!(self, nvmlDeviceIsMigDeviceHandle, 0,).map(|is_mig| is_mig != 0)
    }

    /// How many MIG devices this GPU can hold at most.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMaxMigDeviceCount)]
    #[doc(alias = "nvmlDeviceGetMaxMigDeviceCount")]
    pub fn max_mig_device_count(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetMaxMigDeviceCount, 0,)
    }

    /// The MIG device at slot `index` (below [`max_mig_device_count`](Self::max_mig_device_count));
    /// an empty slot is NVML's not-found error.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetMigDeviceHandleByIndex)]
    #[doc(alias = "nvmlDeviceGetMigDeviceHandleByIndex")]
    pub fn mig_device(&self, index: u32) -> Result<Device> {
        let handle = query_with!(
            self,
            nvmlDeviceGetMigDeviceHandleByIndex,
            index,
            std::ptr::null_mut(),
        )?;
        Ok(Device::from_handle(handle, Arc::clone(&self.guard)))
    }

    /// Every MIG device of this GPU: none when MIG mode is off now.
    pub fn mig_devices(&self) -> Result<Vec<Device>> {
        if !self.mig_mode()?.current.is_enabled() {
            return Ok(Vec::new());
        }
        let mut devices = Vec::new();
        for index in 0..self.max_mig_device_count()? {
            match self.mig_device(index) {
                Ok(device) => devices.push(device),
                Err(error) if error.nvml_code() == Some(nvmlReturn_t::NVML_ERROR_NOT_FOUND) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(devices)
    }

    /// The GPU a MIG device belongs to.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)]
    #[doc(alias = "nvmlDeviceGetDeviceHandleFromMigDeviceHandle")]
    pub fn parent(&self) -> Result<Device> {
        let handle = query!(
            self,
            nvmlDeviceGetDeviceHandleFromMigDeviceHandle,
            std::ptr::null_mut(),
        )?;
        Ok(Device::from_handle(handle, Arc::clone(&self.guard)))
    }

    /// The GPU instance a MIG device belongs to.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetGpuInstanceId)]
    #[doc(alias = "nvmlDeviceGetGpuInstanceId")]
    pub fn gpu_instance_id(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetGpuInstanceId, 0,)
    }

    /// The compute instance a MIG device belongs to, within its GPU instance.
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetComputeInstanceId)]
    #[doc(alias = "nvmlDeviceGetComputeInstanceId")]
    pub fn compute_instance_id(&self) -> Result<u32> {
        query!(self, nvmlDeviceGetComputeInstanceId, 0,)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_sys;

    #[test]
    fn mig_mode_values_are_feature_states() {
        assert_eq!(
            FeatureState(nvml_sys::NVML_DEVICE_MIG_DISABLE),
            FeatureState::DISABLED
        );
        assert!(FeatureState(nvml_sys::NVML_DEVICE_MIG_ENABLE).is_enabled());
    }
}
