//! The completion futures against the stub driver of `stub/c`, whose GPU can be held
//! (`Stub::hold_gpu`): events recorded while it is held are unfinished and host functions
//! wait, until the test releases it from any thread. That makes a fake completion source for
//! what a CPU can check: the calls a short wait makes, registration raced against completion
//! ten thousand times with the reactor's sweep off (a lost wake-up hangs, and the watchdog
//! fails the test), a thousand futures released at once, dropped futures keeping their
//! buffers and staging memory until the held work finishes, typed errors (a sticky one
//! releases memory, another keeps it), events, tokio, and the reactor thread ending with its
//! last handle, leaving no stream or event behind.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

mod support;

use cuda_safe_stub as stub;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use cuda_safe::sys::CUresult;
use cuda_safe::{Error, EventOptions};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{self as completion, Reactor};
use pollster::block_on;
use stub::Stub;
use support::{Case, Fixture, Held, Verdict, ensure, failed, poll_once, wait_until};

/// The driver's code of a failed result.
fn code_of<T>(result: cuda_safe::Result<T>) -> Option<CUresult> {
    result.err().and_then(|error| error.cuda_code())
}

/// A future that finishes within its first poll makes exactly these calls, once the event is
/// recycled, and starts no reactor thread.
fn a_short_wait_is_its_record_and_queries(stub: &Stub, fx: &Fixture, _: &Reactor) -> Verdict {
    completion::set_spin_budget(Duration::from_micros(20));
    for _ in 0..3 {
        block_on(fx.stream.completion()).map_err(failed)?;
    }
    stub.take_log();
    block_on(fx.stream.completion()).map_err(failed)?;
    let calls: Vec<String> = stub.take_log().iter().map(ToString::to_string).collect();
    let expected = [
        "cuStreamIsCapturing",
        "cuEventRecord",
        "cuThreadExchangeStreamCaptureMode",
        "cuEventQuery",
        "cuThreadExchangeStreamCaptureMode",
    ];
    ensure(calls == expected, || {
        format!("calls {calls:?}, expected {expected:?}")
    })?;
    ensure(!Reactor::is_running(), || {
        "a future done in its first poll started the reactor thread".into()
    })
}

/// Uploads and downloads round-trip every value, as any `Pod` type; bad sizes are typed
/// errors; the staging memory goes back to the cache.
fn uploads_and_downloads_round_trip(_: &Stub, fx: &Fixture, reactor: &Reactor) -> Verdict {
    let data: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let mut x = fx
        .pool
        .allocate_array::<f32>(data.len(), &fx.stream)
        .map_err(failed)?;
    block_on(x.upload_async(&data)).map_err(failed)?;
    let back = block_on(x.to_vec_async::<f32>()).map_err(failed)?;
    ensure(back == data, || "the round trip changed the data".into())?;
    let words = block_on(x.to_vec_async::<u32>()).map_err(failed)?;
    ensure(words.len() == 1000 && words[1] == 0.5f32.to_bits(), || {
        "the download as words differs".into()
    })?;
    let odd = fx.pool.allocate(6, &fx.stream).map_err(failed)?;
    ensure(
        matches!(
            block_on(odd.to_vec_async::<f32>()),
            Err(Error::InvalidArgument(_))
        ),
        || "6 bytes downloaded as f32s".into(),
    )?;
    ensure(
        matches!(
            block_on(x.upload_async(&data[..10])),
            Err(Error::InvalidArgument(_))
        ),
        || "an upload of the wrong size was accepted".into(),
    )?;
    let empty = fx.pool.allocate(0, &fx.stream).map_err(failed)?;
    ensure(
        block_on(empty.to_vec_async::<f32>()).is_ok_and(|v| v.is_empty()),
        || "an empty download".into(),
    )?;
    let stats = reactor.stats();
    ensure(
        stats.staging_in_use == 0 && stats.staging_idle >= 4096,
        || format!("staging after the copies: {stats:?}"),
    )
}

