//! Completion futures of `cuda-safe`'s GPU work: await it from any async runtime (tokio,
//! smol, `pollster`, a hand-written executor) with only `std::task`, blocking no thread,
//! spinning no core while the work runs, and never freeing memory the GPU may still use.
//!
//! ```no_run
//! use cuda_safe::Device;
//! use cuda_safe_async::{BufferExt, StreamExt};
//!
//! # async fn serve() -> cuda_safe::Result<()> {
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let mut x = pool.allocate_array::<f32>(1024, &stream)?;
//! x.upload_async(&[1.5f32; 1024]).await?; // staged through pinned memory
//! // ... launch kernels on `stream` ...
//! stream.completion().await?; // the awaitable `stream.sync()`
//! let back: Vec<f32> = x.to_vec_async().await?; // the awaitable `x.to_vec()`
//! assert_eq!(back[0], 1.5);
//! # Ok(()) }
//! ```
//!
//! The futures, methods of extension traits on the core's types:
//! [`StreamExt::completion`] (and [`completion_with`](StreamExt::completion_with), which keeps
//! values alive until the work is done and hands them back), [`EventExt::into_completion`],
//! [`BufferExt::to_vec_async`], [`download_into`](BufferExt::download_into) (into the caller's
//! pinned memory, with no staging) and [`upload_async`](BufferExt::upload_async),
//! [`GraphExecExt::launch_async`], and with the `nccl` feature `CommunicatorExt::completion`.
//! Each resolves to a `cuda_safe::Result`: a kernel fault or another sticky error is the
//! driver's [`Error::Cuda`](cuda_safe::Error::Cuda), as the blocking call would return it. `docs/async.md` says when to await and when to sync.
//!
//! NVML's events (clock changes, Xid errors, power-source and performance-state changes)
//! come as a stream of items too: [`NvmlEventStream`] ([`NvmlEventStream::watch`], or
//! [`EventSetExt::into_stream`] on a registered `cuda_safe::system::EventSet`), watched by a
//! thread of its own that blocks in NVML rather than the reactor (see [`nvml`]).
//!
//! # How a wait is watched
//!
//! Every future records an event (one of its stream's spare events: a future allocates none
//! once warm) when it is made. Its first poll asks the event for at most 20 us
//! ([`set_spin_budget`]): short work, the case where latency counts, resolves there at the
//! latency of a `cuEventQuery` loop, without a wake. A future still waiting then goes to one process-wide reactor thread
//! ([`Reactor`]), which keeps the waiting futures of each stream in a lane (a stream's events
//! finish in order, so it asks only a lane's oldest event, or its newest, whose completion
//! completes the lane at once), and sleeps: before it does, each lane with unfinished work
//! gets one host function (`cuLaunchHostFunc`) on a side stream of the reactor's, queued behind
//! a wait on the lane's oldest event, that rings the reactor awake when that work is done. A
//! sweep every 10 ms ([`set_sweep_interval`]) asks every lane anyway (a host function the
//! driver runs late, or not at all after a sticky error).
//!
//! Why this mix, from the C floor's figures (`async_floor.c`, H200, first readings of
//! `shared/bench/README.md`, pinned to one core): a host function waking the waiter per
//! future took 26 us to learn that an empty kernel finished, against 20 us for a
//! blocking-sync event (35–38 against 29–32 us unpinned), so a host function per future is
//! already about 1.3x the blocking-sync floor before any waker or executor runs; the driver
//! runs host functions one at a time on its own thread (4.9e5 per second pinned), so 1,000
//! futures waking at once would cost that thread about 2 ms, the whole CPU budget of a
//! 100 ms wait; and a host function on the user's stream stalls the work queued after it
//! (`graph_floor.c`: host function + sync 15.4 us against 8.07 us for a launch + sync in
//! `driver_floor.c`). A thread blocked in `cuEventSynchronize` watches one event at a time
//! (a slow stream would hold up every other), and polling with backoff trades latency for CPU
//! at every step. Hence: spin only at the first poll and only briefly (a wait shorter than
//! the blocking path's own wake is answered sooner by asking), then sleep until the driver
//! says so, with one host function per stream rather than per future, never on the user's
//! streams. What this gives on the H200 (2026-12-02, one job with `async_floor.c`): an empty
//! kernel awaited in 8.5–9.0 us against 16.4 us for the blocking-sync event, 0.95 % of one
//! core while 1,000 futures wait on a 100 ms kernel, and awaited launches from 8 tasks at
//! 0.79–0.89x the rate of 8 blocking threads (`docs/performance.md`).
//!
//! What allocates per completion: nothing for a future that resolves within its spin (the
//! stream's spare event and the reactor handle are reused); for one that waits, nothing once
//! the reactor is warm (its slot in the waker table, its place in the lane and the
//! registration queue are reused), except the waker clone the executor makes (a reference count for tokio,
//! `pollster` and `futures`); a lane's host function is the driver's call itself, with a
//! reference count as its data, and [`Reactor::shared`] is one atomic increment. A download
//! returns a new `Vec` (its result); a future dropped before it resolves boxes what it keeps
//! alive.
//!
//! # Dropping a future
//!
//! The work it stands for still runs; nothing the future holds is freed before the GPU is
//! done with it: the values moved into [`StreamExt::completion_with`]
//! and the staging memory of downloads and uploads go to the reactor, which drops them once
//! the event has finished. Buffers themselves free in stream order, so a buffer dropped while
//! a download from it runs is freed after the copy. A value whose drop waits (pinned, managed
//! or `cuMemAlloc` memory waits for its stream) holds up the reactor while it waits: move pool
//! buffers into completions, keep the others yourself. So does a waker whose `wake` blocks: the
//! reactor wakes every finished future of a pass on its thread, so keep `wake` short (a waker
//! that sleeps a second in `wake` delays the other futures of that pass by a second). When a failure says nothing about the
//! GPU's progress (an event captured by a capture begun meanwhile on another thread), what
//! the future holds is kept for the rest of the process, and the leak logged, rather than
//! freed under a running kernel.
//!
//! # Panics in the user's code
//!
//! A waker whose `clone`, `wake` or `drop` panics, a kept value whose drop panics, a host
//! function that panics: none leaves a future, the waker table or the reactor in a state that
//! frees memory the GPU still uses or loses a wake-up. The panic reaches the poll or the drop
//! that ran the code, with the future as it was before (still waiting, or its holdings in the
//! reactor's care); on the reactor's thread it is caught and logged. No waker runs under a lock
//! of the crate's.
//!
//! # Memory and threads
//!
//! Host memory grows with the futures in flight, not with time: a waker table slot (at most
//! 128 bytes, a test checks) and an event per waiting future; at most 16,384 idle slots kept
//! for reuse, and up to 1,024 spare events per stream (they go with the stream); a lane per
//! stream a future waited on, kept while the stream lives (named without keeping the stream
//! alive, it goes at the reactor's first pass after the stream has gone); pinned staging in
//! powers of two from 4 KiB with at most 64 MiB idle, and apart from them the largest block
//! past that a copy used, kept for the next copy that large ([`Reactor::stats`] tells what is
//! held). The reactor thread starts with the first future that has to wait and ends once the
//! last [`Reactor`] handle (every future holds one) is gone and the work of dropped futures
//! has finished, releasing its side streams and staging memory; nothing joins it at process exit, so it cannot hang it. Hold a
//! `Reactor` for the life of a server that awaits one request at a time, so that the thread
//! and its caches are not made again for each.
//!
//! The reactor's waker table and bell are model-checked with loom:
//! `RUSTFLAGS="--cfg cuda_safe_loom" CARGO_TARGET_DIR=target/loom cargo test -p
//! cuda-safe-async --lib --release` (a cfg of the crate's own, not `loom`, so that tokio, a
//! development dependency, is not built for loom too).

