//! The binding of NCCL's API: communicators (created, split, aborted, waited for), the
//! collectives on `cuda-safe`'s buffers and streams, groups, and buffer registration.

mod clique;
mod collective;
mod comm;
mod config;
mod group;
mod id;
mod register;
mod set;
mod state;
mod types;
mod wait;

pub use collective::{CollectiveSource, CollectiveTarget, View};
pub use comm::{COMM_BLOCKING, Communicator};
pub use config::CommConfig;
pub use group::{Group, group};
pub use id::UniqueId;
pub use register::Registered;
pub use state::in_group;
pub use types::{NcclType, ReduceOp};