/// With spinning off, a held wait goes to the reactor thread and resolves when the GPU is
/// released from another thread.
fn a_waiting_future_is_woken_by_the_reactor(stub: &'static Stub, fx: &Fixture) -> Verdict {
    completion::set_spin_budget(Duration::ZERO);
    let held = Held::new(stub);
    let mut done = fx.stream.completion();
    ensure(poll_once(&mut done).is_pending(), || {
        "held work was done".into()
    })?;
    ensure(Reactor::is_running(), || "no reactor thread".into())?;
    // Released by the other thread from here on.
    std::mem::forget(held);
    let releaser = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        stub.hold_gpu(false);
    });
    block_on(done).map_err(failed)?;
    releaser
        .join()
        .map_err(|_| "the releasing thread panicked".to_owned())
}

/// Registration raced against completion ten thousand times, on two streams, with the
/// reactor's sweep off: each future must be woken by the host function alone.
fn registrations_racing_completions_lose_no_wake_up(
    stub: &'static Stub,
    fx: &Fixture,
    reactor: &Reactor,
) -> Verdict {
    const ROUNDS: usize = 10_000;
    completion::set_spin_budget(Duration::ZERO);
    completion::set_sweep_interval(Duration::from_secs(3600));
    let progress = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (progress, finished) = (progress.clone(), finished.clone());
        thread::spawn(move || {
            let mut seen = (0, Instant::now());
            while !finished.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(50));
                let now = progress.load(Ordering::SeqCst);
                if now != seen.0 {
                    seen = (now, Instant::now());
                } else if seen.1.elapsed() > Duration::from_secs(10) {
                    eprintln!(
                        "FAIL round {now}: a registration raced by its completion was never woken"
                    );
                    std::process::exit(1);
                }
            }
        })
    };
    let (to_helper, rounds) = mpsc::channel::<usize>();
    let helper = thread::spawn(move || {
        for round in rounds {
            match round % 4 {
                0 => {}
                1 => thread::yield_now(),
                2 => (0..round % 64).for_each(|_| std::hint::spin_loop()),
                _ => thread::sleep(Duration::from_micros(20)),
            }
            stub.hold_gpu(false);
        }
    });
    for round in 0..ROUNDS {
        stub.hold_gpu(true);
        let stream = if round % 2 == 0 {
            &fx.stream
        } else {
            &fx.other
        };
        let done = stream.completion();
        to_helper
            .send(round)
            .map_err(|_| "the helper is gone".to_owned())?;
        if round % 3 == 0 {
            thread::yield_now();
        }
        block_on(done).map_err(failed)?;
        progress.store(round + 1, Ordering::SeqCst);
    }
    drop(to_helper);
    helper
        .join()
        .map_err(|_| "the helper panicked".to_owned())?;
    finished.store(true, Ordering::SeqCst);
    watchdog
        .join()
        .map_err(|_| "the watchdog panicked".to_owned())?;
    completion::set_sweep_interval(Duration::from_millis(10));
    let stats = reactor.stats();
    ensure(stats.found_by_sweep == 0, || {
        format!("the sweep found work: {stats:?}")
    })
}

/// A thousand futures on two streams wait at once and all resolve on one release; their
/// slots and events are reused.
fn a_thousand_futures_resolve_on_one_release(stub: &Stub, fx: &Fixture, r: &Reactor) -> Verdict {
    completion::set_spin_budget(Duration::ZERO);
    let held = Held::new(stub);
    let mut futures: Vec<_> = (0..1000)
        .map(|i| [&fx.stream, &fx.other][i % 2].completion())
        .collect();
    for future in &mut futures {
        ensure(poll_once(future).is_pending(), || {
            "held work was done".into()
        })?;
    }
    ensure(r.stats().watched == 1000, || format!("{:?}", r.stats()))?;
    drop(held);
    for future in futures {
        block_on(future).map_err(failed)?;
    }
    // The reactor gives the slots back just after it wakes the futures.
    wait_until("the slots are idle", || {
        let stats = r.stats();
        stats.watched == 0 && stats.idle_slots == stats.slots
    })
}

