//! CPU time while 1,000 futures of one stream wait on a 100 ms kernel, on one thread, and the
//! rate at which futures are made and first polled, as `async/benches/completion.rs` measures
//! them: the same kernel, counts, waker and loop, with cuda-async's future of a no-op
//! operation on the stream (`value(()).schedule(&SingleStream)`: at its first poll it executes
//! nothing, spins on `cuStreamQuery` for its budget, then arms a reactor slot behind the
//! stream's work) in place of `stream.completion()`.
//!
//! - `wait_100ms_cpu_process_1000_futures`, `wait_100ms_cpu_share_1000_futures`,
//!   `register_1000_futures_cpu`, `wait_100ms_cpu_process_1_future` (the default spin budget);
//! - `register_futures_per_s` (the reactor-only run, spin budget zero): 1,000 over the wall
//!   time of making and first-polling them while the kernel holds the stream.
//!
//! Medians of 5.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use cuda_async::device_future::DeviceFuture;
use cuda_async::device_operation::{DeviceOp, Value, value};
use cuda_async::scheduling_policies::SingleStream;
use cuda_async_lab::figures::{fig, median, process_cpu_ms};
use cuda_async_lab::kernels::Kernels;
use cuda_async_lab::{Result, launches};
use cuda_core::Stream;

const WAITS: usize = 5;
const FUTURES: usize = 1000;
const HUNDRED_MS: u64 = 100_000_000;

/// cuda-async's future of a no-op operation on a stream: it resolves once the stream's work
/// queued before its first poll has finished.
type Waiting = DeviceFuture<(), Value<()>>;

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

/// Polls every future once (arming those that wait); which resolved at once.
fn first_polls(futures: &mut [Waiting], cx: &mut TaskContext<'_>) -> Result<Vec<bool>> {
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
fn wait_all(futures: &mut [Waiting], done: &mut [bool], waker: &Arc<Unpark>) -> Result<()> {
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

/// One wait of `count` futures on a 100 ms kernel.
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

fn one_wait(
    kernels: &Kernels,
    stream: &Stream,
    policy: &SingleStream,
    count: usize,
) -> Result<Wait> {
    let waker = Arc::new(Unpark {
        woken: AtomicBool::new(false),
        thread: thread::current(),
    });
    let waker_handle = Waker::from(waker.clone());
    let mut cx = TaskContext::from_waker(&waker_handle);
    let start = Instant::now();
    launches::spin(kernels, stream, HUNDRED_MS)?;
    let (made, made_wall) = (process_cpu_ms(), Instant::now());
    let mut futures = (0..count)
        .map(|_| value(()).schedule(policy))
        .collect::<std::result::Result<Vec<Waiting>, _>>()?;
    let mut done = first_polls(&mut futures, &mut cx)?;
    let (cpu, wall) = (process_cpu_ms(), Instant::now());
    wait_all(&mut futures, &mut done, &waker)?;
    let (cpu_end, wall_end) = (process_cpu_ms(), Instant::now());
    if (wall_end - start) < Duration::from_millis(99) {
        return Err("the futures resolved before the 100 ms kernel ended".into());
    }
    Ok(Wait {
        cpu_ms: cpu_end - cpu,
        wall_ms: (wall_end - wall).as_secs_f64() * 1e3,
        made_cpu_ms: cpu - made,
        made_wall_ms: (wall - made_wall).as_secs_f64() * 1e3,
    })
}

/// The waits under the default spin budget.
pub fn waits(kernels: &Kernels, stream: &Stream, policy: &SingleStream) -> Result<()> {
    launches::spin(kernels, stream, 1000)?;
    stream.synchronize()?;
    let (mut cpu, mut share, mut register) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..WAITS {
        let wait = one_wait(kernels, stream, policy, FUTURES)?;
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
        single.push(one_wait(kernels, stream, policy, 1)?.cpu_ms);
    }
    fig("wait_100ms_cpu_process_1_future", median(&mut single), "ms");
    Ok(())
}

/// Registrations per second with the spin off (the reactor-only run).
pub fn registrations(kernels: &Kernels, stream: &Stream, policy: &SingleStream) -> Result<()> {
    launches::spin(kernels, stream, 1000)?;
    stream.synchronize()?;
    let mut rates = Vec::new();
    for _ in 0..WAITS {
        let wait = one_wait(kernels, stream, policy, FUTURES)?;
        rates.push(FUTURES as f64 / (wait.made_wall_ms / 1e3));
    }
    fig("register_futures_per_s", median(&mut rates), "1/s");
    Ok(())
}
