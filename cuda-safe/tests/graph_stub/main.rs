//! The graph API beyond plain nodes, against the stub driver of `stub/c` (its graphs,
//! executables and capture: `cuda_graph*.c`): clustered, cooperative and attributed kernel
//! nodes, explicit and captured, and programmatic edges (`nodes.rs`); updates of definition
//! and executable nodes, with what they keep alive until the last launch, and 3-D copy nodes
//! (`updates.rs`); clones, removed nodes, ids, and conditional nodes whose bodies are captured
//! inside a capture (`capture.rs`). Each case checks the calls the crate makes (and those it
//! refuses to make: bad input is an error before the driver), the results the stub's launches
//! compute, and that nothing is left behind; then every call of each new operation is failed in
//! turn and the error must name it (`sweep.rs`). Graph arenas (`arena.rs`): a forward pass
//! captured from an arena replays with new inputs bit for bit as run eagerly, with no allocation
//! at replay; its addresses are the same after a reset and never given to others meanwhile; a
//! reset or close is refused while a launch may run; the usage figures; refused growths and
//! event records leave it whole; what keeps its memory from being freed under a graph that
//! may use it (`guards.rs`). Captures into existing graphs with edge data, whole-graph
//! updates from a fresh capture and the driver's refusals, re-capture where the driver has it
//! (`into.rs`). The crate must never misuse the driver.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod arena;
mod capture;
mod guards;
mod into;
mod nodes;
use cuda_safe_stub as stub;
mod sweep;
mod updates;

use std::process::ExitCode;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use cuda_safe::sys::{CUlaunchAttributeID, CUlaunchAttributeValue, CUresult};
use cuda_safe::{Buffer, Device, DeviceMemoryResource, Error, Kernel, Node, ObjectCode, Stream};
use stub::{Call, Installed, KINDS, Stub};

/// A case's verdict: `Err` says what went wrong.
pub(crate) type Verdict = Result<(), String>;

/// PTX text for the stub, which knows the kernels `twice`, `noop` and `count_down` of any image.
const PTX: &str = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// Bytes of address space each arena case reserves.
pub(crate) const RESERVE: usize = 4 << 20;

/// What the cases work on: device 0's primary context, two streams (the second records
/// conditional bodies), its pool, and the stub's kernels: `twice(float* x, size_t n)` doubles
/// `x[0..n)`, `noop()`, `count_down(handle, int* n)` decrements `*n` and sets the handle to
/// whether it is still above 0.
pub(crate) struct Fixture {
    pub(crate) device: Device,
    pub(crate) stream: Stream,
    pub(crate) body: Stream,
    pub(crate) pool: DeviceMemoryResource,
    pub(crate) twice: Kernel,
    pub(crate) noop: Kernel,
    pub(crate) count_down: Kernel,
}

impl Fixture {
    fn new() -> cuda_safe::Result<Self> {
        let device = Device::new(0)?;
        device.context()?.bind()?;
        let code = ObjectCode::from_ptx(PTX)?;
        Ok(Self {
            stream: device.create_stream(Default::default())?,
            body: device.create_stream(Default::default())?,
            pool: device.default_memory_resource()?,
            twice: code.get_kernel("twice")?,
            noop: code.get_kernel("noop")?,
            count_down: code.get_kernel("count_down")?,
            device,
        })
    }

    /// `values` in a shared buffer on the fixture's stream.
    pub(crate) fn floats(&self, values: &[f32]) -> Arc<Buffer> {
        Arc::new(
            self.pool
                .allocate_from_host(values, &self.stream)
                .expect("an allocation"),
        )
    }

    /// `n` zeroed `u32`s in a shared buffer.
    pub(crate) fn words(&self, n: usize) -> Arc<Buffer> {
        Arc::new(
            self.pool
                .allocate_zeroed::<u32>(n, &self.stream)
                .expect("an allocation"),
        )
    }
}

pub(crate) fn ensure(holds: bool, what: impl FnOnce() -> String) -> Verdict {
    if holds { Ok(()) } else { Err(what()) }
}

pub(crate) fn failed(error: Error) -> String {
    format!("unexpected error: {error}")
}