/// Futures dropped while the GPU is held, unpolled or registered, keep what they hold: the
/// buffers moved into them and their staging memory stay until the work is released.
fn dropped_futures_keep_what_the_gpu_uses(stub: &Stub, fx: &Fixture, r: &Reactor) -> Verdict {
    completion::set_spin_budget(Duration::ZERO);
    let frees = stub.calls("cuMemFreeAsync");
    let held = Held::new(stub);
    let kept = fx.pool.allocate(4096, &fx.stream).map_err(failed)?;
    drop(fx.stream.completion_with(kept));
    let kept = fx.pool.allocate(4096, &fx.stream).map_err(failed)?;
    let mut polled = fx.other.completion_with(kept);
    ensure(poll_once(&mut polled).is_pending(), || {
        "held work was done".into()
    })?;
    drop(polled);
    let source = fx
        .pool
        .allocate_array::<f32>(1024, &fx.stream)
        .map_err(failed)?;
    drop(source.to_vec_async::<f32>());
    let mut target = fx
        .pool
        .allocate_array::<f32>(1024, &fx.other)
        .map_err(failed)?;
    drop(target.upload_async(&[1.0f32; 1024]));
    // Buffers free in stream order: these two may go at once.
    drop((source, target));
    ensure(stub.calls("cuMemFreeAsync") == frees + 2, || {
        "a buffer moved into a dropped future was freed while the GPU was held".into()
    })?;
    let during = r.stats();
    ensure(during.staging_in_use >= 2 * 4096, || {
        format!("staging left early: {during:?}")
    })?;
    drop(held);
    wait_until("the kept buffers are freed", || {
        stub.calls("cuMemFreeAsync") == frees + 4
    })?;
    wait_until("the staging memory is back", || {
        r.stats().staging_in_use == 0
    })
}

/// A kernel fault is the future's typed error, in its first poll and through the reactor,
/// and releases what it held; an error that says nothing of the GPU keeps it, logged.
fn errors_are_typed_and_only_sticky_ones_release(stub: &Stub, fx: &Fixture) -> Verdict {
    const ILLEGAL_ADDRESS: i32 = 700;
    const CAPTURED_EVENT: i32 = 907;
    completion::set_spin_budget(Duration::from_micros(20));
    stub.fail("cuEventQuery", ILLEGAL_ADDRESS, 1);
    let first_poll = code_of(block_on(fx.stream.completion()));
    ensure(first_poll == Some(CUresult(700)), || {
        format!("{first_poll:?}")
    })?;

    completion::set_spin_budget(Duration::ZERO);
    let frees = stub.calls("cuMemFreeAsync");
    stub.fail("cuEventQuery", ILLEGAL_ADDRESS, 1);
    let buffer = fx.pool.allocate(4096, &fx.stream).map_err(failed)?;
    let by_reactor = code_of(block_on(fx.stream.completion_with(buffer)));
    ensure(by_reactor == Some(CUresult(700)), || {
        format!("{by_reactor:?}")
    })?;
    ensure(stub.calls("cuMemFreeAsync") == frees + 1, || {
        "a sticky error did not release the buffer".into()
    })?;

    // This buffer, and the stream it holds, are kept for the rest of the process.
    stub::take_error_logs();
    let kept_for_good = fx
        .stream
        .device()
        .create_stream(Default::default())
        .map_err(failed)?;
    stub.fail("cuEventQuery", CAPTURED_EVENT, 1);
    let buffer = fx.pool.allocate(4096, &kept_for_good).map_err(failed)?;
    let unknown = code_of(block_on(kept_for_good.completion_with(buffer)));
    ensure(unknown == Some(CUresult(907)), || format!("{unknown:?}"))?;
    ensure(stub.calls("cuMemFreeAsync") == frees + 1, || {
        "memory was freed although the GPU's progress was unknown".into()
    })?;
    let logs = stub::take_error_logs();
    ensure(logs.iter().any(|line| line.contains("never freed")), || {
        format!("the kept memory was not logged: {logs:?}")
    })
}

