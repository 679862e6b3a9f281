//! The driver-call budget of the hot paths, counted with the stub driver of `stub/c`: after
//! warm-up, each operation makes exactly the driver calls it wraps (a launch is
//! `cuLaunchKernel` and nothing else), in a primary context and in a green context, a copy
//! between the stub's two devices is `cuMemcpyPeerAsync` (looking up both devices' primary
//! contexts costs no driver call once they are retained), a virtual memory mapping is the four
//! calls of a hand-written one (and its release the three), and a `KernelCache` hit makes none.
//! The first launch in a new green context is `cuLaunchKernel` alone too, without warm-up.
//! One more call creeping in fails the test. Prints every operation's calls.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

use cuda_safe_stub as stub;

use std::process::ExitCode;

use cuda_safe::cache::InMemoryProgramCache;
use cuda_safe::{
    CodeKind, Context, Copy3d, Device, Event, EventOptions, GreenContextOptions, KernelCache,
    LaunchConfig, ManagedMemoryResource, MemoryLocation, ObjectCode, PitchedBuffer, Program,
    ProgramOptions, Result, SplitRequest, VirtualMemoryResource, VirtualMemoryResourceOptions,
    launch,
};
use stub::{Call, Installed, KINDS, Stub};

/// Elements of the buffers the operations use.
const N: usize = 1024;

/// PTX text for the stub, which knows the kernel `twice` of any image.
const PTX: &str = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// One measured operation: what it may call and what it called.
struct Row {
    operation: &'static str,
    place: &'static str,
    expected: Vec<&'static str>,
    counted: Vec<Call>,
}

impl Row {
    fn holds(&self) -> bool {
        self.counted
            .iter()
            .map(Call::to_string)
            .eq(self.expected.iter().map(|name| name.to_string()))
    }
}

/// The calls one run of `op` makes, after three warm-up runs (its result is dropped after the
/// count).
fn calls<T>(stub: &Stub, mut op: impl FnMut() -> Result<T>) -> Vec<Call> {
    for _ in 0..3 {
        drop(op().expect("the warm-up run succeeds"));
    }
    stub.take_log();
    let value = op().expect("the measured run succeeds");
    let counted = stub.take_log();
    drop(value);
    stub.take_log();
    counted
}

/// The calls dropping one result of `op` makes (after warm-up).
fn drop_calls<T>(stub: &Stub, mut op: impl FnMut() -> Result<T>) -> Vec<Call> {
    for _ in 0..3 {
        drop(op().expect("the warm-up run succeeds"));
    }
    let value = op().expect("the measured run succeeds");
    stub.take_log();
    drop(value);
    stub.take_log()
}

/// How `Buffer::set_stream` asks whether the old stream has finished: not while it is captured,
/// and in relaxed capture mode, restored after.
const QUERY: [&str; 4] = [
    "cuStreamIsCapturing",
    "cuThreadExchangeStreamCaptureMode",
    "cuStreamQuery",
    "cuThreadExchangeStreamCaptureMode",
];

/// `CUDA_ERROR_NOT_READY`: what `cuStreamQuery` answers while work is still queued.
const NOT_READY: i32 = 600;

/// The calls one run of `op` makes while streams report queued work (the stub's
/// `cuStreamQuery` answers `CUDA_ERROR_NOT_READY` once), after three ordinary warm-up runs.
fn busy_calls<T>(stub: &Stub, mut op: impl FnMut() -> Result<T>) -> Vec<Call> {
    for _ in 0..3 {
        drop(op().expect("the warm-up run succeeds"));
    }
    stub.fail("cuStreamQuery", NOT_READY, 1);
    stub.take_log();
    let value = op().expect("the measured run succeeds");
    let counted = stub.take_log();
    assert_eq!(stub.faults_pending(), 0, "the operation queried its stream");
    drop(value);
    counted
}

