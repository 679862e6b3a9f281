//! Learning that GPU work finished, through the crate, beside `bench/floors/async_floor.c` (run in the
//! same job; the runner pins both to one core).
//!
//! - The floor's four ways, made through the crate, under the floor's names (so the runner's
//!   table sets each beside the C figure): `complete_stream_sync_spin` (launch + `sync`),
//!   `complete_event_blocking_sync` (launch + record + `sync` of a blocking-sync event),
//!   `complete_event_query_poll` (launch + record + `is_done` in a loop) and
//!   `complete_host_func_wake` (launch + `launch_host_func` signalling a condition variable).
//! - The futures: `complete_await_current_thread` (launch + `pollster::block_on` of
//!   `stream.completion()`, the default spin budget), `complete_await_reactor` (the same
//!   with the future's spin off: the reactor thread, which spins 20 us before it arms a host
//!   function) and `complete_await_reactor_host_func` (the reactor's spin off too: its host
//!   function), and
//!   `complete_await_over_event_blocking_sync`, the first over the crate's blocking-sync
//!   figure (goal: at most 1.3); each the median of 2,000 after 200 warm-ups, as the floor.
//! - CPU time while 1,000 futures of one stream wait on a 100 ms kernel on one thread:
//!   `wait_100ms_cpu_process_1000_futures` (the process's CPU time from the last first poll to
//!   the last future resolved, every thread counted), `wait_100ms_cpu_share_1000_futures` (that,
//!   in percent of one core over the wait; goal: at most 2), `register_1000_futures_cpu` (making
//!   and first-polling them), and `wait_100ms_cpu_process_1_future` beside the floor's
//!   `wait_100ms_cpu_process_host_func`; medians of 5.
//! - The reactor's registrations per second, `register_futures_per_s`: 1,000 futures made and
//!   first-polled while the 100 ms kernel holds their stream, with the spin off (so each first
//!   poll registers with the reactor at once), over the wall time of that; the median of 5.
//! - Awaited downloads of 1 MiB and of 256 MiB (past the staging cache's 64 MiB of small
//!   blocks): `download_staged_<n>mib` (`to_vec_async`: a copy into the reactor's pinned
//!   staging, then one into a new `Vec`), `download_pinned_<n>mib` (`download_into` a pinned
//!   block of the caller's, handed back each time: one copy) and
//!   `download_pinned_over_staged_<n>mib`, their ratio; medians of 20 after 20 warm-ups.
//!
//! Launches per second from 8 tasks against 8 blocking threads are `completion_threads`.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

#[path = "common/completion_kit.rs"]
mod kit;

use cuda_safe::{Device, Error, EventOptions, PinnedMemoryResource, Result, Stream};
use cuda_safe_async::prelude::*;
use cuda_safe_async::{self as completion, Completion, Reactor};
use kit::{Kernels, kernels, launch_empty, launch_spin, median, process_cpu_ms};

const WARM: usize = 200;
const REPS: usize = 2000;
const WAITS: usize = 5;
const FUTURES: usize = 1000;
const HUNDRED_MS: u64 = 100_000_000;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn fig(name: &str, value: f64, unit: &str) {
    println!("FIG {name} {value:.4} {unit}");
}

