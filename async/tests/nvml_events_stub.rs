//! NVML event streams against the stub NVML of `stub/c` (`libnvml_events_stub.c`), whose
//! events the test raises (`NvmlEvents::inject`) and whose waits sleep on a condition variable
//! until an event or their timeout: delivery in order, the watcher blocked rather than spinning
//! (its calls counted), ten thousand events through a queue of four with none lost, the set
//! freed and NVML shut down after a drop without waiting, `close`'s error, an NVML failure as
//! the last item, bad options refused, a panicking waker, and a tokio task woken by an event.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

use cuda_safe_stub as stub;

use std::process::ExitCode;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use cuda_safe::Error;
use cuda_safe::system::{Device, EventSet, EventTypes};
use cuda_safe_async::{CLOCK_XID_POWER, EventSetExt, NvmlEventStream, NvmlStreamOptions};
use pollster::block_on;
use stub::nvml::NvmlEvents;
use stub::{Installed, KINDS, Stub};

type Verdict = Result<(), String>;

/// `nvmlReturn_t` codes the cases inject.
const NVML_ERROR_GPU_IS_LOST: i32 = 15;
const NVML_ERROR_UNKNOWN: i32 = 999;

fn ensure(holds: bool, what: impl FnOnce() -> String) -> Verdict {
    if holds { Ok(()) } else { Err(what()) }
}

fn failed(error: Error) -> String {
    format!("unexpected error: {error}")
}

