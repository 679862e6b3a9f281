//! The fixtures the operations run on: code images, devices (the stub has two), streams,
//! buffers, kernels.

use std::cell::RefCell;

use cuda_safe::{
    Buffer, Context, Device, DeviceMemoryResource, EventOptions, GreenContextOptions, Kernel,
    LaunchConfig, ObjectCode, Program, ProgramOptions, Result, SplitRequest, Stream, StreamOptions,
    launch,
};

/// PTX text; the stub knows the kernels `twice` and `noop` of any image.
pub(crate) const PTX: &str =
    ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// The smallest CUBIN the crate's image check accepts: an ELF64 little-endian header for
/// `EM_CUDA` (190), 64 bytes long, with no sections or segments.
pub(crate) const CUBIN: &[u8] = &{
    let mut header = [0u8; 64];
    let magic = *b"\x7fELF\x02\x01\x01\x33";
    let mut at = 0;
    while at < magic.len() {
        header[at] = magic[at];
        at += 1;
    }
    header[18] = 190; // e_machine
    header[20] = 1; // e_version
    header[52] = 64; // e_ehsize
    header
};
/// The smallest fatbin the check accepts: the 16-byte header (magic, version 1, header size
/// 16) and no parts.
pub(crate) const FATBIN: &[u8] = &[
    0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// CUDA C++ for NVRTC (the stub compiles anything without `#error`).
pub(crate) const SOURCE: &str = "extern \"C\" __global__ void twice(float* x, size_t n) {\n\
                      size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n\
                      if (i < n) x[i] *= 2.0f;\n}\n";

/// Elements of the fixtures' buffers.
pub(crate) const N: usize = 1024;

/// Device 0, where the operations run unless they say otherwise.
pub(crate) fn device() -> Device {
    device_of(0)
}

/// The device of `ordinal`: 0, or 1 for operations between devices.
pub(crate) fn device_of(ordinal: usize) -> Device {
    Device::new(ordinal).expect("one of the stub's devices")
}

pub(crate) fn stream() -> Stream {
    stream_of(0)
}

pub(crate) fn stream_of(ordinal: usize) -> Stream {
    device_of(ordinal)
        .create_stream(StreamOptions::default())
        .expect("a stream")
}

pub(crate) fn pool() -> DeviceMemoryResource {
    pool_of(0)
}

pub(crate) fn pool_of(ordinal: usize) -> DeviceMemoryResource {
    device_of(ordinal)
        .default_memory_resource()
        .expect("the default pool")
}

/// A buffer of N floats from the default pool of `stream`'s device.
pub(crate) fn buffer(stream: &Stream) -> Buffer {
    pool_of(stream.device().ordinal())
        .allocate_from_host(&[1.5f32; N], stream)
        .expect("a buffer")
}

pub(crate) fn code_object() -> ObjectCode {
    ObjectCode::from_ptx(PTX).expect("loaded code")
}

pub(crate) fn kernel() -> Kernel {
    code_object().get_kernel("twice").expect("a kernel")
}

pub(crate) fn timed() -> EventOptions {
    EventOptions {
        timing: true,
        ..Default::default()
    }
}

pub(crate) fn arch_90() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
}

pub(crate) fn program() -> Program {
    let mut program = Program::new(SOURCE, arch_90()).expect("a program");
    program
        .add_name_expression("twice<float>")
        .expect("a name expression");
    program
}

/// A green context of 64 SMs.
pub(crate) fn green() -> Context {
    let split = device()
        .resources()
        .sm()
        .and_then(|sm| sm.split(&SplitRequest::equal(2, 64)))
        .expect("a split");
    device()
        .create_green_context(&split.groups[0], GreenContextOptions::default())
        .expect("a green context")
}

/// An operation's launch: `twice` over a buffer of its stream, the launch limits already read.
pub(crate) struct LaunchFixture {
    pub(crate) stream: Stream,
    pub(crate) buffer: RefCell<Buffer>,
    pub(crate) kernel: Kernel,
    pub(crate) config: LaunchConfig,
}

pub(crate) fn launch_fixture(stream: Stream, kernel: Kernel) -> LaunchFixture {
    stream.context().launch_limits().expect("the limits");
    LaunchFixture {
        buffer: RefCell::new(buffer(&stream)),
        config: LaunchConfig::for_num_elements(N, 256).expect("a configuration"),
        stream,
        kernel,
    }
}

pub(crate) fn launch_twice(fixture: &LaunchFixture, stream: &Stream) -> Result<()> {
    let mut buffer = fixture.buffer.borrow_mut();
    // SAFETY: the stub's `twice` doubles the N floats the buffer holds.
    unsafe { launch(stream, &fixture.config, &fixture.kernel, (&mut *buffer, N)) }
}

/// Releases a device's primary context (and forgets its default pool), then has the process
/// keep it again from its next use, so the operation retains it again as a cold start does;
/// dropping the guard makes both again, so the next case starts as this one did.
pub(crate) struct Cold(usize);

impl Cold {
    /// Device 0 cold.
    pub(crate) fn new() -> Self {
        Self::of(0)
    }

    /// The device of `ordinal` cold.
    pub(crate) fn of(ordinal: usize) -> Self {
        let device = device_of(ordinal);
        assert!(device.release_primary_context(), "the context was kept");
        device.retain_primary_context();
        Cold(ordinal)
    }

    /// Only the guard, for device 0: for an operation that releases the context itself.
    pub(crate) fn on_drop() -> Self {
        Cold(0)
    }
}

impl Drop for Cold {
    fn drop(&mut self) {
        device_of(self.0).retain_primary_context();
        pool_of(self.0);
    }
}

/// Takes a fixture out of its cell, for an operation that consumes it (`close`).
pub(crate) fn take<T>(cell: &RefCell<Option<T>>) -> T {
    cell.borrow_mut().take().expect("one run per fixture")
}
