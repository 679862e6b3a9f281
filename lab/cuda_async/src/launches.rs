//! The launches of the completion benchmarks: the empty kernel as cuda-async's launch
//! operation (what a future awaits), and the spinning kernel launched straight through
//! cuda-core, as ours launches it without a future.

use std::ffi::c_void;

use cuda_async::launch::{AsyncKernelLaunch, AsyncKernelLaunchBuilder};
use cuda_core::{LaunchConfig, Stream};

use crate::Result;
use crate::kernels::Kernels;

/// One block of one thread, as every launch of our completion benchmarks.
pub const ONE_THREAD: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (1, 1, 1),
    shared_mem_bytes: 0,
};

/// The empty kernel as a lazy operation (nothing is queued until it is executed: awaited,
/// scheduled and polled, or `sync_on`).
pub fn empty(kernels: &Kernels) -> AsyncKernelLaunch<'static> {
    let builder = AsyncKernelLaunchBuilder::new(kernels.empty.clone());
    // SAFETY: `empty` takes no parameter and none is pushed; one thread of one block is within
    // every limit; the caller schedules it on a stream of the context that loaded it.
    unsafe { builder.finalize_unchecked(ONE_THREAD) }
}

/// Launches `spin(ns)` on `stream` at once (`cuLaunchKernel` through cuda-core).
///
/// # Errors
///
/// The driver's, from the launch.
pub fn spin(kernels: &Kernels, stream: &Stream, ns: u64) -> Result<()> {
    let mut ns = ns;
    let mut params = [(&raw mut ns).cast::<c_void>()];
    // SAFETY: `spin` takes one 64-bit value, which `params` points to for the call; it touches
    // no memory; `stream` belongs to the context that loaded it.
    unsafe {
        cuda_core::launch_kernel_on_stream(
            &kernels.spin,
            ONE_THREAD.grid_dim,
            ONE_THREAD.block_dim,
            0,
            stream,
            &mut params,
        )?;
    }
    Ok(())
}