/// Waits (at most 10 s) until `holds` does.
fn wait_until(what: &str, mut holds: impl FnMut() -> bool) -> Verdict {
    let start = Instant::now();
    while !holds() {
        if start.elapsed() > Duration::from_secs(10) {
            return Err(format!("gave up waiting until {what}"));
        }
        thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// NVML initialisations alive (the stub's `nvml` kind).
fn nvml_users(stub: &Stub) -> i64 {
    let index = KINDS.iter().position(|kind| *kind == "nvml").unwrap_or(0);
    stub.live()[index]
}

fn options(wait_timeout: Duration, capacity: usize) -> NvmlStreamOptions {
    NvmlStreamOptions::default()
        .wait_timeout(wait_timeout)
        .capacity(capacity)
}

fn watch(options: NvmlStreamOptions) -> Result<NvmlEventStream, String> {
    let gpu = Device::from_index(0).map_err(failed)?;
    NvmlEventStream::watch(&[gpu], CLOCK_XID_POWER, options).map_err(failed)
}

/// Events come in the order raised, decoded; the watcher sits in one wait while nothing
/// happens (a spinning one would make thousands of calls in the window).
fn events_arrive_in_order_from_a_blocked_watcher(stub: &Stub, nvml: &NvmlEvents) -> Verdict {
    let mut events = watch(options(Duration::from_secs(1), 64))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    let before = stub.calls("nvmlEventSetWait_v2");
    thread::sleep(Duration::from_millis(200));
    let made = stub.calls("nvmlEventSetWait_v2") - before;
    ensure(made <= 1, || {
        format!("{made} waits in 200 ms with a 1 s timeout: the watcher spins")
    })?;
    let raised = [
        (EventTypes::XID_CRITICAL_ERROR, 79),
        (EventTypes::CLOCK, 0),
        (EventTypes::POWER_SOURCE_CHANGE, 1),
        (EventTypes::PSTATE, 2),
    ];
    for (types, data) in raised {
        ensure(nvml.inject(types.bits(), data) == 1, || {
            format!("the stub did not queue {types:?}")
        })?;
    }
    for (types, data) in raised {
        let event = block_on(events.next_event())
            .ok_or("the stream ended early")?
            .map_err(failed)?;
        ensure(event.types == types && event.data == data, || {
            format!("got {event:?}, expected {types:?} with {data}")
        })?;
        let xid = (types == EventTypes::XID_CRITICAL_ERROR).then_some(data);
        ensure(event.xid() == xid, || format!("xid of {event:?}"))?;
        ensure(event.gpu_instance_id.is_none(), || format!("{event:?}"))?;
    }
    events.close().map_err(failed)
}

/// Ten thousand events through a stream that holds four, read in bursts: every one arrives,
/// in order, while the producer runs ahead.
fn no_event_is_lost_when_the_consumer_is_slow(_: &Stub, nvml: &NvmlEvents) -> Verdict {
    const EVENTS: u64 = 10_000;
    let mut events = watch(options(Duration::from_millis(50), 4))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    let producer = {
        let nvml = *nvml;
        thread::spawn(move || {
            for data in 0..EVENTS {
                let kind = if data % 2 == 0 {
                    EventTypes::CLOCK
                } else {
                    EventTypes::XID_CRITICAL_ERROR
                };
                nvml.inject(kind.bits(), data);
            }
        })
    };
    for expected in 0..EVENTS {
        if expected % 1000 == 0 {
            thread::sleep(Duration::from_millis(5));
        }
        let event = block_on(events.next_event())
            .ok_or_else(|| format!("the stream ended after {expected} events"))?
            .map_err(failed)?;
        ensure(event.data == expected, || {
            format!("event {expected} came as {}", event.data)
        })?;
    }
    producer.join().map_err(|_| "the producer panicked")?;
    events.close().map_err(failed)
}

/// A dropped stream returns at once; its thread frees the set at its next wake and NVML shuts
/// down with it, never freeing the set under a waiting call.
fn dropping_frees_the_set_and_nvml_without_waiting(stub: &Stub, nvml: &NvmlEvents) -> Verdict {
    let (sets, users, misuses) = (nvml.live_sets(), nvml_users(stub), stub.misuse().0);
    let events = watch(options(Duration::from_millis(20), 16))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    ensure(nvml.live_sets() == sets + 1, || "no set was made".into())?;
    let start = Instant::now();
    drop(events);
    let took = start.elapsed();
    wait_until("the set is freed", || nvml.live_sets() == sets)?;
    wait_until("NVML is shut down", || nvml_users(stub) == users)?;
    ensure(nvml.waiting() == 0, || "a thread still waits".into())?;
    ensure(stub.misuse().0 == misuses, || stub.misuse().1)?;
    ensure(took < Duration::from_millis(20), || {
        format!("the drop waited {took:?} for the thread")
    })
}

/// `close` waits for the thread and returns NVML's error freeing the set.
fn close_returns_the_error_freeing_the_set(stub: &Stub, nvml: &NvmlEvents) -> Verdict {
    let events = watch(options(Duration::from_millis(20), 16))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    stub.fail("nvmlEventSetFree", NVML_ERROR_UNKNOWN, 1);
    let closed = events.close();
    stub.disarm();
    let code = closed.as_ref().err().and_then(Error::nvml_code);
    ensure(
        code.map(|code| code.0) == Some(NVML_ERROR_UNKNOWN as u32),
        || format!("close gave {closed:?}"),
    )
}

/// An NVML failure comes after the events before it, as the last item; the set is freed.
fn an_nvml_failure_is_the_last_item(stub: &Stub, nvml: &NvmlEvents) -> Verdict {
    let sets = nvml.live_sets();
    stub.fail("nvmlEventSetWait_v2", NVML_ERROR_GPU_IS_LOST, 2);
    let mut events = watch(options(Duration::from_secs(1), 16))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    nvml.inject(EventTypes::CLOCK.bits(), 7);
    let first = block_on(events.next_event());
    let second = block_on(events.next_event());
    let third = block_on(events.next_event());
    stub.disarm();
    ensure(matches!(&first, Some(Ok(event)) if event.data == 7), || {
        format!("first item {first:?}")
    })?;
    let code = match &second {
        Some(Err(error)) => error.nvml_code().map(|code| code.0),
        _ => None,
    };
    ensure(code == Some(NVML_ERROR_GPU_IS_LOST as u32), || {
        format!("second item {second:?}")
    })?;
    ensure(third.is_none(), || format!("after the failure: {third:?}"))?;
    wait_until("the set is freed", || nvml.live_sets() == sets)?;
    ensure(block_on(events.next_event()).is_none(), || {
        "the end is not kept".into()
    })
}

/// Options that would spin or hold nothing, and kinds no GPU supports, are refused; nothing is
/// left behind.
fn bad_requests_are_refused(stub: &Stub, nvml: &NvmlEvents) -> Verdict {
    let (sets, users) = (nvml.live_sets(), nvml_users(stub));
    for (wait, capacity) in [
        (Duration::ZERO, 16),
        (Duration::from_micros(500), 16),
        (Duration::from_secs(1), 0),
        (Duration::from_secs(61), 16),
        (Duration::MAX, 16),
    ] {
        let refused = EventSet::new()
            .map_err(failed)?
            .into_stream_with(options(wait, capacity));
        ensure(matches!(refused, Err(Error::InvalidArgument(_))), || {
            format!("{wait:?} and {capacity}: {refused:?}")
        })?;
    }
    let gpu = Device::from_index(0).map_err(failed)?;
    let unsupported = NvmlEventStream::watch(
        &[gpu],
        EventTypes::DOUBLE_BIT_ECC_ERROR,
        NvmlStreamOptions::default(),
    );
    ensure(
        matches!(unsupported, Err(Error::Unsupported { .. })),
        || format!("{unsupported:?}"),
    )?;
    ensure(
        nvml.live_sets() == sets && nvml_users(stub) == users,
        || "a refused stream left its set or NVML behind".into(),
    )
}

/// A waker whose `wake` panics.
struct Panicking;

impl Wake for Panicking {
    fn wake(self: Arc<Self>) {
        panic!("a waker that panics");
    }
}

/// A waker that panics in `wake` is logged on the watcher's thread, which goes on: the event
/// is taken at the next poll, and later events still come.
fn a_panicking_waker_does_not_stop_the_watcher(_: &Stub, nvml: &NvmlEvents) -> Verdict {
    let mut events = watch(options(Duration::from_millis(50), 16))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    stub::take_error_logs();
    // The panic is expected: keep its message and backtrace out of the output.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let verdict = wake_with(Waker::from(Arc::new(Panicking)), &mut events, nvml);
    std::panic::set_hook(hook);
    verdict?;
    nvml.inject(EventTypes::CLOCK.bits(), 2);
    let second = block_on(events.next_event());
    ensure(
        matches!(&second, Some(Ok(event)) if event.data == 2),
        || format!("the next event: {second:?}"),
    )?;
    events.close().map_err(failed)
}

/// A panic payload whose own drop panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("a panic payload that panics when dropped");
    }
}