/// A green context of 64 SMs.
fn green_context(device: &Device) -> Result<Context> {
    let split = device
        .resources()
        .sm()?
        .split(&SplitRequest::equal(2, 64))?;
    device.create_green_context(&split.groups[0], GreenContextOptions::default())
}

/// The hot-path operations in `context`, bound on this thread as an application would.
fn measure(
    stub: &Stub,
    device: &Device,
    context: &Context,
    place: &'static str,
) -> Result<Vec<Row>> {
    context.bind()?;
    let stream = context.create_stream(Default::default())?;
    let other = context.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let kernel = ObjectCode::from_ptx(PTX)?.get_kernel("twice")?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    let mut x = pool.allocate_from_host(&[1.0f32; N], &stream)?;
    let y = pool.allocate_zeroed::<f32>(N, &stream)?;
    let mut moved = pool.allocate_zeroed::<f32>(N, &stream)?;
    let mut to_other = false;
    let mut move_back_and_forth = || {
        to_other = !to_other;
        moved.set_stream(if to_other { &other } else { &stream })
    };
    let host = vec![0.5f32; N];
    let event = context.create_event(EventOptions::default())?;
    let timed = EventOptions::default().timing(true);
    let (start, end) = (context.create_event(timed)?, context.create_event(timed)?);
    stream.record(&start)?;
    stream.record(&end)?;
    let elapsed = if cuda_safe::sys::ABI_MAJOR >= 13 {
        "cuEventElapsedTime_v2"
    } else {
        "cuEventElapsedTime"
    };
    let row = |operation, expected: &[&'static str], counted| Row {
        operation,
        place,
        expected: expected.to_vec(),
        counted,
    };
    let rows = vec![
        row(
            "launch",
            &["cuLaunchKernel"],
            // SAFETY: the stub's `twice` doubles the N floats `x` holds.
            calls(stub, || unsafe {
                launch(&stream, &config, &kernel, (&mut x, N))
            }),
        ),
        row(
            "Event::record",
            &["cuEventRecord"],
            calls(stub, || event.record(&stream)),
        ),
        row(
            "pool allocate",
            &["cuMemAllocFromPoolAsync"],
            calls(stub, || pool.allocate(4 * N, &stream)),
        ),
        row(
            "pool free (drop)",
            &["cuMemFreeAsync"],
            drop_calls(stub, || pool.allocate(4 * N, &stream)),
        ),
        row(
            "Device::allocate (default pool)",
            &["cuMemAllocFromPoolAsync"],
            calls(stub, || device.allocate(4 * N, &stream)),
        ),
        row(
            "Buffer::copy_from",
            &["cuMemcpyAsync"],
            calls(stub, || x.copy_from(&y)),
        ),
        row(
            "Buffer::copy_from_host",
            // The stream's context made current around a copy with a host side (already
            // current here: one query).
            &["cuCtxGetCurrent", "cuMemcpyAsync", "cuStreamSynchronize"],
            calls(stub, || x.copy_from_host(&host)),
        ),
        row(
            "Buffer::to_vec",
            // The stream's context made current around a copy with a host side (already
            // current here: one query).
            &["cuCtxGetCurrent", "cuMemcpyAsync", "cuStreamSynchronize"],
            calls(stub, || y.to_vec::<f32>()),
        ),
        row(
            "Stream::sync",
            &["cuStreamSynchronize"],
            calls(stub, || stream.sync()),
        ),
        row(
            "Stream::wait_stream",
            &["cuEventRecord", "cuStreamWaitEvent"],
            calls(stub, || stream.wait_stream(&other)),
        ),
        row(
            "Buffer::set_stream (old finished)",
            &QUERY,
            calls(stub, &mut move_back_and_forth),
        ),
        row(
            "Buffer::set_stream (old busy)",
            &[QUERY.as_slice(), &["cuEventRecord", "cuStreamWaitEvent"]].concat(),
            busy_calls(stub, &mut move_back_and_forth),
        ),
        row(
            "Event::elapsed",
            &["cuEventSynchronize", "cuEventSynchronize", elapsed],
            calls(stub, || Event::elapsed(&start, &end)),
        ),
    ];
    Ok(rows)
}

