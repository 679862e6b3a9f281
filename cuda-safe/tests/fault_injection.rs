//! Every public operation that calls the driver (or NVRTC, or NVML), driven through every
//! failure, with the stub driver of `tests/stub`.
//!
//! For each operation a clean run records the calls it makes, and those its result's drop
//! makes; then each call in turn is failed with each code (out of memory, illegal address, not
//! supported, launch failure and a code from a future driver; NVRTC's and NVML's own for their
//! calls) and the case checks that:
//! - nothing panics;
//! - the operation returns the error naming exactly the failed call and its code (with the
//!   driver's name for it, or the crate's fallback for an unknown code), or, for a failure in a
//!   release path (a `Drop` inside the operation, a current-context guard restoring), returns
//!   the value and logs exactly one error line naming them; a few failures are absorbed by
//!   design, each listed with the operation and why;
//! - no object outlives the case (the stub's live counts return to where they were), except
//!   the one object whose release failed;
//! - a failure injected into a release on drop logs exactly one error line and is not retried;
//! - the crate never misuses the driver meanwhile (a destroyed or foreign handle, a call
//!   needing a context with none current, a copy past an allocation).
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs; the cases run one after the other on this thread. Prints one
//! line per operation and a summary; exits nonzero on any failure.

mod stub;

use std::cell::RefCell;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::Mutex;

use cuda_safe::cache::InMemoryProgramCache;
use cuda_safe::checkpoint::{GpuPair, Process};
use cuda_safe::{
    Buffer, CodeKind, Context, Device, DeviceMemoryResource, Error, Event, EventOptions,
    GreenContextOptions, Kernel, KernelCache, LaunchConfig, ManagedMemoryResource, ObjectCode,
    PinnedMemoryResource, PoolOptions, Program, ProgramOptions, Result, SplitRequest, Stream,
    StreamOptions, Uuid, launch, system,
};
use stub::{Call, Installed, KINDS, Live, Stub};

/// A failure to inject: the code, and the text the error carries for it (the driver's name,
/// NVRTC's or NVML's message, or the crate's fallback for a code the library does not know).
#[derive(Debug, Clone, Copy)]
struct Code {
    value: u32,
    text: &'static str,
}

const fn code(value: u32, text: &'static str) -> Code {
    Code { value, text }
}

/// A code newer than any header: the library has no name for it.
const FUTURE: u32 = 12345;

const CUDA_CODES: [Code; 5] = [
    code(2, "CUDA_ERROR_OUT_OF_MEMORY"),
    code(700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
    code(801, "CUDA_ERROR_NOT_SUPPORTED"),
    code(719, "CUDA_ERROR_LAUNCH_FAILED"),
    code(FUTURE, "an unknown CUDA error code"),
];

const NVRTC_CODES: [Code; 4] = [
    code(1, "NVRTC_ERROR_OUT_OF_MEMORY"),
    code(6, "NVRTC_ERROR_COMPILATION"),
    code(11, "NVRTC_ERROR_INTERNAL_ERROR"),
    code(FUTURE, "NVRTC_ERROR unknown"),
];

const NVML_CODES: [Code; 4] = [
    code(20, "Insufficient Memory"),
    code(3, "Not Supported"),
    code(15, "GPU is lost"),
    code(FUTURE, "Unknown Error"),
];

/// The codes injected into a call, by its library.
fn codes_for(call: &str) -> &'static [Code] {
    if call.starts_with("nvrtc") {
        &NVRTC_CODES
    } else if call.starts_with("nvml") {
        &NVML_CODES
    } else {
        &CUDA_CODES
    }
}

/// Calls that give an object back: a failure leaks that object, and inside an operation (not a
/// `close`) it is logged, not returned.
const RELEASES: [&str; 11] = [
    "cuStreamDestroy_v2",
    "cuEventDestroy_v2",
    "cuMemPoolDestroy",
    "cuMemFreeAsync",
    "cuMemFreeHost",
    "cuMemFree_v2",
    "cuLibraryUnload",
    "cuGreenCtxDestroy",
    "cuDevicePrimaryCtxRelease_v2",
    "nvrtcDestroyProgram",
    "nvmlShutdown",
];

/// Where a fault is injected: into the operation, or into the drop of what it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Operation,
    Drop,
}

/// A fault: the `nth` call of `name` in `phase` returns `code`.
#[derive(Debug, Clone)]
struct Fault {
    phase: Phase,
    name: String,
    nth: usize,
    code: Code,
}

/// What one run of an operation did.
struct Observed {
    /// `Ok(())`, the error, or a panic's message.
    outcome: std::result::Result<(), Failure>,
    calls: Vec<Call>,
    drop_calls: Vec<Call>,
    /// The calls of the fixtures' drop.
    teardown_calls: Vec<Call>,
    logs: Vec<String>,
    drop_logs: Vec<String>,
    /// Panics in the drop of the result or of the fixtures, and lines logged by the fixtures.
    later_trouble: Vec<String>,
    before: Live,
    after: Live,
    faults_pending: usize,
    misuse: (u64, String),
}

enum Failure {
    Error(Error),
    Panic(String),
}

/// A failure an operation absorbs by design, and why.
struct Absorbed {
    /// The call, as [`Call`] displays it.
    call: &'static str,
    /// Which of its calls (from 1); all when empty.
    nths: &'static [usize],
    /// Why (the behaviour the crate documents).
    why: &'static str,
}

impl Absorbed {
    fn covers(&self, call: &Call, nth: usize) -> bool {
        call.to_string() == self.call && (self.nths.is_empty() || self.nths.contains(&nth))
    }
}

type Exec = Box<dyn Fn(&Stub, Option<&Fault>) -> Observed>;

/// An operation and what its cases expect.
struct Op {
    name: String,
    /// Calls whose failure the operation absorbs by design: it succeeds and logs nothing.
    absorbed: Vec<Absorbed>,
    /// The operation is itself a release (a `close`): a failure returns, and may leak the one
    /// object released.
    releases: bool,
    exec: Exec,
}

/// The last panic's report (message and place), kept by the hook [`report_panics`] installs.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Reports each panic on one line (no backtrace) and keeps it for the case that caught it.
fn report_panics() {
    std::panic::set_hook(Box::new(|info| {
        let report = info.to_string().replace('\n', " ");
        eprintln!("{report}");
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = report;
    }));
}

/// The report of the panic just caught.
fn panic_message() -> String {
    std::mem::take(&mut *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()))
}

