//! Collectives on NCCL: communicators across GPUs and processes, and all-reduce, broadcast,
//! reduce, all-gather, reduce-scatter and send/receive on `cuda-safe`'s buffers and streams
//! (`libnccl.so.2` is loaded at run time; nothing links against it).
//!
//! One process driving every GPU:
//!
//! ```no_run
//! use cuda_safe::Device;
//! use cuda_safe_nccl::{self as nccl, Communicator, ReduceOp};
//!
//! let devices = Device::all()?;
//! let comms = Communicator::init_all(&devices)?;
//! let mut work = Vec::new();
//! for device in &devices {
//!     let stream = device.create_stream(Default::default())?;
//!     let buffer = device.default_memory_resource()?.allocate_from_host(&[1.0f32; 1024], &stream)?;
//!     work.push((stream, buffer));
//! }
//! nccl::group(|group| {
//!     for (comm, (stream, buffer)) in comms.iter().zip(&mut work) {
//!         group.all_reduce_in_place::<f32>(comm, buffer, ReduceOp::Sum, stream)?;
//!     }
//!     Ok(())
//! })?;
//! assert_eq!(work[0].1.to_vec::<f32>()?[0], devices.len() as f32);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! One process per GPU, started by a launcher that sets `RANK`, `WORLD_SIZE`, `LOCAL_RANK`,
//! `MASTER_ADDR` and `MASTER_PORT` ([`Launcher`], or `torchrun`) and the job's secret
//! ([`SECRET`]): [`Communicator::from_env`]. Rank 0 hands the unique id only to ranks that
//! prove they know the secret, and proves it too, within one deadline.
//! `docs/collectives.md` has the recipes and the threat model.
//!
//! Every call checks what it can before NCCL sees it: lengths (all-gather's receive buffer is
//! the send length times the ranks, reduce-scatter's send buffer the receive length times the
//! ranks), roots and peers, the memory's and the stream's device against the communicator's,
//! and for the communicators of [`Communicator::init_all`] every rank's call against the
//! others'. Collectives are queued on the stream given and ordered with the buffers' own
//! streams as kernel launches are. A [`group`] records its calls, borrowing everything they
//! use until it ends, and makes them only once all of them passed: a refusal queues nothing.
//! A call NCCL answers with `ncclInProgress` (a non-blocking communicator, by config or
//! [`COMM_BLOCKING`]) is waited for until NCCL has queued it, before any stream is ordered
//! after it. Failures are typed, inside [`cuda_safe::Error::Library`]: [`NcclError::Call`],
//! [`NcclError::Async`] (polled), and [`NcclError::Timeout`] from
//! [`Communicator::wait_with_timeout`], which aborts a communicator whose peer is gone.
//!
//! NCCL's own defaults hold: the crate sets none of NCCL's variables, and a [`Launcher`]'s
//! ranks inherit the parent's environment (`NCCL_*` included), so a job tunes NCCL the way
//! NCCL documents, by environment or by [`CommConfig`].

#![cfg_attr(docsrs, feature(doc_cfg))]

// Three rooms above the loader: the binding (which names neither of the others), the
// unique-id exchange of a job's ranks, and the launcher that starts them.
mod binding;
mod bootstrap;
mod error;
mod launcher;
mod library;

pub use binding::in_group;
pub use binding::{
    COMM_BLOCKING, CollectiveSource, CollectiveTarget, CommConfig, Communicator, Group, NcclType,
    ReduceOp, Registered, UniqueId, View, group,
};
pub use bootstrap::{
    JobSecret, LISTEN_FD, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, MAX_WORLD_SIZE, RANK, RankEnv,
    SECRET, WORLD_SIZE,
};
pub use error::NcclError;
pub use launcher::Launcher;
#[allow(deprecated)]
pub use launcher::free_port;
#[allow(deprecated)]
pub use launcher::{NVLS_ENABLE, disable_nvls_in_process, nvls_disabled};
pub use library::{MIN_NCCL_VERSION, version};

pub use nccl_sys::NcclVersion;