/// Checks that `result` failed with [`Error::InvalidArgument`] saying `words`.
pub(crate) fn refused<T: std::fmt::Debug>(result: cuda_safe::Result<T>, words: &str) -> Verdict {
    match result {
        Err(Error::InvalidArgument(why)) if why.contains(words) => Ok(()),
        other => Err(format!(
            "expected InvalidArgument saying {words:?}, got {other:?}"
        )),
    }
}

/// The names of `calls`.
pub(crate) fn names(calls: &[Call]) -> Vec<String> {
    calls.iter().map(|call| call.name.clone()).collect()
}

/// How many calls of `name` `calls` hold.
pub(crate) fn count_of(calls: &[Call], name: &str) -> usize {
    calls.iter().filter(|call| call.name == name).count()
}

/// Checks that `result` failed with [`Error::Unsupported`] whose reason names `version`.
pub(crate) fn unsupported<T: std::fmt::Debug>(
    result: cuda_safe::Result<T>,
    version: &str,
) -> Verdict {
    match result {
        Err(Error::Unsupported { reason, .. }) if reason.contains(version) => Ok(()),
        other => Err(format!(
            "expected Unsupported naming {version:?}, got {other:?}"
        )),
    }
}

/// The arguments the stub logged with each call of `name` in `calls`.
pub(crate) fn args_of(calls: &[Call], name: &str) -> Vec<i64> {
    calls
        .iter()
        .filter(|call| call.name == name)
        .map(|call| call.arg)
        .collect()
}

/// Checks that `calls` hold no call of `name`.
pub(crate) fn none_of(calls: &[Call], name: &str) -> Verdict {
    ensure(!calls.iter().any(|call| call.name == name), || {
        format!("{name} was called: {:?}", names(calls))
    })
}

pub(crate) fn live_of(stub: &Stub, kind: &str) -> i64 {
    let index = KINDS.iter().position(|known| *known == kind).unwrap_or(0);
    stub.live()[index]
}