/// An event's completion hands the event back, at once when it was never recorded.
fn an_event_completion_hands_the_event_back(stub: &Stub, fx: &Fixture) -> Verdict {
    completion::set_spin_budget(Duration::ZERO);
    let event = fx
        .stream
        .device()
        .context()
        .and_then(|context| context.create_event(EventOptions::default()))
        .map_err(failed)?;
    let raw = event.as_raw();
    let event = block_on(event.into_completion()).map_err(failed)?;
    let held = Held::new(stub);
    fx.stream.record(&event).map_err(failed)?;
    let mut waiting = event.into_completion();
    ensure(poll_once(&mut waiting).is_pending(), || {
        "held work was done".into()
    })?;
    drop(held);
    let event = block_on(waiting).map_err(failed)?;
    ensure(event.as_raw() == raw, || "another event came back".into())
}

/// Two hundred tasks on a two-worker tokio runtime upload, download and check their data.
fn tasks_on_tokio_round_trip(_: &Stub, fx: &Fixture) -> Verdict {
    completion::set_spin_budget(Duration::from_micros(20));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .map_err(|error| format!("no runtime: {error}"))?;
    let streams = [fx.stream.clone(), fx.other.clone()];
    let matched = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for task in 0..200u32 {
            let (pool, stream) = (fx.pool.clone(), streams[task as usize % 2].clone());
            tasks.spawn(async move {
                let input: Vec<u32> = (0..256).map(|i| task * 1000 + i).collect();
                let mut x = pool.allocate_array::<u32>(input.len(), &stream)?;
                x.upload_async(&input).await?;
                Ok::<bool, Error>(x.to_vec_async::<u32>().await? == input)
            });
        }
        let mut matched = 0;
        while let Some(joined) = tasks.join_next().await {
            matched += usize::from(joined.map_err(|e| e.to_string())?.map_err(failed)?);
        }
        Ok::<usize, String>(matched)
    })?;
    ensure(matched == 200, || {
        format!("{matched} of 200 tasks got their data back")
    })
}

fn main() -> ExitCode {
    let Some((stub, fixture)) = support::start("completion_stub") else {
        return ExitCode::SUCCESS;
    };
    // Held for the whole run, as a server would: events and staging are reused across cases.
    let reactor = Reactor::shared();
    let fx = &fixture;
    let cases: Vec<(&str, Case<'_>)> = vec![
        (
            "a short wait is its record and queries",
            Box::new(|| a_short_wait_is_its_record_and_queries(stub, fx, &reactor)),
        ),
        (
            "uploads and downloads round-trip",
            Box::new(|| uploads_and_downloads_round_trip(stub, fx, &reactor)),
        ),
        (
            "a waiting future is woken by the reactor",
            Box::new(|| a_waiting_future_is_woken_by_the_reactor(stub, fx)),
        ),
        (
            "registrations racing completions lose no wake-up",
            Box::new(|| registrations_racing_completions_lose_no_wake_up(stub, fx, &reactor)),
        ),
        (
            "a thousand futures resolve on one release",
            Box::new(|| a_thousand_futures_resolve_on_one_release(stub, fx, &reactor)),
        ),
        (
            "dropped futures keep what the GPU uses",
            Box::new(|| dropped_futures_keep_what_the_gpu_uses(stub, fx, &reactor)),
        ),
        (
            "errors are typed and only sticky ones release",
            Box::new(|| errors_are_typed_and_only_sticky_ones_release(stub, fx)),
        ),
        (
            "an event completion hands the event back",
            Box::new(|| an_event_completion_hands_the_event_back(stub, fx)),
        ),
        (
            "tasks on tokio round-trip",
            Box::new(|| tasks_on_tokio_round_trip(stub, fx)),
        ),
    ];
    let total = cases.len();
    let failures = support::run(&cases);
    drop(cases);
    // The stream of the buffer kept for good (an error that said nothing of the GPU) stays,
    // with the spare event its completion gave back.
    support::finish(
        "completion_stub",
        stub,
        (fixture, reactor),
        (1, 1),
        (total, failures),
    )
}
