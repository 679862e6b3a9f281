//! Written for the CUDA 13 ABI only: it names items that the CUDA 12 bindings lack.

pub use cuda_sys::CUmemLocation;
use cuda_sys::CUmemLocationType;

/// A device location for `ordinal`: the ordinal is a union member in the CUDA 13 ABI.
pub fn device_location(ordinal: i32) -> CUmemLocation {
    let mut location = CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        ..Default::default()
    };
    location.__bindgen_anon_1.id = ordinal;
    location
}

/// NVML's first CPER cursor, a CUDA 13 constant.
pub const CPER_CURSOR_START: nvml_sys::nvmlCPERCursorHandle_t =
    nvml_sys::NVML_CPER_CURSOR_HANDLE_INIT;

/// The NVRTC headers' version, from CUDA 13.
pub const NVRTC_HEADERS: u32 = nvrtc_sys::HEADER_CUDA_VERSION;

/// An nvJitLink result code that only the CUDA 13 header names.
pub const LTO_NOT_ENABLED: nvjitlink_sys::nvJitLinkResult =
    nvjitlink_sys::nvJitLinkResult::NVJITLINK_ERROR_LTO_NOT_ENABLED;

/// Green-context workqueues, a CUDA 13 feature, through the safe layer.
pub fn workqueues(device: &cuda_safe::Device) -> cuda_safe::Result<cuda_safe::WorkqueueConfig> {
    device.resources().workqueue_config()
}