/// An operation: `setup` makes its fixtures (fault-free), `run` is the operation on them.
fn op<F: 'static, R: 'static>(
    name: impl Into<String>,
    setup: impl Fn() -> F + 'static,
    run: impl Fn(&F) -> Result<R> + 'static,
) -> Op {
    let exec = move |stub: &Stub, fault: Option<&Fault>| {
        stub.reset();
        stub.unbind();
        stub::take_error_logs();
        let before = stub.live();
        let fixtures = setup();
        stub.take_log();
        let arm = |phase| {
            if let Some(fault) = fault.filter(|fault| fault.phase == phase) {
                stub.fail(&fault.name, fault.code.value as i32, fault.nth);
            }
        };
        arm(Phase::Operation);
        let outcome = catch_unwind(AssertUnwindSafe(|| run(&fixtures)));
        let calls = stub.take_log();
        let logs = stub::take_error_logs();
        let (outcome, value) = match outcome {
            Ok(Ok(value)) => (Ok(()), Some(value)),
            Ok(Err(error)) => (Err(Failure::Error(error)), None),
            Err(_) => (Err(Failure::Panic(panic_message())), None),
        };
        arm(Phase::Drop);
        let mut later_trouble = Vec::new();
        if catch_unwind(AssertUnwindSafe(|| drop(value))).is_err() {
            later_trouble.push(format!("dropping the result panicked: {}", panic_message()));
        }
        let drop_calls = stub.take_log();
        let drop_logs = stub::take_error_logs();
        let faults_pending = stub.faults_pending();
        stub.disarm();
        if catch_unwind(AssertUnwindSafe(|| drop(fixtures))).is_err() {
            later_trouble.push(format!(
                "dropping the fixtures panicked: {}",
                panic_message()
            ));
        }
        let teardown_calls = stub.take_log();
        later_trouble.extend(
            stub::take_error_logs()
                .into_iter()
                .map(|line| format!("the fixtures' drop logged: {line}")),
        );
        stub.unbind();
        Observed {
            outcome,
            calls,
            drop_calls,
            teardown_calls,
            logs,
            drop_logs,
            later_trouble,
            before,
            after: stub.live(),
            faults_pending,
            misuse: stub.misuse(),
        }
    };
    Op {
        name: name.into(),
        absorbed: Vec::new(),
        releases: false,
        exec: Box::new(exec),
    }
}

impl Op {
    /// A call whose failure the operation absorbs by design.
    fn absorbs(self, call: &'static str, why: &'static str) -> Self {
        self.absorbs_nth(call, &[], why)
    }

    /// Some calls (the `nths`, from 1) of a name whose failure the operation absorbs by design.
    fn absorbs_nth(
        mut self,
        call: &'static str,
        nths: &'static [usize],
        why: &'static str,
    ) -> Self {
        self.absorbed.push(Absorbed { call, nths, why });
        self
    }

    /// Marks the operation as a release (`close`).
    fn releasing(mut self) -> Self {
        self.releases = true;
        self
    }
}

// ---- Fixtures. ----

