//! Both intermediate crates in one build: the -sys crates must have compiled the CUDA 13 ABI,
//! and each intermediate crate must have built against it.

const _: () = {
    let [driver, nvrtc, nvml, nvjitlink] = wants_12::ABI_MAJORS;
    assert!(
        driver == 13 && nvrtc == 13 && nvml == 13 && nvjitlink == 13,
        "with cuda-12 and cuda-13 both on, every -sys crate compiles the CUDA 13 ABI"
    );
};

/// The device location each intermediate crate builds: one type, since both reach the same
/// `cuda-safe-sys`.
pub fn device_locations(ordinal: i32) -> [wants_13::CUmemLocation; 2] {
    [
        wants_12::device_location(ordinal),
        wants_13::device_location(ordinal),
    ]
}

/// Both intermediate crates' safe-layer types are one crate's: a buffer made by the crate
/// written for CUDA 12 is an argument of a launch by anyone.
pub fn both(device: &cuda_safe::Device, stream: &cuda_safe::Stream) -> cuda_safe::Result<()> {
    let buffer: cuda_safe::Buffer = wants_12::zeroed_floats(device, stream, 16)?;
    let _workqueues = wants_13::workqueues(device);
    buffer.close()
}
