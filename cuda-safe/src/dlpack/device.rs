//! [`ViewDevice`]: where a view's memory lives, and its DLPack spelling.

use super::abi::{DLDevice, DLDeviceType};
use crate::error::{Error, Result};

/// Where the memory of a [`StridedMemoryView`](super::StridedMemoryView) lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ViewDevice {
    /// Pageable host memory (`kDLCPU`): the GPU cannot reach it.
    Host,
    /// Device memory of the CUDA device with this ordinal (`kDLCUDA`).
    Cuda(usize),
    /// Pinned host memory (`kDLCUDAHost`): reachable from the host and every device.
    CudaHost,
    /// Managed memory (`kDLCUDAManaged`): reachable from the host and every device.
    CudaManaged,
}

impl ViewDevice {
    /// Reads a DLPack device; device types other than CPU and the three CUDA kinds, and
    /// negative ordinals, are [`Error::InvalidArgument`].
    pub fn from_dlpack(device: DLDevice) -> Result<Self> {
        match device.device_type {
            DLDeviceType::CPU => Ok(Self::Host),
            DLDeviceType::CUDA_HOST => Ok(Self::CudaHost),
            DLDeviceType::CUDA_MANAGED => Ok(Self::CudaManaged),
            DLDeviceType::CUDA => usize::try_from(device.device_id)
                .map(Self::Cuda)
                .map_err(|_| {
                    Error::invalid_argument(format!(
                        "DLPack CUDA device id {} is negative",
                        device.device_id
                    ))
                }),
            other => Err(Error::invalid_argument(format!(
                "DLPack device type {} is neither host nor CUDA memory",
                other.0
            ))),
        }
    }

    /// The DLPack spelling; a CUDA ordinal past `i32::MAX` is [`Error::InvalidArgument`].
    pub fn to_dlpack(self) -> Result<DLDevice> {
        let (device_type, device_id) = match self {
            Self::Host => (DLDeviceType::CPU, 0),
            Self::CudaHost => (DLDeviceType::CUDA_HOST, 0),
            Self::CudaManaged => (DLDeviceType::CUDA_MANAGED, 0),
            Self::Cuda(ordinal) => (
                DLDeviceType::CUDA,
                i32::try_from(ordinal).map_err(|_| {
                    Error::invalid_argument(format!("CUDA ordinal {ordinal} is past i32::MAX"))
                })?,
            ),
        };
        Ok(DLDevice {
            device_type,
            device_id,
        })
    }

    /// Whether kernels on the device with this ordinal can reach the memory.
    pub fn is_accessible_from(self, ordinal: usize) -> bool {
        match self {
            Self::Host => false,
            Self::Cuda(own) => own == ordinal,
            Self::CudaHost | Self::CudaManaged => true,
        }
    }

    /// Whether the host can read and write the memory.
    pub fn is_host_accessible(self) -> bool {
        !matches!(self, Self::Cuda(_))
    }
}
