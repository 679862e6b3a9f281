//! What the stub-driver tests of the completion futures share: the stub installed before
//! anything loads a library, two streams of device 0's primary context and its pool, the GPU
//! held by a guard, waiting with a deadline, and the loop that runs the cases.

use cuda_safe_stub as stub;

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::task::{Context as TaskContext, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use cuda_safe::{Device, DeviceMemoryResource, Error, Stream};
use cuda_safe_async::Reactor;
use stub::{Installed, KINDS, Stub};

/// A case's verdict: `Err` says what went wrong.
pub type Verdict = Result<(), String>;

/// One case, with what it works on.
pub type Case<'a> = Box<dyn Fn() -> Verdict + 'a>;

/// What the cases work on: two streams of device 0's primary context (`stream.device()` is
/// the device) and its pool.
pub struct Fixture {
    pub stream: Stream,
    pub other: Stream,
    pub pool: DeviceMemoryResource,
}

/// The GPU held until dropped: a case that fails half-way leaves it released for the next.
pub struct Held<'a>(&'a Stub);

impl<'a> Held<'a> {
    pub fn new(stub: &'a Stub) -> Self {
        stub.hold_gpu(true);
        Self(stub)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.hold_gpu(false);
    }
}

pub fn ensure(holds: bool, what: impl FnOnce() -> String) -> Verdict {
    if holds { Ok(()) } else { Err(what()) }
}

pub fn failed(error: Error) -> String {
    format!("unexpected error: {error}")
}

/// Polls `future` once with `waker`.
pub fn poll_with<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut TaskContext::from_waker(waker))
}

/// Polls `future` once with a waker that does nothing (spinning off: it registers with the
/// reactor).
pub fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    poll_with(future, Waker::noop())
}

/// Waits (at most 10 s) until `holds` does.
pub fn wait_until(what: &str, mut holds: impl FnMut() -> bool) -> Verdict {
    let start = Instant::now();
    while !holds() {
        if start.elapsed() > Duration::from_secs(10) {
            return Err(format!("gave up waiting until {what}"));
        }
        thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

pub fn live_of(stub: &Stub, kind: &str) -> i64 {
    let index = KINDS.iter().position(|known| *known == kind).unwrap_or(0);
    stub.live()[index]
}

/// Installs the stub (with its logger and a 300 s watchdog) and makes the fixture; `None`
/// when the stub cannot be built here (the binary then reports that it skipped).
pub fn start(binary: &str) -> Option<(&'static Stub, Fixture)> {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("{binary}: skipped: {reason}");
            return None;
        }
    };
    stub::install_logger();
    let name = binary.to_owned();
    thread::spawn(move || {
        thread::sleep(Duration::from_secs(300));
        eprintln!("FAIL {name}: the cases did not end within 300 s");
        std::process::exit(1);
    });
    let fixture = Device::new(0).and_then(|device| {
        device.context()?.bind()?;
        Ok(Fixture {
            stream: device.create_stream(Default::default())?,
            other: device.create_stream(Default::default())?,
            pool: device.default_memory_resource()?,
        })
    });
    Some((stub, fixture.expect("the fixture on the stub")))
}

/// Runs `cases` in order; the number that failed.
pub fn run(cases: &[(&str, Case<'_>)]) -> usize {
    let mut failures = 0;
    for (name, case) in cases {
        let start = Instant::now();
        match case() {
            Ok(()) => println!("ok   {name} ({:.1?})", start.elapsed()),
            Err(why) => {
                failures += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
    failures
}

/// Checks that the reactor thread ends once `reactor`, the last handle, is dropped, that no
/// more than `streams` streams and `events` events are left once `fixture` goes, and that
/// the driver was not misused; prints the summary and returns the exit code.
pub fn finish(
    binary: &str,
    stub: &Stub,
    (fixture, reactor): (Fixture, Reactor),
    (streams, events): (i64, i64),
    (total, mut failures): (usize, usize),
) -> ExitCode {
    drop(reactor);
    if let Err(why) = wait_until("the reactor thread ended", || !Reactor::is_running()) {
        failures += 1;
        println!("FAIL {why}");
    }
    drop(fixture);
    let left = (live_of(stub, "stream"), live_of(stub, "event"));
    if left != (streams, events) {
        failures += 1;
        println!(
            "FAIL left behind: {} streams, {} events ({streams} and {events} expected)",
            left.0, left.1
        );
    }
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        failures += 1;
        println!("FAIL the crate misused the driver {misuses} time(s); last: {last}");
    }
    println!("{binary}: {total} cases, {failures} failure(s)");
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
