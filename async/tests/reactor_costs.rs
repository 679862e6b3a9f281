//! What the reactor costs in driver calls, counted by the stub driver: a lane is armed with the
//! wait and the host function alone (no capture query), kept while its stream lives (no new
//! lane or side stream at the next wait) and released once the stream has gone (a special
//! stream's lanes once their waits are done); work that ends while the reactor spins needs no
//! host function; a future that
//! fails at creation returns its error at once, blocking no thread, while the reactor keeps
//! what it holds until its stream has passed the work queued for it.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod support;

use std::process::ExitCode;
use std::task::Poll;
use std::time::Duration;

use cuda_safe::Stream;
use cuda_safe::sys::CUresult;
use cuda_safe_async::prelude::*;
use cuda_safe_async::{self as completion, Reactor};
use cuda_safe_stub::Stub;
use support::{Case, Fixture, Held, Verdict, ensure, failed, live_of, poll_once, wait_until};

/// `CUDA_ERROR_INVALID_VALUE`: a failure that says nothing of the GPU's progress.
const INVALID_VALUE: i32 = 1;

/// The calls that would block the calling thread until the GPU is done.
const BLOCKING: [&str; 3] = [
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
];

fn blocking_calls(stub: &Stub) -> u64 {
    BLOCKING.iter().map(|name| stub.calls(name)).sum()
}

/// A future that waits is its record and its capture check; the reactor arms its lane with one
/// wait and one host function, asking no capture state.
fn arming_is_the_wait_and_the_host_function(stub: &Stub, fx: &Fixture) -> Verdict {
    let held = Held::new(stub);
    stub.reset();
    let mut waiting = fx.stream.completion();
    ensure(poll_once(&mut waiting).is_pending(), || {
        "held work was done".into()
    })?;
    wait_until("the reactor arms the lane", || {
        stub.calls("cuLaunchHostFunc") == 1
    })?;
    let counts = [
        "cuStreamIsCapturing",
        "cuStreamWaitEvent",
        "cuLaunchHostFunc",
    ]
    .map(|name| stub.calls(name));
    ensure(counts == [1, 1, 1], || {
        format!("capture checks, waits and host functions: {counts:?} (1, 1 and 1 expected)")
    })?;
    drop(held);
    pollster::block_on(waiting).map_err(failed)
}

/// One completion on `stream` that has to wait for the reactor (the GPU held until it is
/// armed), awaited.
fn wait_once(stub: &Stub, stream: &Stream) -> Verdict {
    let armed = stub.calls("cuLaunchHostFunc");
    let held = Held::new(stub);
    let mut waiting = stream.completion();
    ensure(poll_once(&mut waiting).is_pending(), || {
        "held work was done".into()
    })?;
    wait_until("the reactor arms the lane", || {
        stub.calls("cuLaunchHostFunc") > armed
    })?;
    drop(held);
    pollster::block_on(waiting).map_err(failed)
}

/// Waits after waits on one stream, each after the reactor watched nothing: the stream's lane
/// stays (one more lane than before, all along), and its side stream is made once at most.
fn a_lane_is_kept_while_its_stream_lives(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    let lanes = reactor.stats().lanes;
    let stream = fx.stream.device().create_stream(Default::default());
    let stream = stream.map_err(failed)?;
    let created = stub.calls("cuStreamCreateWithPriority");
    for _ in 0..3 {
        wait_once(stub, &stream)?;
        wait_until("nothing is watched", || reactor.stats().watched == 0)?;
        let now = reactor.stats().lanes;
        ensure(now == lanes + 1, || {
            format!(
                "{now} lanes after a wait on a new stream ({} expected)",
                lanes + 1
            )
        })?;
    }
    let made = stub.calls("cuStreamCreateWithPriority") - created;
    ensure(made <= 1, || {
        format!("{made} side streams made for three waits on one stream (1 at most)")
    })
}

/// A stream's lane does not keep the stream alive, and goes at the reactor's next pass once
/// the stream has gone.
fn a_dropped_stream_s_lane_is_released(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    wait_once(stub, &fx.stream)?;
    let lanes = reactor.stats().lanes;
    let stream = fx.stream.device().create_stream(Default::default());
    let stream = stream.map_err(failed)?;
    wait_once(stub, &stream)?;
    ensure(reactor.stats().lanes == lanes + 1, || {
        format!("no lane for the new stream: {:?}", reactor.stats())
    })?;
    let live = live_of(stub, "stream");
    drop(stream);
    wait_until("the dropped stream is destroyed", || {
        live_of(stub, "stream") == live - 1
    })?;
    wait_once(stub, &fx.stream)?;
    wait_until("the dropped stream's lane is released", || {
        reactor.stats().lanes == lanes
    })
}

/// Waits on the legacy default stream, whose marks each get a lane of their own: each lane
/// goes once its wait is done, though the stream's wrapper is still held.
fn a_special_stream_s_lanes_are_retired(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    wait_once(stub, &fx.stream)?;
    wait_until("nothing is watched", || reactor.stats().watched == 0)?;
    let lanes = reactor.stats().lanes;
    // SAFETY: the fixture's context is current on this thread, the only one using the wrapper.
    let legacy = unsafe { Stream::legacy_default(fx.stream.context()) };
    for _ in 0..3 {
        wait_once(stub, &legacy)?;
    }
    wait_until("the legacy stream's lanes are retired", || {
        let stats = reactor.stats();
        stats.watched == 0 && stats.lanes == lanes
    })?;
    drop(legacy);
    Ok(())
}