/// Copies between the two devices' buffers (`Buffer::copy_from`). On one stream (a buffer moved to the other's
/// stream) a copy is the peer copy alone; across the devices' streams it is the peer copy
/// between the cross-stream ordering every copy across streams makes (the destination's stream
/// waits for the source's marker, then the source's waits for the destination's).
fn peer_copies(stub: &Stub) -> Result<Vec<Row>> {
    let (near, far) = (Device::new(0)?, Device::new(1)?);
    near.context()?.bind()?;
    let near_stream = near.create_stream(Default::default())?;
    let far_stream = far.create_stream(Default::default())?;
    let mut x = near
        .default_memory_resource()?
        .allocate_from_host(&[1.0f32; N], &near_stream)?;
    let mut y = far
        .default_memory_resource()?
        .allocate_zeroed::<f32>(N, &far_stream)?;
    let ordered = [
        "cuEventRecord",
        "cuStreamWaitEvent",
        "cuMemcpyPeerAsync",
        "cuEventRecord",
        "cuStreamWaitEvent",
    ];
    let row = |operation, expected: &[&'static str], counted| Row {
        operation,
        place: "peer",
        expected: expected.to_vec(),
        counted,
    };
    let mut rows = vec![
        row(
            "peer copy 0<-1 (2 streams)",
            &ordered,
            calls(stub, || x.copy_from(&y)),
        ),
        row(
            "peer copy 1<-0 (2 streams)",
            &ordered,
            calls(stub, || y.copy_from(&x)),
        ),
    ];
    y.set_stream(&near_stream)?;
    rows.push(row(
        "peer copy 0<-1 (1 stream)",
        &["cuMemcpyPeerAsync"],
        calls(stub, || x.copy_from(&y)),
    ));
    rows.push(row(
        "peer copy 1<-0 (1 stream)",
        &["cuMemcpyPeerAsync"],
        calls(stub, || y.copy_from(&x)),
    ));
    Ok(rows)
}

/// A virtual memory mapping (exactly the four calls of a hand-written allocation, and the
/// three of its release), a 2-D copy, and a managed prefetch.
fn memory_models(stub: &Stub) -> Result<Vec<Row>> {
    let device = Device::new(0)?;
    device.context()?.bind()?;
    let stream = device.create_stream(Default::default())?;
    let vmm = VirtualMemoryResource::new(&device, VirtualMemoryResourceOptions::default())?;
    let mut pitched = PitchedBuffer::allocate(&stream, 256, 16, 1, 4)?;
    let source = device
        .default_memory_resource()?
        .allocate_zeroed::<f32>(64 * 16, &stream)?;
    let managed = ManagedMemoryResource::new(&device)?.allocate_zeroed::<f32>(N, &stream)?;
    let prefetch = if cuda_safe::sys::ABI_MAJOR >= 13 {
        "cuMemPrefetchAsync_v2"
    } else {
        "cuMemPrefetchAsync"
    };
    let row = |operation, expected: &[&'static str], counted| Row {
        operation,
        place: "primary",
        expected: expected.to_vec(),
        counted,
    };
    Ok(vec![
        row(
            "VirtualMemoryResource::map",
            &[
                "cuMemAddressReserve",
                "cuMemCreate",
                "cuMemMap",
                "cuMemSetAccess",
            ],
            calls(stub, || vmm.map(1 << 20)),
        ),
        row(
            "VirtualMapping (drop)",
            &["cuMemUnmap", "cuMemRelease", "cuMemAddressFree"],
            drop_calls(stub, || vmm.map(1 << 20)),
        ),
        row(
            "PitchedMut::copy_from (2-D)",
            &["cuMemcpy2DAsync_v2"],
            calls(stub, || {
                pitched
                    .view_mut::<f32>()?
                    .copy_from(&source.pitched::<f32>(256, 16)?, &Copy3d::rect(256, 16))
            }),
        ),
        row(
            "Buffer::prefetch (managed)",
            &[prefetch],
            calls(stub, || managed.prefetch(MemoryLocation::Device(0))),
        ),
    ])
}

