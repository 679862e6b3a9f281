//! Graph arenas, captures into existing graphs, re-captures and whole-graph updates, against
//! the stub driver of `stub/c` (its virtual memory, graphs, executables and capture:
//! `cuda_vmm.c`, `cuda_graph*.c`, `cuda_capture*.c`).
//!
//! `arena.rs`: a forward pass (copies, kernels, temporaries) captured from an arena replays
//! with new inputs bit for bit as the same pass run eagerly, with no allocation at replay; the
//! arena's addresses are the same for a second capture after a reset and never given to
//! others meanwhile; a reset or close is refused while a launch may still run, a launch of a
//! graph captured before a reset is refused; the usage figures; a growth or an event record
//! the driver refuses leaves the arena whole. `into.rs`: capture into an
//! existing graph after dependencies with edge data, whole-graph updates from a fresh capture
//! and the driver's reasons for refusing one, re-capture where the driver has it, and
//! `Unsupported` naming the version on an older driver.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod arena;
mod into;
use cuda_safe_stub as stub;

use std::process::ExitCode;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use cuda_safe::{Buffer, Device, DeviceMemoryResource, Error, Kernel, ObjectCode, Stream};
use stub::{Call, Installed, KINDS, Stub};

/// A case's verdict: `Err` says what went wrong.
pub(crate) type Verdict = Result<(), String>;

/// PTX text for the stub, which knows the kernels `twice` and `noop` of any image.
const PTX: &str = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry twice()\n{\n}\n";

/// Bytes of address space each case's arena reserves.
pub(crate) const RESERVE: usize = 4 << 20;

/// What the cases work on: device 0's primary context, a stream, its pool, and the stub's
/// kernels `twice(float* x, size_t n)`, which doubles `x[0..n)`, and `noop()`.
pub(crate) struct Fixture {
    pub(crate) stream: Stream,
    pub(crate) pool: DeviceMemoryResource,
    pub(crate) twice: Kernel,
    pub(crate) noop: Kernel,
}

impl Fixture {
    fn new() -> cuda_safe::Result<Self> {
        let device = Device::new(0)?;
        device.context()?.bind()?;
        let code = ObjectCode::from_ptx(PTX)?;
        Ok(Self {
            stream: device.create_stream(Default::default())?,
            pool: device.default_memory_resource()?,
            twice: code.get_kernel("twice")?,
            noop: code.get_kernel("noop")?,
        })
    }

    /// `values` in a shared pool buffer on the fixture's stream.
    pub(crate) fn floats(&self, values: &[f32]) -> Arc<Buffer> {
        Arc::new(
            self.pool
                .allocate_from_host(values, &self.stream)
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

/// How many calls of `name` `calls` hold.
pub(crate) fn count_of(calls: &[Call], name: &str) -> usize {
    calls.iter().filter(|call| call.name == name).count()
}

/// The arguments the stub logged with each call of `name` in `calls`.
pub(crate) fn args_of(calls: &[Call], name: &str) -> Vec<i64> {
    calls
        .iter()
        .filter(|call| call.name == name)
        .map(|call| call.arg)
        .collect()
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

/// Live graphs (and executables), user objects, allocations, reservations and chunks.
fn objects(stub: &Stub) -> [i64; 5] {
    ["graph", "userobj", "alloc", "range", "chunk"].map(|kind| live_of(stub, kind))
}

type Case<'a> = Box<dyn Fn() -> Verdict + 'a>;

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("graph_arena: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    thread::spawn(|| {
        thread::sleep(Duration::from_secs(300));
        eprintln!("FAIL graph_arena: the cases did not end within 300 s");
        std::process::exit(1);
    });
    let fixture = Fixture::new().expect("the fixture on the stub");
    let fx = &fixture;
    let cases: Vec<(&str, Case<'_>)> = vec![
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
        let before = objects(stub);
        let start = Instant::now();
        stub.take_log();
        let verdict = case().and_then(|()| {
            wait_until("what the case made is gone", || objects(stub) == before).map_err(|why| {
                format!(
                    "{why}: [graph, userobj, alloc, range, chunk] {before:?} -> {:?}",
                    objects(stub)
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
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures += 1;
        println!("FAIL the crate misused the driver {misuses} time(s); last: {last}");
    }
    println!("graph_arena: {} cases, {failures} failure(s)", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
