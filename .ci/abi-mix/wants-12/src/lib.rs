//! Written for the CUDA 12 ABI, but following the ABI the -sys crates compiled, as a crate
//! built on them must: in this build another crate asks for CUDA 13, so CUDA 13 it is.

use cuda_sys::{CUmemLocation, CUmemLocationType, if_abi12, if_abi13};

/// The ABI each -sys crate compiled: driver API, NVRTC, NVML, nvJitLink.
pub const ABI_MAJORS: [u32; 4] = [
    cuda_sys::ABI_MAJOR,
    nvrtc_sys::ABI_MAJOR,
    nvml_sys::ABI_MAJOR,
    nvjitlink_sys::ABI_MAJOR,
];

/// A device location for `ordinal`, whichever ABI the driver bindings have.
pub fn device_location(ordinal: i32) -> CUmemLocation {
    let mut location = CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        ..Default::default()
    };
    if_abi12! { location.id = ordinal; }
    if_abi13! { location.__bindgen_anon_1.id = ordinal; }
    location
}

nvml_sys::if_abi13! {
    /// NVML's first CPER cursor: kept only when NVML has the CUDA 13 ABI.
    pub const CPER_CURSOR_START: u64 = nvml_sys::NVML_CPER_CURSOR_HANDLE_INIT;
}

/// A pool allocation through the safe layer, as a crate written for CUDA 12 would make it.
pub fn zeroed_floats(
    device: &cuda_safe::Device,
    stream: &cuda_safe::Stream,
    len: usize,
) -> cuda_safe::Result<cuda_safe::Buffer> {
    device
        .default_memory_resource()?
        .allocate_zeroed::<f32>(len, stream)
}