/// PTX text; the stub knows the kernels `twice` and `noop` of any image.
const PTX: &str = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// The smallest CUBIN the crate's image check accepts: an ELF64 little-endian header for
/// `EM_CUDA` (190), 64 bytes long, with no sections or segments.
const CUBIN: &[u8] = &{
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
const FATBIN: &[u8] = &[
    0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// CUDA C++ for NVRTC (the stub compiles anything without `#error`).
const SOURCE: &str = "extern \"C\" __global__ void twice(float* x, size_t n) {\n\
                      size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n\
                      if (i < n) x[i] *= 2.0f;\n}\n";

/// Elements of the fixtures' buffers.
const N: usize = 1024;

fn device() -> Device {
    Device::new(0).expect("the stub's device")
}

fn stream() -> Stream {
    device()
        .create_stream(StreamOptions::default())
        .expect("a stream")
}

fn pool() -> DeviceMemoryResource {
    device()
        .default_memory_resource()
        .expect("the default pool")
}

fn buffer(stream: &Stream) -> Buffer {
    pool()
        .allocate_from_host(&[1.5f32; N], stream)
        .expect("a buffer")
}

fn code_object() -> ObjectCode {
    ObjectCode::from_ptx(PTX).expect("loaded code")
}

fn kernel() -> Kernel {
    code_object().get_kernel("twice").expect("a kernel")
}

fn timed() -> EventOptions {
    EventOptions {
        timing: true,
        ..Default::default()
    }
}

fn arch_90() -> ProgramOptions {
    ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
}

fn program() -> Program {
    let mut program = Program::new(SOURCE, arch_90()).expect("a program");
    program
        .add_name_expression("twice<float>")
        .expect("a name expression");
    program
}

/// A green context of 64 SMs.
fn green() -> Context {
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
struct LaunchFixture {
    stream: Stream,
    buffer: RefCell<Buffer>,
    kernel: Kernel,
    config: LaunchConfig,
}

fn launch_fixture(stream: Stream, kernel: Kernel) -> LaunchFixture {
    stream.context().launch_limits().expect("the limits");
    LaunchFixture {
        buffer: RefCell::new(buffer(&stream)),
        config: LaunchConfig::for_num_elements(N, 256).expect("a configuration"),
        stream,
        kernel,
    }
}

fn launch_twice(fixture: &LaunchFixture, stream: &Stream) -> Result<()> {
    let mut buffer = fixture.buffer.borrow_mut();
    // SAFETY: the stub's `twice` doubles the N floats the buffer holds.
    unsafe { launch(stream, &fixture.config, &fixture.kernel, (&mut *buffer, N)) }
}

/// Releases the primary context (and forgets the default pool) so the operation retains it
/// again; dropping the guard makes both again, so the next case starts as this one did.
struct Cold;

impl Cold {
    fn new() -> Self {
        assert!(device().release_primary_context(), "the context was kept");
        Cold
    }
}

impl Drop for Cold {
    fn drop(&mut self) {
        pool();
    }
}

/// Takes a fixture out of its cell, for an operation that consumes it (`close`).
fn take<T>(cell: &RefCell<Option<T>>) -> T {
    cell.borrow_mut().take().expect("one run per fixture")
}

/// Every operation of the matrix.
fn operations(scratch: &std::path::Path) -> Vec<Op> {
    let mut ops = Vec::new();
    device_operations(&mut ops);
    stream_and_event_operations(&mut ops);
    memory_operations(&mut ops);
    code_operations(&mut ops, scratch);
    green_operations(&mut ops);
    other_operations(&mut ops);
    ops
}

fn device_operations(ops: &mut Vec<Op>) {
    ops.push(op("Device::count", || (), |_| Device::count()));
    ops.push(op("Device::new", || (), |_| Device::new(0)));
    ops.push(op("Device::all", || (), |_| Device::all()));
    ops.push(op("Device::arch", device, |d| d.arch()));
    ops.push(op("Device::name", device, |d| d.name()));
    ops.push(op("Device::uuid", device, |d| d.uuid()));
    ops.push(op("Device::pci_bus_id", device, |d| d.pci_bus_id()));
    ops.push(op("Device::total_memory", device, |d| d.total_memory()));
    ops.push(op("Device::compute_capability", device, |d| {
        d.compute_capability()
    }));
    ops.push(op("Device::properties", device, |d| d.properties()));
    ops.push(op("Device::launch_limits", device, |d| d.launch_limits()));
    ops.push(op("Device::mem_info", device, |d| d.mem_info()));
    ops.push(op("Device::can_access_peer", device, |d| {
        d.can_access_peer(d)
    }));
    ops.push(op(
        "Device::current (a context current)",
        || {
            let device = device();
            device.set_current().expect("bound");
            device
        },
        |_| Device::current(),
    ));
    ops.push(op("Device::from_uuid", device, |d| {
        Device::from_uuid(d.uuid()?)
    }));
    ops.push(op("Device::set_current", device, |d| d.set_current()));
    ops.push(op(
        "Device::set_current (retains the primary context)",
        || (Cold::new(), device()),
        |(_, d)| d.set_current(),
    ));
    ops.push(op(
        "Device::context (retains the primary context)",
        || (Cold::new(), device()),
        |(_, d)| d.context(),
    ));
    ops.push(op("Device::sync", device, |d| d.sync()));
    ops.push(op(
        "Device::release_primary_context",
        // The operation releases the context itself; the guard only makes it again.
        || (Cold, device()),
        |(_, d)| Ok(d.release_primary_context()),
    ));
    ops.push(op(
        "Context::stream_priority_range",
        || device().context().expect("the primary context"),
        |c| c.stream_priority_range(),
    ));
    ops.push(op(
        "Context::bind",
        || device().context().expect("the primary context"),
        |c| c.bind(),
    ));
    ops.push(op(
        "Context::scoped",
        || device().context().expect("the primary context"),
        |c| c.scoped().map(drop),
    ));
    ops.push(op(
        "cuda_driver_version",
        || (),
        |_| cuda_safe::cuda_driver_version(),
    ));
}

fn stream_and_event_operations(ops: &mut Vec<Op>) {
    ops.push(op("Device::create_stream", device, |d| {
        d.create_stream(StreamOptions::default())
    }));
    ops.push(op("Device::create_stream (priority)", device, |d| {
        d.create_stream(StreamOptions {
            priority: Some(-2),
            ..Default::default()
        })
    }));
    ops.push(op("Device::create_stream (blocking)", device, |d| {
        d.create_stream(StreamOptions {
            non_blocking: false,
            ..Default::default()
        })
    }));
    ops.push(op("Stream::sync", stream, |s| s.sync()));
    ops.push(op("Stream::query", stream, |s| s.query()));
    ops.push(op("Stream::priority", stream, |s| s.priority()));
    ops.push(op("Stream::is_non_blocking", stream, |s| {
        s.is_non_blocking()
    }));
    ops.push(op(
        "Stream::wait",
        || {
            let stream = stream();
            let event = device()
                .create_event(EventOptions::default())
                .expect("an event");
            event.record(&stream).expect("recorded");
            (stream, event)
        },
        |(s, e)| s.wait(e),
    ));
    ops.push(op(
        "Stream::wait_stream (makes the marker event)",
        || (stream(), stream()),
        |(a, b)| a.wait_stream(b),
    ));
    ops.push(op(
        "Stream::wait_stream (again)",
        || {
            let (a, b) = (stream(), stream());
            a.wait_stream(&b).expect("a first wait");
            (a, b)
        },
        |(a, b)| a.wait_stream(b),
    ));
    ops.push(
        op(
            "Stream::close",
            || RefCell::new(Some(stream())),
            |s| take(s).close(),
        )
        .releasing(),
    );
    ops.push(op("Device::create_event", device, |d| {
        d.create_event(timed())
    }));
    ops.push(op("Device::create_event (IPC)", device, |d| {
        d.create_event(EventOptions {
            ipc: true,
            ..Default::default()
        })
    }));
    ops.push(op(
        "Event::record",
        || (stream(), device().create_event(timed()).expect("an event")),
        |(s, e)| e.record(s),
    ));
    ops.push(op(
        "Event::sync",
        || device().create_event(timed()).expect("an event"),
        |e| e.sync(),
    ));
    ops.push(op(
        "Event::is_done",
        || device().create_event(timed()).expect("an event"),
        |e| e.is_done(),
    ));
    ops.push(op(
        "Event::elapsed",
        || {
            let stream = stream();
            let (start, end) = (
                device().create_event(timed()).expect("an event"),
                device().create_event(timed()).expect("an event"),
            );
            start.record(&stream).expect("recorded");
            end.record(&stream).expect("recorded");
            (stream, start, end)
        },
        |(_, start, end)| Event::elapsed(start, end),
    ));
    ops.push(op(
        "Event::ipc_handle",
        || {
            device()
                .create_event(EventOptions {
                    ipc: true,
                    ..Default::default()
                })
                .expect("an IPC event")
        },
        |e| e.ipc_handle(),
    ));
    ops.push(
        op(
            "Event::close",
            || RefCell::new(Some(device().create_event(timed()).expect("an event"))),
            |e| take(e).close(),
        )
        .releasing(),
    );
}

fn memory_operations(ops: &mut Vec<Op>) {
    ops.push(op(
        "DeviceMemoryResource::default_pool (made on first use)",
        || (Cold::new(), device()),
        |(_, d)| DeviceMemoryResource::default_pool(d),
    ));
    ops.push(op("DeviceMemoryResource::new_pool", device, |d| {
        DeviceMemoryResource::new_pool(
            d,
            PoolOptions {
                max_size: Some(1 << 20),
                release_threshold: Some(0),
            },
        )
    }));
    ops.push(
        op(
            "DeviceMemoryResource::close (an owned pool)",
            || {
                RefCell::new(Some(
                    DeviceMemoryResource::new_pool(&device(), PoolOptions::default())
                        .expect("a pool"),
                ))
            },
            |p| take(p).close(),
        )
        .releasing(),
    );
    ops.push(op("DeviceMemoryResource::used_memory", pool, |p| {
        p.used_memory()
    }));
    ops.push(op("DeviceMemoryResource::reserved_memory", pool, |p| {
        p.reserved_memory()
    }));
    ops.push(op(
        "DeviceMemoryResource::set_release_threshold",
        pool,
        |p| p.set_release_threshold(1 << 20),
    ));
    ops.push(op("DeviceMemoryResource::trim_to", pool, |p| p.trim_to(0)));
    ops.push(op(
        "DeviceMemoryResource::allocate",
        || (pool(), stream()),
        |(p, s)| p.allocate(4 * N, s),
    ));
    ops.push(op(
        "DeviceMemoryResource::allocate (an owned pool)",
        || {
            let pool =
                DeviceMemoryResource::new_pool(&device(), PoolOptions::default()).expect("a pool");
            (pool, stream())
        },
        |(p, s)| p.allocate(4 * N, s),
    ));
    ops.push(op(
        "Device::allocate",
        || (device(), stream()),
        |(d, s)| d.allocate(4 * N, s),
    ));
    ops.push(op(
        "DeviceMemoryResource::allocate_zeroed",
        || (pool(), stream()),
        |(p, s)| p.allocate_zeroed::<f32>(N, s),
    ));
    ops.push(op(
        "DeviceMemoryResource::allocate_from_host",
        || (pool(), stream()),
        |(p, s)| p.allocate_from_host(&[2.5f32; N], s),
    ));
    ops.push(op(
        "Buffer::to_vec",
        || {
            let s = stream();
            (buffer(&s), s)
        },
        |(b, _)| b.to_vec::<f32>(),
    ));
    ops.push(op(
        "Buffer::copy_from_host",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, _)| b.borrow_mut().copy_from_host(&[3.0f32; N]),
    ));
    ops.push(op(
        "DeviceSliceMut::copy_from_host_async, DeviceSlice::copy_to_host_async",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, s)| {
            let mut buffer = b.borrow_mut();
            let mut host = vec![4.0f32; N];
            // SAFETY: `host` outlives the copies, which the stream finishes before it is read
            // or dropped (the sync below; the stub copies at once).
            unsafe {
                buffer.as_mut_slice::<f32>()?.copy_from_host_async(&host)?;
                buffer.as_slice::<f32>()?.copy_to_host_async(&mut host)?;
            }
            s.sync()
        },
    ));
    ops.push(op(
        "Buffer::copy_from (same stream)",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), buffer(&s), s)
        },
        |(dst, src, _)| dst.borrow_mut().copy_from(src),
    ));
    ops.push(op(
        "Buffer::copy_from (across streams)",
        || {
            let (a, b) = (stream(), stream());
            (RefCell::new(buffer(&a)), buffer(&b), a, b)
        },
        |(dst, src, _, _)| dst.borrow_mut().copy_from(src),
    ));
    ops.push(op(
        "Buffer::fill::<f32>",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, _)| b.borrow_mut().fill(0.5f32),
    ));
    ops.push(op(
        "Buffer::fill::<f64> (two columns)",
        || {
            let s = stream();
            (RefCell::new(buffer(&s)), s)
        },
        |(b, _)| b.borrow_mut().fill(1.5f64),
    ));
    ops.push(op(
        "Buffer::fill::<[u8; 3]> (three columns)",
        || {
            let s = stream();
            let buffer = pool().allocate(3 * N, &s).expect("a buffer");
            (RefCell::new(buffer), s)
        },
        |(b, _)| b.borrow_mut().fill([1u8, 2, 3]),
    ));
    ops.push(op(
        "Buffer::set_stream",
        || {
            let (a, b) = (stream(), stream());
            (RefCell::new(buffer(&a)), a, b)
        },
        |(buffer, _, b)| buffer.borrow_mut().set_stream(b),
    ));
    ops.push(
        op(
            "Buffer::close",
            || {
                let s = stream();
                (RefCell::new(Some(buffer(&s))), s)
            },
            |(b, _)| take(b).close(),
        )
        .releasing(),
    );
    ops.push(op("ManagedMemoryResource::new", device, |d| {
        ManagedMemoryResource::new(d)
    }));
    ops.push(op(
        "PinnedMemoryResource::allocate",
        || {
            (
                PinnedMemoryResource::new(&device()).expect("pinned"),
                stream(),
            )
        },
        |(p, s)| p.allocate_from_host(&[1.0f32; N], s),
    ));
    ops.push(op(
        "ManagedMemoryResource::allocate",
        || {
            (
                ManagedMemoryResource::new(&device()).expect("managed"),
                stream(),
            )
        },
        |(m, s)| m.allocate_zeroed::<f32>(N, s),
    ));
    ops.push(op(
        "Buffer::as_host_slice (pinned)",
        || {
            let s = stream();
            let pinned = PinnedMemoryResource::new(&device()).expect("pinned");
            (
                pinned
                    .allocate_from_host(&[1.0f32; N], &s)
                    .expect("pinned memory"),
                s,
            )
        },
        |(b, _)| b.as_host_slice::<f32>().map(|values| values[0]),
    ));
    ops.push(
        op(
            "Buffer::close (pinned)",
            || {
                let s = stream();
                let pinned = PinnedMemoryResource::new(&device()).expect("pinned");
                (
                    RefCell::new(Some(pinned.allocate(4 * N, &s).expect("pinned memory"))),
                    s,
                )
            },
            |(b, _)| take(b).close(),
        )
        .releasing(),
    );
}