#![cfg_attr(docsrs, feature(doc_cfg))]

mod bell;
mod error;
mod futures;
mod methods;
pub mod nvml;
pub mod op;
mod pinned;
mod pool;
mod reactor;
mod settle;
mod shared;
mod staging;
mod sync;
mod table;
mod waiter;

pub use error::AsyncError;
pub use futures::{Completion, Download};
#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
pub use methods::CommunicatorExt;
pub use methods::{BufferExt, EventExt, GraphExecExt, StreamExt};
pub use nvml::{CLOCK_XID_POWER, EventSetExt, NextNvmlEvent, NvmlEventStream, NvmlStreamOptions};
pub use op::{DeviceOp, OpFuture, Submit, Then};
pub use pinned::{PinnedDownload, PinnedValues};
pub use pool::{DEFAULT_POOL_STREAMS, PoolOptions, PoolPolicy, StreamPool};
pub use reactor::{reactor_spin, set_reactor_spin, set_sweep_interval, sweep_interval};
pub use shared::{Reactor, ReactorStats};
pub use waiter::{set_spin_budget, spin_budget};

/// The extension traits, for a glob import: `use cuda_safe_async::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "nccl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
    pub use crate::CommunicatorExt;
    pub use crate::{BufferExt, DeviceOp, EventExt, EventSetExt, GraphExecExt, StreamExt};
}
