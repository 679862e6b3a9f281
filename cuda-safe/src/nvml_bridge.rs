//! The same GPU seen by CUDA and by NVML, matched by UUID: [`Device::to_nvml`] and
//! [`Device::from_nvml`]. It sits above both the driver core and [`system`] (which uses only
//! the ground floor), so neither has to know the other.
//!
//! ```no_run
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! let gpu = device.to_nvml()?; // for monitoring
//! println!("{} W", gpu.power_usage_mw()? / 1000);
//! assert_eq!(Device::from_nvml(&gpu)?, device);
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use crate::device::Device;
use crate::error::Result;
use crate::system;
use crate::uuid::Uuid;

impl Device {
    /// The same GPU as NVML sees it (matched by UUID), for monitoring.
    pub fn to_nvml(&self) -> Result<system::Device> {
        system::Device::from_uuid_bytes(&self.uuid()?.0)
    }

    /// The CUDA device NVML's `device` is (matched by UUID); an error when it is not visible to
    /// CUDA in this process (`CUDA_VISIBLE_DEVICES`).
    pub fn from_nvml(device: &system::Device) -> Result<Device> {
        Device::from_uuid(Uuid(device.uuid_bytes()?))
    }
}