fn code_operations(ops: &mut Vec<Op>, scratch: &std::path::Path) {
    ops.push(op(
        "ObjectCode::from_ptx",
        || (),
        |_| ObjectCode::from_ptx(PTX),
    ));
    ops.push(op(
        "ObjectCode::from_cubin",
        || (),
        |_| ObjectCode::from_cubin(CUBIN),
    ));
    ops.push(op(
        "ObjectCode::from_fatbin",
        || (),
        |_| ObjectCode::from_fatbin(FATBIN),
    ));
    let file = scratch.join("kernels.cubin");
    std::fs::write(&file, CUBIN).expect("a CUBIN file");
    ops.push(op(
        "ObjectCode::from_file",
        || (),
        move |_| ObjectCode::from_file(&file),
    ));
    ops.push(op(
        "ObjectCode::from_compiled (a compiled PTX)",
        || program().compile(CodeKind::Ptx).expect("compiled"),
        |compiled| compiled.load(),
    ));
    ops.push(
        op(
            "ObjectCode::close",
            || RefCell::new(Some(code_object())),
            |code| take(code).close(),
        )
        .releasing(),
    );
    ops.push(op("ObjectCode::get_kernel", code_object, |code| {
        code.get_kernel("twice")
    }));
    ops.push(op(
        "ObjectCode::get_kernel (a name expression)",
        || {
            program()
                .compile(CodeKind::Cubin)
                .expect("compiled")
                .load()
                .expect("loaded")
        },
        |code| code.get_kernel("twice<float>"),
    ));
    ops.push(op("ObjectCode::kernels", code_object, |code| {
        code.kernels()
    }));
    ops.push(op(
        "ObjectCode::get_global",
        || {
            (
                code_object(),
                device().context().expect("the primary context"),
            )
        },
        |(code, context)| code.get_global("counter", context),
    ));
    ops.push(op("Kernel::symbol", kernel, |k| k.symbol()));
    ops.push(
        op("Kernel::params (no context current)", kernel, |k| {
            Ok(k.params().map(<[_]>::len))
        })
        .absorbs(
            "cuKernelGetParamInfo",
            "Kernel::params reads the list best-effort: a failure is `None`, read again next time \
         (NOT_SUPPORTED: never)",
        ),
    );
    ops.push(op(
        "Kernel::attributes",
        || (kernel(), device()),
        |(k, d)| k.attributes(d),
    ));
    ops.push(op(
        "Kernel::set_max_dynamic_shared_memory",
        || (kernel(), device()),
        |(k, d)| k.set_max_dynamic_shared_memory(64 << 10, d),
    ));
    ops.push(op(
        "KernelOccupancy::max_active_blocks_per_multiprocessor",
        || (kernel(), device()),
        |(k, d)| k.occupancy(d).max_active_blocks_per_multiprocessor(256, 0),
    ));
    ops.push(op(
        "KernelOccupancy::max_potential_block_size",
        || (kernel(), device()),
        |(k, d)| k.occupancy(d).max_potential_block_size(0),
    ));
    ops.push(op(
        "launch",
        || {
            let fixture = launch_fixture(stream(), kernel());
            launch_twice(&fixture, &fixture.stream).expect("a first launch");
            fixture
        },
        |f| launch_twice(f, &f.stream),
    ));
    const PARAMS: &str = "launch checks the arguments against the parameter list when the driver \
                          gives it; reading it is best-effort (kernel::params)";
    ops.push(
        op(
            "launch (first launch of a kernel: reads its parameters)",
            || launch_fixture(stream(), kernel()),
            |f| launch_twice(f, &f.stream),
        )
        .absorbs("cuCtxGetCurrent", PARAMS)
        .absorbs("cuCtxSetCurrent(ctx)", PARAMS)
        .absorbs("cuKernelGetParamInfo", PARAMS),
    );
    ops.push(op(
        "launch (a buffer of another stream)",
        || {
            let fixture = launch_fixture(stream(), kernel());
            let other = stream();
            launch_twice(&fixture, &other).expect("a first launch");
            (fixture, other)
        },
        |(f, other)| launch_twice(f, other),
    ));
    ops.push(op(
        "launch (in a new green context: reads its limits)",
        || {
            let primary = launch_fixture(stream(), kernel());
            launch_twice(&primary, &primary.stream).expect("a launch reading the parameters");
            let stream = green()
                .create_stream(StreamOptions::default())
                .expect("a stream");
            LaunchFixture {
                buffer: RefCell::new(buffer(&stream)),
                stream,
                ..primary
            }
        },
        |f| launch_twice(f, &f.stream),
    ));
    ops.push(op(
        "nvrtc_supported_archs",
        || (),
        |_| cuda_safe::nvrtc_supported_archs(),
    ));
    ops.push(op(
        "Program::compile (PTX, a name expression)",
        program,
        |p| p.compile(CodeKind::Ptx),
    ));
    ops.push(op("Program::compile (CUBIN)", program, |p| {
        p.compile(CodeKind::Cubin)
    }));
    ops.push(op("Program::compile (LTO-IR)", program, |p| {
        p.compile(CodeKind::LtoIr)
    }));
    ops.push(op(
        "Program::compile (the current device's architecture)",
        || Program::new(SOURCE, ProgramOptions::default()).expect("a program"),
        |p| p.compile(CodeKind::Cubin),
    ));
    ops.push(op(
        "Program::compile_cached (a miss)",
        || (InMemoryProgramCache::new(1 << 20), program()),
        |(cache, p)| p.compile_cached(CodeKind::Ptx, cache),
    ));
    ops.push(op(
        "KernelCache::kernel (a miss: compiles, loads, looks up)",
        || {
            (
                KernelCache::new(InMemoryProgramCache::new(1 << 20)),
                program(),
            )
        },
        |(cache, p)| cache.kernel(p, CodeKind::Cubin, "twice<float>"),
    ));
}