/// The first launch in a new green context, on a new stream, of a kernel launched before
/// elsewhere (its parameter list known): `cuLaunchKernel` alone, without warm-up. A
/// configuration every device allows needs no look at the device's limits.
fn first_launch_in_new_context(stub: &Stub, device: &Device) -> Result<Row> {
    let kernel = ObjectCode::from_ptx(PTX)?.get_kernel("twice")?;
    let config = LaunchConfig::for_num_elements(N, 256)?;
    let primary = device.create_stream(Default::default())?;
    let mut x = device
        .default_memory_resource()?
        .allocate_zeroed::<f32>(N, &primary)?;
    // SAFETY: the stub's `twice` doubles the N floats `x` holds.
    unsafe { launch(&primary, &config, &kernel, (&mut x, N))? };
    let green = green_context(device)?;
    let stream = green.create_stream(Default::default())?;
    x.set_stream(&stream)?;
    stub.take_log();
    // SAFETY: as above.
    unsafe { launch(&stream, &config, &kernel, (&mut x, N))? };
    Ok(Row {
        operation: "first launch, new green context",
        place: "green",
        expected: vec!["cuLaunchKernel"],
        counted: stub.take_log(),
    })
}

/// A `KernelCache` hit: no driver or NVRTC call at all.
fn kernel_cache_hit(stub: &Stub) -> Result<Row> {
    let kernels = KernelCache::new(InMemoryProgramCache::new(1 << 20));
    let options = ProgramOptions::default().arch("sm_90");
    let program = Program::new(
        "extern \"C\" __global__ void twice(float* x, size_t n) {}",
        options,
    )?;
    Ok(Row {
        operation: "KernelCache::kernel (hit)",
        place: "any",
        expected: Vec::new(),
        counted: calls(stub, || kernels.kernel(&program, CodeKind::Cubin, "twice")),
    })
}

fn run(stub: &Stub) -> Result<Vec<Row>> {
    let device = Device::new(0)?;
    let mut rows = measure(stub, &device, &device.context()?, "primary")?;
    rows.extend(measure(stub, &device, &green_context(&device)?, "green")?);
    rows.push(first_launch_in_new_context(stub, &device)?);
    rows.extend(peer_copies(stub)?);
    rows.extend(memory_models(stub)?);
    rows.push(kernel_cache_hit(stub)?);
    Ok(rows)
}

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("call_budget: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let rows = run(stub).expect("the operations succeed on the stub");
    let mut failures = 0;
    println!(
        "     {:<34} {:<8} driver calls after warm-up",
        "operation", "context"
    );
    for row in &rows {
        let counted: Vec<String> = row.counted.iter().map(Call::to_string).collect();
        let verdict = if row.holds() { "ok" } else { "OVER" };
        println!(
            "{verdict:<4} {:<34} {:<8} {} [{}]",
            row.operation,
            row.place,
            counted.len(),
            counted.join(", ")
        );
        if !row.holds() {
            failures += 1;
            println!("     expected: [{}]", row.expected.join(", "));
        }
    }
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures += 1;
        println!("FAIL the crate misused the driver {misuses} time(s); last: {last}");
    }
    let left: Vec<String> = KINDS
        .iter()
        .zip(stub.live())
        .filter(|&(kind, count)| *kind != "context" && count != 0)
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    if !left.is_empty() {
        failures += 1;
        println!("FAIL objects outlived their handles: {}", left.join(", "));
    }
    let logs = stub::take_error_logs();
    if !logs.is_empty() {
        failures += 1;
        println!("FAIL error lines were logged: {logs:?}");
    }
    println!(
        "call_budget: {} operations, {failures} failure(s)",
        rows.len()
    );
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