/// A waker whose `wake` panics with a [`Bomb`].
struct Bombing;

impl Wake for Bombing {
    fn wake(self: Arc<Self>) {
        std::panic::panic_any(Bomb);
    }
}

/// A waker that panics with a payload whose drop panics too: the watcher forgets the payload
/// and goes on, and later events still come.
fn a_payload_that_panics_when_dropped_does_not_stop_the_watcher(
    _: &Stub,
    nvml: &NvmlEvents,
) -> Verdict {
    let mut events = watch(options(Duration::from_millis(50), 16))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    stub::take_error_logs();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let verdict = wake_with(Waker::from(Arc::new(Bombing)), &mut events, nvml);
    std::panic::set_hook(hook);
    verdict?;
    nvml.inject(EventTypes::CLOCK.bits(), 2);
    let mut second = Poll::Pending;
    wait_until("the next event comes", || {
        second = events.poll_next(&mut TaskContext::from_waker(Waker::noop()));
        second.is_ready()
    })?;
    ensure(
        matches!(&second, Poll::Ready(Some(Ok(event))) if event.data == 2),
        || format!("the next event: {second:?}"),
    )?;
    events.close().map_err(failed)
}

/// Polls with a waker that panics, raises an event, and takes it once the panic is logged.
fn wake_with(waker: Waker, events: &mut NvmlEventStream, nvml: &NvmlEvents) -> Verdict {
    let mut cx = TaskContext::from_waker(&waker);
    ensure(events.poll_next(&mut cx).is_pending(), || {
        "an item before any event".into()
    })?;
    nvml.inject(EventTypes::CLOCK.bits(), 1);
    wait_until("the panic is logged", || {
        !stub::take_error_logs().is_empty()
    })?;
    let first = events.poll_next(&mut TaskContext::from_waker(Waker::noop()));
    ensure(matches!(first, Poll::Ready(Some(Ok(_)))), || {
        format!("after the panic: {first:?}")
    })
}