fn green_operations(ops: &mut Vec<Op>) {
    const ARCH_NAME: &str = "the architecture only names the GPU in an error message; \
                             unreadable, it is `this GPU` (green::resources::arch_name)";
    ops.push(op("DeviceResources::sm", device, |d| d.resources().sm()));
    ops.push(
        op(
            "SmResource::plan",
            || device().resources().sm().expect("the SMs"),
            |sm| sm.plan(&SplitRequest::equal(2, 64)),
        )
        .absorbs_nth("cuDeviceGetAttribute", &[1, 2], ARCH_NAME),
    );
    ops.push(
        op(
            "SmResource::split (equal groups)",
            || device().resources().sm().expect("the SMs"),
            |sm| sm.split(&SplitRequest::equal(4, 32)),
        )
        .absorbs_nth("cuDeviceGetAttribute", &[1, 2], ARCH_NAME),
    );
    if cuda_safe::sys::ABI_MAJOR >= 13 {
        ops.push(
            op(
                "SmResource::split (unequal groups)",
                || device().resources().sm().expect("the SMs"),
                |sm| sm.split(&SplitRequest::counts([64, 32, 16])),
            )
            .absorbs_nth("cuDeviceGetAttribute", &[1, 2], ARCH_NAME),
        );
        ops.push(op("DeviceResources::workqueue_config", device, |d| {
            d.resources().workqueue_config()
        }));
        ops.push(op(
            "Device::create_green_context (with a workqueue)",
            || {
                let sm = device().resources().sm().expect("the SMs");
                let split = sm.split(&SplitRequest::equal(2, 64)).expect("a split");
                let workqueue = device()
                    .resources()
                    .workqueue_config()
                    .expect("a workqueue");
                (device(), split, workqueue)
            },
            |(d, split, workqueue)| {
                d.create_green_context(
                    &split.groups[1],
                    GreenContextOptions {
                        workqueue: Some(*workqueue),
                    },
                )
            },
        ));
    }
    ops.push(op(
        "Device::create_green_context",
        || {
            let split = device()
                .resources()
                .sm()
                .and_then(|sm| sm.split(&SplitRequest::equal(2, 64)))
                .expect("a split");
            (device(), split)
        },
        |(d, split)| d.create_green_context(&split.groups[0], GreenContextOptions::default()),
    ));
    ops.push(
        op(
            "Context::close (green)",
            || RefCell::new(Some(green())),
            |c| take(c).close(),
        )
        .releasing(),
    );
    ops.push(
        op(
            "Context::close (green, current)",
            || {
                let context = green();
                context.bind().expect("bound");
                RefCell::new(Some(context))
            },
            |c| {
                let context = take(c);
                context.bind()?;
                context.close()
            },
        )
        .releasing(),
    );
    ops.push(op("Context::resources (green)", green, |c| {
        c.resources().sm()
    }));
    ops.push(op("Context::create_stream (green)", green, |c| {
        c.create_stream(StreamOptions::default())
    }));
    ops.push(op("Context::create_event (green)", green, |c| {
        c.create_event(EventOptions::default())
    }));
    ops.push(op("Context::sync (green)", green, |c| c.sync()));
}