/// The median latency, in microseconds, of `REPS` runs of `once` after `WARM`.
fn latency(mut once: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut samples = Vec::with_capacity(REPS);
    for i in 0..WARM + REPS {
        let start = Instant::now();
        once()?;
        if i >= WARM {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok(median(&mut samples))
}

fn run() -> Result<()> {
    let device = Device::new(0)?;
    let kernels = kernels(&device)?;
    let stream = device.create_stream(Default::default())?;
    // Held for the whole run, as a server holds one.
    let reactor = Reactor::shared();
    latencies(&device, &kernels, &stream)?;
    waits(&kernels, &stream)?;
    downloads(&device, &stream)?;
    println!("INFO reactor after the run: {:?}", reactor.stats());
    println!("DONE");
    Ok(())
}

fn latencies(device: &Device, kernels: &Kernels, stream: &Stream) -> Result<()> {
    let spin = latency(|| {
        launch_empty(kernels, stream)?;
        stream.sync()
    })?;
    fig("complete_stream_sync_spin", spin, "us");
    let blocking = device.create_event(EventOptions::default().blocking_sync(true))?;
    let blocking_sync = latency(|| {
        launch_empty(kernels, stream)?;
        blocking.record(stream)?;
        blocking.sync()
    })?;
    fig("complete_event_blocking_sync", blocking_sync, "us");
    let polled = device.create_event(EventOptions::default())?;
    let poll = latency(|| {
        launch_empty(kernels, stream)?;
        polled.record(stream)?;
        while !polled.is_done()? {}
        Ok(())
    })?;
    fig("complete_event_query_poll", poll, "us");
    let signal = Arc::new((Mutex::new(false), Condvar::new()));
    let host_func = latency(|| {
        launch_empty(kernels, stream)?;
        let woken = signal.clone();
        stream.launch_host_func(move || {
            let (done, wake) = &*woken;
            *done.lock().unwrap_or_else(|e| e.into_inner()) = true;
            wake.notify_one();
        })?;
        let (done, wake) = &*signal;
        let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = wake.wait(done).unwrap_or_else(|e| e.into_inner());
        }
        *done = false;
        Ok(())
    })?;
    fig("complete_host_func_wake", host_func, "us");
    let awaited = latency(|| {
        launch_empty(kernels, stream)?;
        pollster::block_on(stream.completion())
    })?;
    fig("complete_await_current_thread", awaited, "us");
    let budget = completion::spin_budget();
    completion::set_spin_budget(Duration::ZERO);
    let reactor_path = latency(|| {
        launch_empty(kernels, stream)?;
        pollster::block_on(stream.completion())
    });
    let reactor_spin = completion::reactor_spin();
    completion::set_reactor_spin(Duration::ZERO);
    let host_func_path = latency(|| {
        launch_empty(kernels, stream)?;
        pollster::block_on(stream.completion())
    });
    completion::set_reactor_spin(reactor_spin);
    completion::set_spin_budget(budget);
    fig("complete_await_reactor", reactor_path?, "us");
    fig("complete_await_reactor_host_func", host_func_path?, "us");
    fig(
        "complete_await_over_event_blocking_sync",
        awaited / blocking_sync,
        "ratio",
    );
    Ok(())
}

/// Download sizes, in MiB: one under the staging cache's limit for small blocks, one past it.
const DOWNLOAD_MIB: [usize; 2] = [1, 256];

/// Downloads timed per size, after as many warm-ups.
const DOWNLOADS: usize = 20;

/// The median time, in microseconds, of `DOWNLOADS` runs of `once` after as many warm-ups.
fn download_time(mut once: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut samples = Vec::with_capacity(DOWNLOADS);
    for i in 0..2 * DOWNLOADS {
        let start = Instant::now();
        once()?;
        if i >= DOWNLOADS {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok(median(&mut samples))
}

/// Awaited downloads through the reactor's staging against downloads into a pinned block of
/// the caller's.
fn downloads(device: &Device, stream: &Stream) -> Result<()> {
    let pool = device.default_memory_resource()?;
    let pinned = PinnedMemoryResource::new(device)?;
    for mib in DOWNLOAD_MIB {
        let bytes = mib << 20;
        let mut source = pool.allocate(bytes, stream)?;
        source.fill(1u8)?;
        let staged = download_time(|| pollster::block_on(source.to_vec_async::<u8>()).map(drop))?;
        let mut block = Some(pinned.allocate_block(bytes)?);
        let direct = download_time(|| {
            let into = block
                .take()
                .ok_or_else(|| Error::invalid_argument("the block was not handed back"))?;
            let values = pollster::block_on(source.download_into::<u8>(into))?;
            block = Some(values.into_block());
            Ok(())
        })?;
        fig(&format!("download_staged_{mib}mib"), staged, "us");
        fig(&format!("download_pinned_{mib}mib"), direct, "us");
        fig(
            &format!("download_pinned_over_staged_{mib}mib"),
            direct / staged,
            "ratio",
        );
    }
    Ok(())
}

/// A waker that raises a flag and unparks the polling thread.
struct Unpark {
    woken: AtomicBool,
    thread: Thread,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// Polls every future once (registering those that wait); which resolved at once (a future
/// that resolved to an error is the wait's error).
fn first_polls(futures: &mut [Completion], cx: &mut TaskContext<'_>) -> Result<Vec<bool>> {
    let mut done = Vec::with_capacity(futures.len());
    for future in futures {
        done.push(match Pin::new(future).poll(cx) {
            Poll::Ready(outcome) => outcome.map(|()| true)?,
            Poll::Pending => false,
        });
    }
    Ok(done)
}

/// Waits, on this thread, until every future that was pending has resolved.
fn wait_all(futures: &mut [Completion], done: &mut [bool], waker: &Arc<Unpark>) -> Result<()> {
    let waker_handle = Waker::from(waker.clone());
    let mut cx = TaskContext::from_waker(&waker_handle);
    while done.iter().any(|finished| !finished) {
        if !waker.woken.swap(false, Ordering::Acquire) {
            thread::park();
            continue;
        }
        for (future, finished) in futures.iter_mut().zip(done.iter_mut()) {
            if !*finished && let Poll::Ready(outcome) = Pin::new(future).poll(&mut cx) {
                outcome?;
                *finished = true;
            }
        }
    }
    Ok(())
}

/// One wait of `count` futures of one stream on a 100 ms kernel.
struct Wait {
    /// The process's CPU time from the last first poll to the last future resolved, ms.
    cpu_ms: f64,
    /// The wall time of the same, ms.
    wall_ms: f64,
    /// The process's CPU time of making and first-polling the futures, ms.
    made_cpu_ms: f64,
    /// The wall time of the same, ms.
    made_wall_ms: f64,
}

/// The CPU and wall times of `count` futures of `stream` waiting on a 100 ms kernel.
fn one_wait(kernels: &Kernels, stream: &Stream, count: usize) -> Result<Wait> {
    let waker = Arc::new(Unpark {
        woken: AtomicBool::new(false),
        thread: thread::current(),
    });
    let waker_handle = Waker::from(waker.clone());
    let mut cx = TaskContext::from_waker(&waker_handle);
    let start = Instant::now();
    launch_spin(kernels, stream, HUNDRED_MS)?;
    let (made, made_wall) = (process_cpu_ms(), Instant::now());
    let mut futures: Vec<Completion> = (0..count).map(|_| stream.completion()).collect();
    let mut done = first_polls(&mut futures, &mut cx)?;
    let (cpu, wall) = (process_cpu_ms(), Instant::now());
    wait_all(&mut futures, &mut done, &waker)?;
    let (cpu_end, wall_end) = (process_cpu_ms(), Instant::now());
    if (wall_end - start) < Duration::from_millis(99) {
        return Err(Error::invalid_argument(
            "the futures resolved before the 100 ms kernel ended",
        ));
    }
    Ok(Wait {
        cpu_ms: cpu_end - cpu,
        wall_ms: (wall_end - wall).as_secs_f64() * 1e3,
        made_cpu_ms: cpu - made,
        made_wall_ms: (wall - made_wall).as_secs_f64() * 1e3,
    })
}

fn waits(kernels: &Kernels, stream: &Stream) -> Result<()> {
    launch_spin(kernels, stream, 1000)?;
    stream.sync()?;
    let (mut cpu, mut share, mut register) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..WAITS {
        let wait = one_wait(kernels, stream, FUTURES)?;
        cpu.push(wait.cpu_ms);
        share.push(100.0 * wait.cpu_ms / wait.wall_ms);
        register.push(wait.made_cpu_ms);
    }
    fig(
        "wait_100ms_cpu_process_1000_futures",
        median(&mut cpu),
        "ms",
    );
    fig("wait_100ms_cpu_share_1000_futures", median(&mut share), "%");
    fig("register_1000_futures_cpu", median(&mut register), "ms");
    let mut single = Vec::new();
    for _ in 0..WAITS {
        single.push(one_wait(kernels, stream, 1)?.cpu_ms);
    }
    fig("wait_100ms_cpu_process_1_future", median(&mut single), "ms");
    let budget = completion::spin_budget();
    completion::set_spin_budget(Duration::ZERO);
    let registrations = registrations(kernels, stream);
    completion::set_spin_budget(budget);
    fig("register_futures_per_s", registrations?, "1/s");
    Ok(())
}

/// The median rate, over `WAITS` waits, at which `FUTURES` futures are made and first-polled
/// (with the spin off: each registers with the reactor).
fn registrations(kernels: &Kernels, stream: &Stream) -> Result<f64> {
    let mut rates = Vec::with_capacity(WAITS);
    for _ in 0..WAITS {
        let wait = one_wait(kernels, stream, FUTURES)?;
        rates.push(FUTURES as f64 / (wait.made_wall_ms / 1e3));
    }
    Ok(median(&mut rates))
}