/// A lane whose host function could not be queued is left to the sweep until its wait is
/// done; the stream's next wait arms a host function again.
fn a_lane_is_armed_again_after_a_failed_arming(stub: &Stub, fx: &Fixture) -> Verdict {
    let stream = fx.stream.device().create_stream(Default::default());
    let stream = stream.map_err(failed)?;
    let armed = stub.calls("cuLaunchHostFunc");
    let held = Held::new(stub);
    stub.fail("cuLaunchHostFunc", INVALID_VALUE, 1);
    let mut waiting = stream.completion();
    ensure(poll_once(&mut waiting).is_pending(), || {
        "held work was done".into()
    })?;
    wait_until("the reactor tries to arm the lane", || {
        stub.calls("cuLaunchHostFunc") > armed
    })?;
    drop(held);
    pollster::block_on(waiting).map_err(failed)?;
    wait_once(stub, &stream)
}

/// A download whose event cannot be recorded (after its copy was queued) and a completion
/// keeping a buffer, whose record fails likewise: each returns the driver's error at its first
/// poll without waiting for the held GPU, and the reactor keeps the staging block and the
/// buffer until the stream has passed the copy, then releases them.
fn a_failed_creation_returns_at_once(stub: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    let source = fx
        .pool
        .allocate_from_host(&[5.0f32; 1024], &fx.stream)
        .map_err(failed)?;
    let kept = fx.pool.allocate(4096, &fx.other).map_err(failed)?;
    let (blocking, frees) = (blocking_calls(stub), stub.calls("cuMemFreeAsync"));
    let held = Held::new(stub);
    stub.fail("cuEventRecord", INVALID_VALUE, 1);
    let mut download = source.to_vec_async::<f32>();
    stub.fail("cuEventRecord", INVALID_VALUE, 1);
    fx.other.launch_host_func(|| {}).map_err(failed)?;
    let mut completion = fx.other.completion_with(kept);
    let first = match poll_once(&mut download) {
        Poll::Ready(Err(error)) => error.cuda_code(),
        _ => None,
    };
    let second = match poll_once(&mut completion) {
        Poll::Ready(Err(error)) => error.cuda_code(),
        _ => None,
    };
    let refused = Some(CUresult::CUDA_ERROR_INVALID_VALUE);
    ensure(first == refused && second == refused, || {
        format!("the futures resolved to {first:?} and {second:?}")
    })?;
    ensure(blocking_calls(stub) == blocking, || {
        "a failed creation waited for the GPU".into()
    })?;
    let during = reactor.stats();
    ensure(
        during.staging_in_use == 4096 && stub.calls("cuMemFreeAsync") == frees,
        || format!("released while the GPU was held: {during:?}"),
    )?;
    drop(held);
    wait_until("the staging block and the buffer are released", || {
        reactor.stats().staging_in_use == 0 && stub.calls("cuMemFreeAsync") == frees + 1
    })
}

/// Work that ends while the reactor spins wakes its future from the spin, with no host function;
/// with the spin off, the same wait arms one.
fn the_reactor_spin_finds_work_without_a_host_function(
    stub: &Stub,
    fx: &Fixture,
    reactor: &Reactor,
) -> Verdict {
    // (spin, found by the spin, host functions armed)
    for (spin, by_spin, armed) in [(Duration::from_secs(30), 1, 0), (Duration::ZERO, 0, 1)] {
        completion::set_reactor_spin(spin);
        let (found, functions) = (
            reactor.stats().found_by_spin,
            stub.calls("cuLaunchHostFunc"),
        );
        let held = Held::new(stub);
        let mut waiting = fx.stream.completion();
        ensure(poll_once(&mut waiting).is_pending(), || {
            "held work was done".into()
        })?;
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        let outcome = pollster::block_on(waiting).map_err(failed);
        completion::set_reactor_spin(Duration::from_micros(20));
        outcome?;
        let got = (
            reactor.stats().found_by_spin - found,
            stub.calls("cuLaunchHostFunc") - functions,
        );
        ensure(got == (by_spin, armed), || {
            format!(
                "with a reactor spin of {spin:?}: found by the spin and host functions {got:?}, \
                 ({by_spin}, {armed}) expected"
            )
        })?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let Some((stub, fixture)) = support::start("reactor_costs") else {
        return ExitCode::SUCCESS;
    };
    completion::set_spin_budget(Duration::ZERO);
    let reactor = Reactor::shared();
    let (fx, r) = (&fixture, &reactor);
    let cases: Vec<(&str, Case<'_>)> = vec![
        (
            "arming is the wait and the host function",
            Box::new(|| arming_is_the_wait_and_the_host_function(stub, fx)),
        ),
        (
            "a lane is kept while its stream lives",
            Box::new(|| a_lane_is_kept_while_its_stream_lives(stub, fx, r)),
        ),
        (
            "a dropped stream's lane is released",
            Box::new(|| a_dropped_stream_s_lane_is_released(stub, fx, r)),
        ),
        (
            "a special stream's lanes are retired while it is held",
            Box::new(|| a_special_stream_s_lanes_are_retired(stub, fx, r)),
        ),
        (
            "a lane is armed again after a failed arming",
            Box::new(|| a_lane_is_armed_again_after_a_failed_arming(stub, fx)),
        ),
        (
            "a failed creation returns at once",
            Box::new(|| a_failed_creation_returns_at_once(stub, fx, r)),
        ),
        (
            "the reactor spin finds work without a host function",
            Box::new(|| the_reactor_spin_finds_work_without_a_host_function(stub, fx, r)),
        ),
    ];
    let total = cases.len();
    let failures = support::run(&cases);
    drop(cases);
    support::finish(
        "reactor_costs",
        stub,
        (fixture, reactor),
        (0, 0),
        (total, failures),
    )
}