fn other_operations(ops: &mut Vec<Op>) {
    const PID: u32 = 4242;
    let process = || Process::new(PID).expect("a process");
    ops.push(op("checkpoint::Process::new", || (), |_| Process::new(PID)));
    ops.push(op("Process::state", process, |p| p.state()));
    ops.push(op("Process::restore_thread_id", process, |p| {
        p.restore_thread_id()
    }));
    ops.push(op("Process::lock", process, |p| p.lock(None)));
    ops.push(op(
        "Process::checkpoint",
        move || {
            let p = process();
            p.lock(None).expect("locked");
            p
        },
        |p| p.checkpoint(),
    ));
    ops.push(op(
        "Process::restore",
        move || {
            let p = process();
            p.lock(None).expect("locked");
            p.checkpoint().expect("checkpointed");
            p
        },
        |p| p.restore(),
    ));
    if cuda_safe::sys::ABI_MAJOR >= 13 {
        ops.push(op(
            "Process::restore_remapped",
            move || {
                let p = process();
                p.lock(None).expect("locked");
                p.checkpoint().expect("checkpointed");
                let uuid = device().uuid().expect("the UUID");
                (
                    p,
                    GpuPair {
                        old: uuid,
                        new: uuid,
                    },
                )
            },
            |(p, pair)| p.restore_remapped(&[*pair]),
        ));
    }
    ops.push(op(
        "Process::unlock",
        move || {
            let p = process();
            p.lock(None).expect("locked");
            p
        },
        |p| p.unlock(),
    ));
    ops.push(op(
        "system::Session::new",
        || (),
        |_| system::Session::new(),
    ));
    let session = || system::Session::new().expect("NVML");
    ops.push(op("Session::device_count", session, |s| s.device_count()));
    ops.push(op("Session::driver_version", session, |s| {
        s.driver_version()
    }));
    ops.push(op("Session::nvml_version", session, |s| s.nvml_version()));
    ops.push(op("Session::cuda_driver_version", session, |s| {
        s.cuda_driver_version()
    }));
    ops.push(op(
        "system::Device::from_index",
        || (),
        |_| system::Device::from_index(0),
    ));
    let gpu = || system::Device::from_index(0).expect("an NVML device");
    ops.push(op("system::Device::name", gpu, |g| g.name()));
    ops.push(op("system::Device::uuid", gpu, |g| g.uuid()));
    ops.push(op("system::Device::memory_info", gpu, |g| g.memory_info()));
    ops.push(op("system::Device::temperature_c", gpu, |g| {
        g.temperature_c()
    }));
    ops.push(op("system::Device::power_usage_mw", gpu, |g| {
        g.power_usage_mw()
    }));
    ops.push(op("Device::to_nvml", device, |d| d.to_nvml()));
    ops.push(op("Device::from_nvml", gpu, Device::from_nvml));
}

// ---- Checking. ----

/// Whether `error` is the failure of `call` with `code`, as the crate documents it: the
/// library's error naming both (or the launch-ordering error wrapping it), whose predicates
/// agree with the code.
fn names_fault(error: &Error, call: &str, code: Code) -> std::result::Result<(), String> {
    let wrong = || {
        Err(format!(
            "the error is not {call} failing with {}: {error:?}",
            code.text
        ))
    };
    match error {
        Error::Cuda {
            api,
            code: raw,
            name,
            ..
        } => {
            if *api != call || raw.0 != code.value || *name != code.text {
                return wrong();
            }
            if error.is_out_of_memory() != (code.value == 2)
                || error.is_not_supported() != (code.value == 801)
                || error.is_no_device()
            {
                return Err(format!("the predicates disagree with the code: {error:?}"));
            }
            Ok(())
        }
        Error::Nvrtc {
            api,
            code: raw,
            message,
            ..
        } => {
            if *api != call || raw.0 != code.value || *message != code.text {
                return wrong();
            }
            if error.is_out_of_memory() != (code.value == 1) {
                return Err(format!(
                    "is_out_of_memory disagrees with the code: {error:?}"
                ));
            }
            Ok(())
        }
        Error::Nvml {
            api,
            code: raw,
            message,
        } => {
            if *api != call || raw.0 != code.value || *message != code.text {
                return wrong();
            }
            if error.is_out_of_memory() != (code.value == 20)
                || error.is_not_supported() != (code.value == 3)
            {
                return Err(format!("the predicates disagree with the code: {error:?}"));
            }
            Ok(())
        }
        Error::LaunchOrdering { source } => names_fault(source, call, code),
        _ => wrong(),
    }
}

/// Checks that exactly one line was logged, naming the call and the code.
fn one_line(logs: &[String], call: &str, code: Code) -> std::result::Result<(), String> {
    match logs {
        [line] if line.contains(call) && line.contains(code.text) => Ok(()),
        _ => Err(format!(
            "expected one error line naming {call} and {}, got {logs:?}",
            code.text
        )),
    }
}

/// Checks the live objects: none more than the clean run left except up to `leak` in all, none
/// fewer (an over-release).
fn check_live(clean: &Observed, seen: &Observed, leak: i64) -> std::result::Result<(), String> {
    let mut extra = 0;
    for (index, kind) in KINDS.iter().enumerate() {
        let expected = clean.after[index] - clean.before[index];
        let delta = seen.after[index] - seen.before[index];
        if delta < expected {
            return Err(format!(
                "{} {kind} object(s) released too many",
                expected - delta
            ));
        }
        extra += delta - expected;
    }
    if extra > leak {
        let detail: Vec<String> = KINDS
            .iter()
            .enumerate()
            .filter_map(|(index, kind)| {
                let over = (seen.after[index] - seen.before[index])
                    - (clean.after[index] - clean.before[index]);
                (over > 0).then(|| format!("{over} {kind}"))
            })
            .collect();
        return Err(format!(
            "leaked {} (at most {leak} allowed)",
            detail.join(", ")
        ));
    }
    Ok(())
}

/// Checks that a failed release is not made again: the drops after the fault (the result's and
/// the fixtures') call it no more often than the clean run's.
fn not_retried(call: &Call, clean: &Observed, seen: &Observed) -> std::result::Result<(), String> {
    if !RELEASES.contains(&call.name.as_str()) {
        return Ok(());
    }
    let count = |run: &Observed| {
        run.drop_calls
            .iter()
            .chain(&run.teardown_calls)
            .filter(|made| made.name == call.name)
            .count()
    };
    if count(seen) > count(clean) {
        return Err(format!("{} was called again after it failed", call.name));
    }
    Ok(())
}

