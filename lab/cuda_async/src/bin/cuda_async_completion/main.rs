//! `async/benches/completion.rs`'s rows on cuda-async 0.5.0, each under our name with the
//! `cuda_async_` prefix:
//!
//! - `complete_stream_sync_spin`: the empty kernel's launch operation run by `sync_on` (queued,
//!   then `cuStreamSynchronize`), cuda-async's blocking way;
//! - `complete_await_current_thread`: the launch operation scheduled on the stream
//!   (`SingleStream`) and its future driven by `pollster::block_on`, cuda-async's default spin
//!   budget (20 us of `cuStreamQuery`, as ours spins 20 us by default);
//! - `complete_await_reactor`: the same with the spin off. cuda-async reads its budget once per
//!   process from `CUDA_ASYNC_SPIN_BUDGET_US`, so this program runs itself again with the
//!   variable at 0 (and `--reactor-only`) for that row and for `register_futures_per_s`;
//! - the waits and registrations (`waits.rs`).
//!
//! Each latency is the median of 2,000 after 200 warm-ups, as ours and the floor's.

use std::process::{Command, ExitCode};
use std::time::Instant;

use cuda_async::device_operation::DeviceOp;
use cuda_async::scheduling_policies::SingleStream;
use cuda_async_lab::figures::{fig, median};
use cuda_async_lab::kernels::Kernels;
use cuda_async_lab::{Result, device, kernels, launches};

mod waits;

const WARM: usize = 200;
const REPS: usize = 2000;

/// The argument the program gives its second run, the reactor-only one.
const REACTOR_ONLY: &str = "--reactor-only";
/// cuda-async's spin budget in microseconds, read once per process (default 20).
const SPIN_BUDGET_VAR: &str = "CUDA_ASYNC_SPIN_BUDGET_US";
/// cuda-async's choice of a host-function path instead of its reactor, read once per process.
const HOST_SYNC_VAR: &str = "CUDA_ASYNC_HOST_SYNC";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
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

/// The awaited empty kernel: its launch operation scheduled on `policy`'s stream and driven
/// to completion on this thread.
fn awaited(kernels: &Kernels, policy: &SingleStream) -> Result<f64> {
    latency(|| {
        pollster::block_on(launches::empty(kernels).schedule(policy)?)?;
        Ok(())
    })
}

fn run() -> Result<()> {
    let reactor_only = std::env::args().nth(1).as_deref() == Some(REACTOR_ONLY);
    if reactor_only && std::env::var(SPIN_BUDGET_VAR).as_deref() != Ok("0") {
        return Err(format!("{REACTOR_ONLY} needs {SPIN_BUDGET_VAR}=0").into());
    }
    if std::env::var_os(HOST_SYNC_VAR).is_some() {
        return Err(format!("{HOST_SYNC_VAR} is set: unset it, so the reactor is measured").into());
    }
    let context = device::open()?;
    let kernels = kernels::completion(&context)?;
    let stream = device::stream(&context)?;
    let policy = SingleStream::from_stream(stream.clone());
    if reactor_only {
        fig("complete_await_reactor", awaited(&kernels, &policy)?, "us");
        return waits::registrations(&kernels, &stream, &policy);
    }
    println!(
        "INFO cuda-async 0.5.0, spin budget {}",
        std::env::var(SPIN_BUDGET_VAR).map_or("20 us (default)".into(), |us| format!("{us} us"))
    );
    let sync = latency(|| {
        launches::empty(&kernels).sync_on(&stream)?;
        Ok(())
    })?;
    fig("complete_stream_sync_spin", sync, "us");
    fig(
        "complete_await_current_thread",
        awaited(&kernels, &policy)?,
        "us",
    );
    waits::waits(&kernels, &stream, &policy)?;
    reactor_run()?;
    println!("DONE");
    Ok(())
}

/// Runs this program again with the spin off, for the rows that need it; its `FIG` lines go
/// to the same output.
fn reactor_run() -> Result<()> {
    let status = Command::new(std::env::current_exe()?)
        .arg(REACTOR_ONLY)
        .env(SPIN_BUDGET_VAR, "0")
        .status()?;
    if !status.success() {
        return Err(format!("the reactor-only run ({SPIN_BUDGET_VAR}=0) failed: {status}").into());
    }
    Ok(())
}
