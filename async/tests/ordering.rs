//! The completion futures against the stub driver's race checker (`stub/c/cuda_race.c`): a
//! download resolves after the kernel that wrote its buffer, and a stream's completion orders
//! the host's read of pinned memory after the stream's work. Take the wait out of the crate and
//! the case fails with the race.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs.

use std::process::ExitCode;

use cuda_safe::{PinnedMemoryResource, launch};
use cuda_safe_async::prelude::*;
use cuda_safe_stub::Stub;
use cuda_safe_stub::ordering::{Fixture, N, Verdict, ensure, failed, no_race, run_cases};

/// The completion futures: a download resolves after the kernel that wrote the buffer (its
/// staging block reused by a download on another stream), and a stream's completion orders
/// the host's read of pinned memory after the stream's work.
fn completion_futures_order_the_host(stub: &Stub, fx: &Fixture) -> Verdict {
    let mut x = fx
        .pool
        .allocate_from_host(&[1.0f32; N], &fx.first)
        .map_err(failed)?;
    // SAFETY: the stub's `twice` doubles the N floats `x` holds.
    unsafe { launch(&fx.first, &fx.config, &fx.kernel, (&mut x, N)) }.map_err(failed)?;
    let read = pollster::block_on(x.to_vec_async::<f32>()).map_err(failed)?;
    ensure(read.iter().all(|&v| v == 2.0), || {
        "the download is wrong".into()
    })?;
    let mut y = fx
        .pool
        .allocate_zeroed::<f32>(N, &fx.second)
        .map_err(failed)?;
    y.fill(7.0f32).map_err(failed)?;
    let read = pollster::block_on(y.to_vec_async::<f32>()).map_err(failed)?;
    ensure(read.iter().all(|&v| v == 7.0), || {
        "the second download is wrong".into()
    })?;
    let pinned = PinnedMemoryResource::new(&fx.device).map_err(failed)?;
    let mut host = pinned
        .allocate_zeroed::<f32>(N, &fx.second)
        .map_err(failed)?;
    host.fill(9.0f32).map_err(failed)?;
    pollster::block_on(fx.second.completion()).map_err(failed)?;
    stub.host_access(host.as_raw(), 4 * N, false);
    let values = host.as_host_slice::<f32>().map_err(failed)?;
    ensure(values.iter().all(|&v| v == 9.0), || {
        "the pinned buffer is wrong".into()
    })?;
    no_race(stub)
}

fn main() -> ExitCode {
    run_cases(
        "ordering",
        &[(
            "completion futures order the host",
            completion_futures_order_the_host,
        )],
    )
}