/// Waits up to 10 s for `done` (what graphs keep is dropped by the crate's reaper thread).
pub(crate) fn wait_until(what: &str, done: impl Fn() -> bool) -> Verdict {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > Duration::from_secs(10) {
            return Err(format!("gave up waiting until {what}"));
        }
        thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// The attribute `id` of a kernel node, read back from the stub.
pub(crate) fn node_attribute(node: Node, id: CUlaunchAttributeID) -> CUlaunchAttributeValue {
    let driver = cuda_safe::sys::driver().expect("the stub loads");
    let mut value = CUlaunchAttributeValue::default();
    // SAFETY: a live kernel node of a live graph; a valid out-pointer.
    let result = unsafe { driver.cuGraphKernelNodeGetAttribute(node.as_raw(), id, &mut value) };
    assert!(
        matches!(result, Ok(CUresult::CUDA_SUCCESS)),
        "reading attribute {} failed: {result:?}",
        id.0
    );
    value
}

/// The floats of `buffer`.
pub(crate) fn floats_of(buffer: &Buffer) -> Result<Vec<f32>, String> {
    buffer.to_vec::<f32>().map_err(failed)
}

/// The `u32`s of `buffer`.
pub(crate) fn words_of(buffer: &Buffer) -> Result<Vec<u32>, String> {
    buffer.to_vec::<u32>().map_err(failed)
}

/// Live graphs (and executables), user objects, allocations, reservations and chunks.
fn graph_objects(stub: &Stub) -> [i64; 5] {
    ["graph", "userobj", "alloc", "range", "chunk"].map(|kind| live_of(stub, kind))
}

type Case<'a> = Box<dyn Fn() -> Verdict + 'a>;

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("graph_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    thread::spawn(|| {
        thread::sleep(Duration::from_secs(300));
        eprintln!("FAIL graph_stub: the cases did not end within 300 s");
        std::process::exit(1);
    });
    let fixture = Fixture::new().expect("the fixture on the stub");
    let fx = &fixture;
    let cases: Vec<(&str, Case<'_>)> = vec![
        (
            "clustered and cooperative kernel nodes",
            Box::new(|| nodes::clustered_and_cooperative_nodes(stub, fx)),
        ),
        (
            "launch attributes on nodes, and kernel edges",
            Box::new(|| nodes::attributes_and_kernel_edges(stub, fx)),
        ),
        (
            "captured launches keep their shape and attributes",
            Box::new(|| nodes::captured_launches_keep_their_attributes(stub, fx)),
        ),
        (
            "definition updates change what runs",
            Box::new(|| updates::definition_updates_change_what_runs(stub, fx)),
        ),
        (
            "executable updates keep what they use",
            Box::new(|| updates::executable_updates_keep_what_they_use(stub, fx)),
        ),
        (
            "3-D copy nodes between buffers, pitched memory and arrays",
            Box::new(|| updates::copy_nodes_in_3d(stub, fx)),
        ),
        (
            "clones and removed nodes",
            Box::new(|| capture::clones_and_removed_nodes(stub, fx)),
        ),
        (
            "ids are distinct and stable",
            Box::new(|| capture::ids_are_distinct_and_stable(fx)),
        ),
        (
            "conditional bodies captured inside a capture",
            Box::new(|| capture::conditional_bodies_are_captured(stub, fx)),
        ),
        (
            "a forward pass replays from the arena bit for bit as run eagerly",
            Box::new(|| arena::replays_match_eager_runs(stub, fx)),
        ),
        (
            "the arena's addresses are the same after a reset, and nobody else's meanwhile",
            Box::new(|| arena::addresses_are_stable(fx)),
        ),
        (
            "reset and close are refused while a launch may run",
            Box::new(|| arena::busy_arenas_refuse(stub, fx)),
        ),
        (
            "usage figures, growth and a full arena",
            Box::new(|| arena::usage_is_reported(fx)),
        ),
        (
            "an arena allocates only for captures that use it",
            Box::new(|| arena::captures_must_name_the_arena(fx)),
        ),
        (
            "a refused growth or event record leaves the arena whole",
            Box::new(|| arena::failures_leave_the_arena_whole(stub, fx)),
        ),
        (
            "a launch in progress refuses a reset",
            Box::new(|| guards::a_launch_in_progress_refuses_a_reset(fx)),
        ),
        (
            "a capture into a graph keeps its stale arena binding, a failed binding a defect",
            Box::new(|| guards::captures_into_a_graph_keep_its_stale_binding(stub, fx)),
        ),
        (
            "a launch neither tracked nor waited for keeps the arena busy",
            Box::new(|| guards::untracked_launches_keep_the_arena_busy(stub, fx)),
        ),
        (
            "an executable of two arenas leaves no event behind",
            Box::new(|| guards::executables_of_two_arenas_leave_no_event(stub, fx)),
        ),
        (
            "device launch of arena graphs and static buffers copied over themselves are refused",
            Box::new(|| guards::device_launch_and_self_copies_are_refused(fx)),
        ),
        (
            "capture into an existing graph after dependencies and edges",
            Box::new(|| into::capture_into_an_existing_graph(stub, fx)),
        ),
        (
            "whole-graph updates from a fresh capture, and the driver's refusals",
            Box::new(|| into::updates_from_a_fresh_capture(stub, fx)),
        ),
        (
            "re-capture, where the driver has it",
            Box::new(|| into::recapture_where_the_driver_has_it(stub, fx)),
        ),
    ];
    let mut failures = 0;
    for (name, case) in &cases {
        let before = graph_objects(stub);
        let start = Instant::now();
        stub.take_log();
        let verdict = case().and_then(|()| {
            wait_until("what the case's graphs kept is dropped", || {
                graph_objects(stub) == before
            })
            .map_err(|why| {
                format!(
                    "{why}: [graph, userobj, alloc, range, chunk] {before:?} -> {:?}",
                    graph_objects(stub)
                )
            })
        });
        stub.disarm();
        stub.hold_gpu(false);
        stub.set_driver_version(13010);
        match verdict {
            Ok(()) => println!("ok   {name} ({:.1?})", start.elapsed()),
            Err(why) => {
                failures += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
    for (name, result) in sweep::every_call_fails_in_turn(stub, fx) {
        match result {
            Ok(faults) => println!("ok   faults in {name}: {faults} calls failed in turn"),
            Err(why) => {
                failures += 1;
                println!("FAIL faults in {name}: {why}");
            }
        }
    }
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures += 1;
        println!("FAIL the crate misused the driver {misuses} time(s); last: {last}");
    }
    println!(
        "graph_stub: {} cases and the fault sweeps, {failures} failure(s)",
        cases.len()
    );
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