/// Checks one faulted run against the clean run.
fn check(
    op: &Op,
    fault: &Fault,
    call: &Call,
    clean: &Observed,
    seen: &Observed,
) -> std::result::Result<(), String> {
    if let Some(trouble) = seen.later_trouble.first() {
        return Err(trouble.clone());
    }
    if seen.faults_pending != 0 {
        return Err("the fault never fired: the calls differ from the clean run's".into());
    }
    if seen.misuse.0 != 0 {
        return Err(format!("the crate misused the driver: {}", seen.misuse.1));
    }
    match fault.phase {
        Phase::Operation => {
            let absorbed = op
                .absorbed
                .iter()
                .any(|absorbed| absorbed.covers(call, fault.nth));
            let release = RELEASES.contains(&call.name.as_str());
            // A release inside an operation, or a guard restoring "no context", can only log;
            // a `close` returns its error.
            let logged = call.unbinds() || (release && !op.releases);
            let may_leak = op.releases || call.unbinds() || release;
            if !seen.drop_logs.is_empty() {
                return Err(format!("the result's drop logged {:?}", seen.drop_logs));
            }
            match &seen.outcome {
                Err(Failure::Panic(message)) => return Err(format!("panicked: {message}")),
                Ok(()) if absorbed => {
                    if !seen.logs.is_empty() {
                        return Err(format!("an absorbed failure logged {:?}", seen.logs));
                    }
                }
                Ok(()) if logged => one_line(&seen.logs, &call.name, fault.code)?,
                Ok(()) => return Err("the failure was swallowed: the operation succeeded".into()),
                Err(Failure::Error(error)) => {
                    names_fault(error, &call.name, fault.code)?;
                    if !seen.logs.is_empty() {
                        return Err(format!("the failed operation logged {:?}", seen.logs));
                    }
                }
            }
            not_retried(call, clean, seen)?;
            check_live(clean, seen, i64::from(may_leak))
        }
        Phase::Drop => {
            match &seen.outcome {
                Ok(()) => {}
                Err(Failure::Panic(message)) => return Err(format!("panicked: {message}")),
                Err(Failure::Error(error)) => return Err(format!("the operation failed: {error}")),
            }
            one_line(&seen.drop_logs, &call.name, fault.code)?;
            not_retried(call, clean, seen)?;
            check_live(clean, seen, 1)
        }
    }
}

/// A failure of the crate this matrix found that is not fixed yet (`cuda-safe/src` is someone
/// else's to change): its cases must fail exactly so, for every code, and once they pass the
/// test fails until the entry is struck off.
struct Gap {
    op: &'static str,
    /// The failed call, as [`Call`] displays it, and which of its name (from 1).
    call: &'static str,
    nth: usize,
    /// The problem [`check`] reports.
    problem: &'static str,
    /// What is wrong in the crate.
    why: &'static str,
}

const KNOWN_GAPS: &[Gap] = &[];

/// What running one operation's matrix gave.
struct Report {
    calls: usize,
    drop_calls: usize,
    faults: usize,
    failures: Vec<String>,
    /// The known gaps of the operation and how many cases showed each.
    gaps: Vec<(&'static Gap, usize)>,
}

/// The clean run, then every call of it failed with every code.
fn run_matrix(stub: &Stub, op: &Op) -> Report {
    let clean = (op.exec)(stub, None);
    let mut report = Report {
        calls: clean.calls.len(),
        drop_calls: clean.drop_calls.len(),
        faults: 0,
        failures: Vec::new(),
        gaps: KNOWN_GAPS
            .iter()
            .filter(|gap| gap.op == op.name)
            .map(|gap| (gap, 0))
            .collect(),
    };
    let clean_problem = match &clean.outcome {
        Err(Failure::Error(error)) => Some(format!("the clean run failed: {error}")),
        Err(Failure::Panic(message)) => Some(format!("the clean run panicked: {message}")),
        Ok(()) if clean.calls.is_empty() => Some("the operation calls no library".into()),
        Ok(()) if clean.misuse.0 != 0 => Some(format!(
            "the clean run misused the driver: {}",
            clean.misuse.1
        )),
        Ok(()) if !(clean.logs.is_empty() && clean.drop_logs.is_empty()) => Some(format!(
            "the clean run logged {:?} {:?}",
            clean.logs, clean.drop_logs
        )),
        Ok(()) if clean.after != clean.before => Some(format!(
            "the clean run changed the live objects: {:?} -> {:?}",
            clean.before, clean.after
        )),
        Ok(()) => clean.later_trouble.first().cloned(),
    };
    if let Some(problem) = clean_problem {
        report.failures.push(problem);
        return report;
    }
    let phases = [
        (Phase::Operation, &clean.calls),
        (Phase::Drop, &clean.drop_calls),
    ];
    for (phase, calls) in phases {
        for (index, call) in calls.iter().enumerate() {
            let nth = calls[..=index]
                .iter()
                .filter(|c| c.name == call.name)
                .count();
            for &code in codes_for(&call.name) {
                let fault = Fault {
                    phase,
                    name: call.name.clone(),
                    nth,
                    code,
                };
                let seen = (op.exec)(stub, Some(&fault));
                report.faults += 1;
                let outcome = check(op, &fault, call, &clean, &seen);
                let gap = report.gaps.iter_mut().find(|(gap, _)| {
                    phase == Phase::Operation
                        && gap.call == call.to_string()
                        && gap.nth == nth
                        && outcome.as_ref().err().map(String::as_str) == Some(gap.problem)
                });
                if let Some((_, seen)) = gap {
                    *seen += 1;
                } else if let Err(problem) = outcome {
                    let place = match phase {
                        Phase::Operation => "",
                        Phase::Drop => " on drop",
                    };
                    report.failures.push(format!(
                        "{call} (call {} of the run{place}, #{nth} of its name) failing with {} ({}): {problem}",
                        index + 1,
                        code.text,
                        code.value
                    ));
                }
            }
        }
    }
    for (gap, seen) in &report.gaps {
        let expected = codes_for(gap.call).len();
        if *seen != expected {
            report.failures.push(format!(
                "the known gap at {} #{} shows in {seen} of {expected} cases: strike it off \
                 KNOWN_GAPS if the crate was fixed",
                gap.call, gap.nth
            ));
        }
    }
    report
}

/// The calls made only until they first succeed, failed before anything else runs: `cuInit`
/// (through the first `Device::count`) and `nvrtcVersion` (through `nvrtc_version`). Each
/// failure is returned and the next call tries again. Returns (faults, failures).
fn first_use(stub: &Stub) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut faults = 0;
    let cases: [(&str, &dyn Fn() -> Result<()>); 2] = [
        ("cuInit", &|| Device::count().map(drop)),
        ("nvrtcVersion", &|| cuda_safe::nvrtc_version().map(drop)),
    ];
    for (call, first) in cases {
        for &code in codes_for(call) {
            stub.reset();
            stub.fail(call, code.value as i32, 1);
            faults += 1;
            match catch_unwind(AssertUnwindSafe(first)) {
                Ok(Err(error)) => {
                    if let Err(problem) = names_fault(&error, call, code) {
                        failures.push(format!("{call} failing with {}: {problem}", code.text));
                    }
                }
                Ok(Ok(())) => {
                    failures.push(format!("{call} failing with {}: swallowed", code.text))
                }
                Err(_) => failures.push(format!("{call}: panicked: {}", panic_message())),
            }
        }
        stub.reset();
        let retried = first().is_ok() && stub.calls(call) == 1;
        stub.reset();
        let remembered = first().is_ok() && stub.calls(call) == 0;
        if !(retried && remembered) {
            failures.push(format!(
                "{call}: after its failures, one successful call then none expected"
            ));
        }
    }
    (faults, failures)
}