/// A task on a tokio runtime awaits the stream and is woken by an event raised elsewhere.
fn a_tokio_task_is_woken_by_an_event(_: &Stub, nvml: &NvmlEvents) -> Verdict {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .map_err(|error| error.to_string())?;
    let mut events = watch(options(Duration::from_millis(50), 16))?;
    wait_until("the watcher waits in NVML", || nvml.waiting() == 1)?;
    let task = runtime.spawn(async move {
        let event = events.next_event().await;
        (event.map(|event| event.map(|event| event.data)), events)
    });
    thread::sleep(Duration::from_millis(20));
    nvml.inject(EventTypes::XID_CRITICAL_ERROR.bits(), 43);
    let (got, events) = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), task).await })
        .map_err(|_| "the task was not woken")?
        .map_err(|error| error.to_string())?;
    ensure(matches!(got, Some(Ok(43))), || {
        format!("the task got {got:?}")
    })?;
    events.close().map_err(failed)
}

type Case = fn(&Stub, &NvmlEvents) -> Verdict;

fn main() -> ExitCode {
    let stub = match stub::install() {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("nvml_events_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    stub::install_logger();
    let nvml = stub.nvml_events();
    let cases: [(&str, Case); 9] = [
        (
            "events arrive in order from a blocked watcher",
            events_arrive_in_order_from_a_blocked_watcher,
        ),
        (
            "no event is lost when the consumer is slow",
            no_event_is_lost_when_the_consumer_is_slow,
        ),
        (
            "dropping frees the set and NVML without waiting",
            dropping_frees_the_set_and_nvml_without_waiting,
        ),
        (
            "an NVML failure is the last item",
            an_nvml_failure_is_the_last_item,
        ),
        ("bad requests are refused", bad_requests_are_refused),
        (
            "a panicking waker does not stop the watcher",
            a_panicking_waker_does_not_stop_the_watcher,
        ),
        (
            "a panic payload that panics when dropped does not stop the watcher",
            a_payload_that_panics_when_dropped_does_not_stop_the_watcher,
        ),
        (
            "a tokio task is woken by an event",
            a_tokio_task_is_woken_by_an_event,
        ),
        // Last: the set whose free failed is abandoned, live for good.
        (
            "close returns the error freeing the set",
            close_returns_the_error_freeing_the_set,
        ),
    ];
    let mut failures = 0;
    for (name, case) in cases {
        let start = Instant::now();
        let misuses = stub.misuse().0;
        let verdict = case(stub, &nvml).and_then(|()| {
            ensure(stub.misuse().0 == misuses, || {
                format!("NVML misused: {}", stub.misuse().1)
            })
        });
        match verdict {
            Ok(()) => println!("ok   {name} ({:.1?})", start.elapsed()),
            Err(why) => {
                failures += 1;
                println!("FAIL {name}: {why}");
            }
        }
    }
    println!("nvml_events_stub: {} cases, {failures} failed", cases.len());
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
