//! The calling thread's group state: whether it is inside [`group`](super::group::group)'s
//! closure (where the direct collectives are refused), and NCCL's own group around crate code.

use std::cell::Cell;

use crate::error::{nccl, nccl_queued};
use cuda_safe::{Error, Result};
use nccl_sys::Nccl;

thread_local! {
    /// Whether this thread is inside [`group`](super::group::group)'s closure.
    static OPEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is inside a [`group`](super::group::group)'s closure.
pub fn in_group() -> bool {
    OPEN.with(Cell::get)
}

/// Refuses `Communicator::{method}` inside a group, where the call would run before the
/// group's recorded calls (and, with several ranks on this thread, wait for ranks whose calls
/// are only recorded): the [`Group`](super::group::Group) method of the same name records it instead.
#[inline]
pub(crate) fn refuse_in_group(method: &str) -> Result<()> {
    if in_group() {
        return Err(refused_in_group(method));
    }
    Ok(())
}

#[cold]
fn refused_in_group(method: &str) -> Error {
    Error::invalid_argument(format!(
        "Communicator::{method} inside nccl::group: record it with Group::{method} on the \
         group's Group, so that it is made with the group's other calls"
    ))
}

/// Runs `calls` (crate code only: no caller's code may run while an NCCL group is open)
/// between `ncclGroupStart` and `ncclGroupEnd`. `ncclGroupEnd` is called whatever `calls`
/// returned. `Ok(true)` when NCCL answered `ncclInProgress` (a non-blocking communicator's
/// work is still being queued; poll it).
pub(crate) fn nccl_group(
    nccl: &'static Nccl,
    calls: impl FnOnce() -> Result<bool>,
) -> Result<bool> {
    // SAFETY: no arguments; the matching ncclGroupEnd follows below on this thread.
    unsafe { nccl!(nccl, ncclGroupStart())? };
    let called = calls();
    // SAFETY: the group started above is open on this thread.
    let ended = unsafe { nccl_queued!(nccl, ncclGroupEnd()) };
    let in_progress = called?;
    Ok(ended? || in_progress)
}

/// This thread's group while its closure runs: reset on every way out, a panic included.
pub(super) struct Open;

impl Open {
    pub(super) fn enter() -> Result<Self> {
        if OPEN.with(|open| open.replace(true)) {
            return Err(Error::invalid_argument(
                "nccl::group inside another group: record the calls on the outer group's Group",
            ));
        }
        Ok(Self)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        OPEN.with(|open| open.set(false));
    }
}