/// The error texts: a failed `cuGetErrorName` / `cuGetErrorString` while an error is built
/// leaves the crate's fallbacks, and the error is still the call's. Returns (faults, failures).
fn error_texts(stub: &Stub) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut faults = 0;
    let stream = stream();
    for (text_call, fallback) in [
        ("cuGetErrorName", "an unknown CUDA error code"),
        ("cuGetErrorString", "no message from the driver"),
    ] {
        for &code in &CUDA_CODES {
            stub.reset();
            stub.fail("cuStreamSynchronize", 2, 1);
            stub.fail(text_call, code.value as i32, 1);
            faults += 1;
            match stream.sync() {
                Err(Error::Cuda {
                    api: "cuStreamSynchronize",
                    code: raw,
                    name,
                    message,
                }) if raw.0 == 2 => {
                    let text = if text_call == "cuGetErrorName" {
                        name
                    } else {
                        message
                    };
                    if text != fallback {
                        failures.push(format!("{text_call} failing: the error says {text:?}"));
                    }
                }
                other => failures.push(format!("{text_call} failing: {other:?}")),
            }
        }
    }
    (faults, failures)
}

/// Documented mappings of an older driver: checkpoints need 12.8 and unequal splits 13.1,
/// both reported as `Unsupported`.
fn old_driver(stub: &Stub) -> Vec<String> {
    let mut failures = Vec::new();
    stub.set_driver_version(12040);
    match Process::new(4242) {
        Err(error @ Error::Unsupported { .. }) if error.is_not_supported() => {}
        other => failures.push(format!("checkpoints on a 12.4 driver: {other:?}")),
    }
    stub.set_driver_version(13000);
    let sm = device().resources().sm().expect("the SMs");
    match sm.split(&SplitRequest::counts([64, 32])) {
        Err(Error::Unsupported { .. }) => {}
        other => failures.push(format!("unequal groups on a 13.0 driver: {other:?}")),
    }
    stub.set_driver_version(13010);
    failures
}

/// The stub through the crate, fault-free: copies round-trip, the kernel runs, compile errors
/// carry the log, a kernel's parameter list is read, and every object goes back.
fn sanity(stub: &Stub) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    let before = stub.live();
    {
        let device = device();
        let properties = device.properties()?;
        if properties.multiprocessor_count != 132 || device.arch()? != "90" {
            failures.push(format!("the device: {properties:?}"));
        }
        let stream = device.create_stream(StreamOptions::default())?;
        let pool = device.default_memory_resource()?;
        let mut x = pool.allocate_from_host(&[1.5f32; N], &stream)?;
        let kernel = program()
            .compile(CodeKind::Cubin)?
            .load()?
            .get_kernel("twice<float>")?;
        let config = LaunchConfig::for_num_elements(N, 256)?;
        // SAFETY: the stub's `twice` doubles the N floats `x` holds.
        unsafe { launch(&stream, &config, &kernel, (&mut x, N)) }?;
        if x.to_vec::<f32>()? != [3.0f32; N] || kernel.param_count() != Some(2) {
            failures
                .push("the kernel did not run on the buffer, or its parameters are unknown".into());
        }
        // SAFETY: as above; one argument is missing, which the parameter list reveals.
        let missing = unsafe { launch(&stream, &config, &kernel, (&mut x,)) };
        if !matches!(missing, Err(Error::InvalidArgument(_))) {
            failures.push(format!("a launch with too few arguments: {missing:?}"));
        }
        let mut y = pool.allocate_zeroed::<f64>(N, &stream)?;
        y.fill(0.25f64)?;
        let z = pool.allocate_zeroed::<u16>(N, &stream)?;
        if y.to_vec::<f64>()? != [0.25f64; N] || z.to_vec::<u16>()? != [0u16; N] {
            failures.push("fills do not write what they were given".into());
        }
        let broken = Program::new("#error broken", arch_90())?.compile(CodeKind::Ptx);
        match broken {
            Err(Error::Nvrtc { log: Some(log), .. }) if log.contains("#error") => {}
            other => failures.push(format!("a compile error: {other:?}")),
        }
        let uuid: Uuid = device.uuid()?;
        if Device::from_nvml(&device.to_nvml()?)? != device || uuid.0[0] != 0x5a {
            failures.push("CUDA and NVML disagree on the device".into());
        }
    }
    if !device().release_primary_context() || stub.live() != before {
        failures.push(format!("objects left: {before:?} -> {:?}", stub.live()));
    }
    // Every operation below starts with the primary context and the default pool made.
    pool();
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures.push(format!("misuses: {misuses}, last: {last}"));
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures.push(format!("logged: {logs:?}"));
    }
    Ok(failures)
}

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("fault_injection: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    report_panics();
    let mut failed = 0usize;
    let mut faults = 0usize;
    let mut operations_run = 0usize;
    let mut gap_cases = 0usize;
    let mut report_group = |name: &str, detail: &str, group_faults: usize, failures: &[String]| {
        faults += group_faults;
        let verdict = if failures.is_empty() { "ok" } else { "FAIL" };
        println!("{verdict:<4} {name:<58} {detail}");
        for failure in failures.iter().take(12) {
            println!("       {failure}");
        }
        if failures.len() > 12 {
            println!("       ... and {} more", failures.len() - 12);
        }
        failed += failures.len();
    };

    let (first_faults, first_failures) = first_use(stub);
    report_group(
        "first use (cuInit, nvrtcVersion)",
        &format!("{first_faults} faults"),
        first_faults,
        &first_failures,
    );
    let sanity_failures = sanity(stub).unwrap_or_else(|error| vec![format!("failed: {error}")]);
    report_group("the stub through the crate", "", 0, &sanity_failures);
    let (text_faults, text_failures) = error_texts(stub);
    report_group(
        "error texts (cuGetErrorName, cuGetErrorString)",
        &format!("{text_faults} faults"),
        text_faults,
        &text_failures,
    );
    report_group(
        "an older driver (documented Unsupported)",
        "",
        0,
        &old_driver(stub),
    );

    let scratch = tempfile::tempdir().expect("a scratch directory");
    let ops = operations(scratch.path());
    for op in &ops {
        let report = run_matrix(stub, op);
        operations_run += 1;
        let mut detail = String::new();
        let _ = write!(
            detail,
            "{} call(s) + {} on drop: {} faults",
            report.calls, report.drop_calls, report.faults
        );
        report_group(&op.name, &detail, report.faults, &report.failures);
        for (gap, seen) in &report.gaps {
            gap_cases += seen;
            println!(
                "       KNOWN GAP ({seen} cases, {} #{}): {}",
                gap.call, gap.nth, gap.why
            );
        }
        for absorbed in &op.absorbed {
            let which: Vec<String> = absorbed.nths.iter().map(|nth| format!(" #{nth}")).collect();
            println!(
                "       absorbed by design: {}{}: {}",
                absorbed.call,
                which.join(","),
                absorbed.why
            );
        }
    }
    let live = stub.live();
    println!(
        "fault_injection: {operations_run} operations, {faults} injected faults ({gap_cases} \
         showing known gaps), {failed} failure(s); live at the end (leaked by the failed \
         releases): {}",
        KINDS
            .iter()
            .zip(live)
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
