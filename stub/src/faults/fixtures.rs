//! The fixtures the operations run on: code images, devices (the stub has two), streams,
//! buffers, kernels.

use std::cell::RefCell;

use cuda_safe::ipc::IpcBufferDescriptor;
use cuda_safe::{
    Buffer, Context, Device, DeviceMemoryResource, Event, EventOptions, GreenContextOptions,
    IpcHandleType, Kernel, LaunchConfig, ObjectCode, PoolOptions, Program, ProgramOptions, Result,
    SplitRequest, Stream, StreamOptions, launch,
};

use crate::Stub;

/// PTX text; the stub knows the kernels `twice` and `noop` of any image.
pub const PTX: &str =
    ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// The smallest CUBIN the crate's image check accepts: an ELF64 little-endian header for
/// `EM_CUDA` (190), 64 bytes long, with no sections or segments.
pub const CUBIN: &[u8] = &{
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
pub const FATBIN: &[u8] = &[
    0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// CUDA C++ for NVRTC (the stub compiles anything without `#error`).
pub const SOURCE: &str = "extern \"C\" __global__ void twice(float* x, size_t n) {\n\
                      size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n\
                      if (i < n) x[i] *= 2.0f;\n}\n";

/// Elements of the fixtures' buffers.
pub const N: usize = 1024;

/// Device 0, where the operations run unless they say otherwise.
pub fn device() -> Device {
    device_of(0)
}

/// The device of `ordinal`: 0, or 1 for operations between devices.
pub fn device_of(ordinal: usize) -> Device {
    Device::new(ordinal).expect("one of the stub's devices")
}

/// A new stream of device 0.
pub fn stream() -> Stream {
    stream_of(0)
}

/// A new stream of device `ordinal`.
pub fn stream_of(ordinal: usize) -> Stream {
    device_of(ordinal)
        .create_stream(StreamOptions::default())
        .expect("a stream")
}

/// Device 0's default pool.
pub fn pool() -> DeviceMemoryResource {
    pool_of(0)
}

/// Device `ordinal`'s default pool.
pub fn pool_of(ordinal: usize) -> DeviceMemoryResource {
    device_of(ordinal)
        .default_memory_resource()
        .expect("the default pool")
}

/// A buffer of N floats from the default pool of `stream`'s device.
pub fn buffer(stream: &Stream) -> Buffer {
    pool_of(stream.device().ordinal())
        .allocate_from_host(&[1.5f32; N], stream)
        .expect("a buffer")
}

/// [`PTX`] loaded.
pub fn code_object() -> ObjectCode {
    ObjectCode::from_ptx(PTX).expect("loaded code")
}

/// `twice` of [`code_object`].
pub fn kernel() -> Kernel {
    code_object().get_kernel("twice").expect("a kernel")
}

/// Options of a timed event.
pub fn timed() -> EventOptions {
    EventOptions::default().timing(true)
}

/// Program options for sm_90.
pub fn arch_90() -> ProgramOptions {
    ProgramOptions::default().arch("sm_90")
}

/// [`SOURCE`] as a program for sm_90.
pub fn program() -> Program {
    let mut program = Program::new(SOURCE, arch_90()).expect("a program");
    program
        .add_name_expression("twice<float>")
        .expect("a name expression");
    program
}

/// A green context of 64 SMs.
pub fn green() -> Context {
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
#[derive(Debug)]
pub struct LaunchFixture {
    /// The stream the buffer lives on.
    pub stream: Stream,
    /// N floats.
    pub buffer: RefCell<Buffer>,
    /// `twice`.
    pub kernel: Kernel,
    /// A configuration for N elements.
    pub config: LaunchConfig,
}

/// A [`LaunchFixture`] of `kernel` on `stream`.
pub fn launch_fixture(stream: Stream, kernel: Kernel) -> LaunchFixture {
    stream.context().launch_limits().expect("the limits");
    LaunchFixture {
        buffer: RefCell::new(buffer(&stream)),
        config: LaunchConfig::for_num_elements(N, 256).expect("a configuration"),
        stream,
        kernel,
    }
}

/// Launches `twice` over the fixture's buffer on `stream`.
pub fn launch_twice(fixture: &LaunchFixture, stream: &Stream) -> Result<()> {
    let mut buffer = fixture.buffer.borrow_mut();
    // SAFETY: the stub's `twice` doubles the N floats the buffer holds.
    unsafe { launch(stream, &fixture.config, &fixture.kernel, (&mut *buffer, N)) }
}

/// Releases a device's primary context (and forgets its default pool), then has the process
/// keep it again from its next use, so the operation retains it again as a cold start does;
/// dropping the guard makes both again, so the next case starts as this one did.
#[derive(Debug)]
pub struct Cold(usize);

impl Cold {
    /// Device 0 cold.
    #[allow(clippy::new_without_default)] // Making one releases a context: no default.
    pub fn new() -> Self {
        Self::of(0)
    }

    /// The device of `ordinal` cold.
    pub fn of(ordinal: usize) -> Self {
        let device = device_of(ordinal);
        assert!(device.release_primary_context(), "the context was kept");
        device.retain_primary_context();
        Cold(ordinal)
    }

    /// Only the guard, for device 0: for an operation that releases the context itself.
    pub fn on_drop() -> Self {
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
pub fn take<T>(cell: &RefCell<Option<T>>) -> T {
    cell.borrow_mut().take().expect("one run per fixture")
}

/// A pool shareable by file descriptor.
pub fn shareable_options() -> PoolOptions {
    PoolOptions::default().ipc(IpcHandleType::PosixFd)
}

/// An event shareable with other processes.
pub fn ipc_event_options() -> EventOptions {
    EventOptions::default().timing(false).ipc(true)
}

/// A shareable pool of device `ordinal`.
pub fn shareable_pool_of(ordinal: usize) -> DeviceMemoryResource {
    DeviceMemoryResource::new_pool(&device_of(ordinal), shareable_options())
        .expect("a shareable pool")
}

/// A shareable pool of device 0.
pub fn shareable_pool() -> DeviceMemoryResource {
    shareable_pool_of(0)
}

/// A buffer of a shareable pool, the pool exported already (its descriptor closed again).
pub fn exported_buffer(stream: &Stream) -> Buffer {
    let pool = shareable_pool();
    drop(pool.export_pool().expect("the pool exported"));
    pool.allocate_from_host(&[1.5f32; N], stream)
        .expect("a buffer")
}

/// Both sides of a shared buffer: the exporter's buffer, the pool imported from its pool, and
/// the buffer's descriptor. Dropped in this order, after whatever imported the buffer.
#[derive(Debug)]
pub struct Shared {
    /// The stream of both buffers.
    pub stream: Stream,
    /// The exporter's buffer.
    pub buffer: Buffer,
    /// Its pool, imported.
    pub imported: DeviceMemoryResource,
    /// The buffer's descriptor.
    pub descriptor: IpcBufferDescriptor,
}

/// Both sides of a shared buffer, made.
pub fn shared() -> Shared {
    let stream = stream();
    let pool = shareable_pool();
    let buffer = pool
        .allocate_from_host(&[1.5f32; N], &stream)
        .expect("a buffer");
    let imported =
        DeviceMemoryResource::import_pool(pool.export_pool().expect("exported")).expect("imported");
    let descriptor = buffer.export_ipc().expect("the buffer exported");
    Shared {
        stream,
        buffer,
        imported,
        descriptor,
    }
}

/// A buffer imported from [`shared`]'s, which it precedes in the tuple (dropped first).
pub fn imported_buffer() -> (RefCell<Option<Buffer>>, Shared) {
    let shared = shared();
    let buffer = shared
        .imported
        .import_buffer(&shared.descriptor, &shared.stream)
        .expect("the buffer imported");
    (RefCell::new(Some(buffer)), shared)
}

/// An IPC event of device 0 made by "another process", and its handle.
pub fn foreign_event(stub: &Stub) -> (Event, [u8; 64]) {
    stub.as_other_process(|| {
        let event = device()
            .create_event(ipc_event_options())
            .expect("an IPC event");
        let handle = event.ipc_handle().expect("its handle");
        (event, handle)
    })
}

/// Device 0's primary context.
pub fn context() -> Context {
    device().context().expect("the primary context")
}
