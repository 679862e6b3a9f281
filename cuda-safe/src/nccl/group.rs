//! Group calls (`ncclGroupStart`/`ncclGroupEnd`) as a scope that cannot be left open, and the
//! stream ordering that has to wait for the group's end.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

use super::clique::Clique;
use super::library::library;
use crate::error::{Error, Result, nccl};
use crate::handle::log_drop_error;
use crate::ordering::wait_for;
use crate::stream::Stream;

/// What a group owes when it ends: the collectives queued inside it reach their streams only
/// at `ncclGroupEnd`, so the streams of their foreign buffers are ordered after them then.
#[derive(Default)]
struct GroupState {
    depth: u32,
    /// (collective stream, streams whose later work must wait for it).
    ordering: Vec<(Stream, Vec<Stream>)>,
    /// The cliques whose ranks called inside the group.
    cliques: Vec<Arc<Clique>>,
}

thread_local! {
    static STATE: RefCell<GroupState> = RefCell::new(GroupState::default());
}

/// Whether the calling thread is inside a group.
pub(crate) fn in_group() -> bool {
    STATE.with(|state| state.borrow().depth > 0)
}

/// Orders `waiters` after `stream` at the end of the current group.
pub(crate) fn defer_ordering(stream: &Stream, waiters: Vec<Stream>) {
    STATE.with(|state| state.borrow_mut().ordering.push((stream.clone(), waiters)));
}

/// Resets `clique`'s call log at the end of the current group.
pub(crate) fn note_clique(clique: &Arc<Clique>) {
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        if !state.cliques.iter().any(|known| Arc::ptr_eq(known, clique)) {
            state.cliques.push(clique.clone());
        }
    });
}

/// An open group: NCCL calls made on this thread until it ends are fused into one operation,
/// which starts at the end. It ends on [`end`](Self::end) (which returns the error) or on drop
/// (which logs it), so a group cannot be left open. Groups nest; NCCL starts the work when
/// the outermost ends. It belongs to the thread that started it.
///
/// [`group`] is the closure form.
#[derive(Debug)]
#[must_use = "the group ends when dropped"]
pub struct Group {
    ended: bool,
    _thread: PhantomData<*const ()>,
}

impl Group {
    /// Starts a group.
    ///
    /// # Errors
    ///
    /// NCCL's error, or [`Error::Load`] when NCCL cannot be loaded.
    #[doc(alias = "ncclGroupStart")]
    pub fn start() -> Result<Self> {
        let nccl = library()?;
        // SAFETY: no arguments; the matching ncclGroupEnd is made by this guard.
        unsafe { nccl!(nccl, ncclGroupStart())? };
        STATE.with(|state| state.borrow_mut().depth += 1);
        Ok(Self {
            ended: false,
            _thread: PhantomData,
        })
    }

    /// Ends the group: NCCL launches the fused work on its streams (when this is the
    /// outermost group), and the streams of foreign buffers are ordered after it.
    ///
    /// # Errors
    ///
    /// NCCL's error (the work may then be partly queued); [`Error::LaunchOrdering`] when
    /// ordering the buffers' streams failed (the collectives' streams were drained first).
    #[doc(alias = "ncclGroupEnd")]
    pub fn end(mut self) -> Result<()> {
        self.ended = true;
        finish()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.ended
            && let Err(error) = finish()
        {
            log_drop_error("NCCL group", &error);
        }
    }
}

/// `ncclGroupEnd`, then what the outermost group owes.
fn finish() -> Result<()> {
    let ended = library().and_then(|nccl| {
        // SAFETY: a group is open on this thread (the guard started it).
        unsafe { nccl!(nccl, ncclGroupEnd()) }
    });
    let ordering = STATE.with(|state| {
        let mut state = state.borrow_mut();
        state.depth = state.depth.saturating_sub(1);
        if state.depth > 0 {
            return Vec::new();
        }
        // Drained in place, so the list keeps its room: a group of all-GPU ranks allocates
        // nothing here once warm (taking the vector would allocate again every group).
        state.cliques.drain(..).for_each(|clique| clique.reset());
        std::mem::take(&mut state.ordering)
    });
    // Ordered even when the end failed: waiting on work that was never queued costs nothing.
    let ordered = ordering.iter().try_for_each(|(stream, waiters)| {
        waiters
            .iter()
            .try_for_each(|waiter| wait_for(waiter, stream))
    });
    if let Err(error) = ordered {
        for (stream, _) in &ordering {
            stream.drain()?;
        }
        return Err(Error::LaunchOrdering {
            source: Box::new(error),
        });
    }
    ended
}

/// Runs `calls` inside a group: the NCCL calls it makes on this thread are fused and start
/// when it returns. How one thread drives the communicators of several GPUs (each call would
/// otherwise wait for the other ranks).
///
/// ```no_run
/// use cuda_safe::Device;
/// use cuda_safe::nccl::{self, Communicator, ReduceOp};
///
/// let devices = Device::all()?;
/// let comms = Communicator::init_all(&devices)?;
/// let streams = devices
///     .iter()
///     .map(|device| device.create_stream(Default::default()))
///     .collect::<cuda_safe::Result<Vec<_>>>()?;
/// let mut buffers = devices
///     .iter()
///     .zip(&streams)
///     .map(|(device, stream)| device.default_memory_resource()?.allocate_from_host(&[1.0f32; 256], stream))
///     .collect::<cuda_safe::Result<Vec<_>>>()?;
/// nccl::group(|| {
///     for ((comm, buffer), stream) in comms.iter().zip(&mut buffers).zip(&streams) {
///         comm.all_reduce_in_place::<f32>(buffer, ReduceOp::Sum, stream)?;
///     }
///     Ok(())
/// })?;
/// assert_eq!(buffers[0].to_vec::<f32>()?[0], devices.len() as f32);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
/// # Errors
///
/// The first error of `calls`, or else the group's end's ([`Group::end`]). The group ends
/// either way.
pub fn group<R>(calls: impl FnOnce() -> Result<R>) -> Result<R> {
    let group = Group::start()?;
    let result = calls();
    let ended = group.end();
    let value = result?;
    ended.map(|()| value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::clique::Call;

    #[test]
    fn a_group_end_resets_its_cliques_and_keeps_the_room() {
        let clique = Arc::new(Clique::new(2));
        let call = Call {
            kind: "all-reduce",
            count: 4,
            data_type: 7,
            op: Some(0),
            root: None,
        };
        clique.check(0, call).unwrap();
        STATE.with(|state| state.borrow_mut().depth = 1);
        note_clique(&clique);
        // Without NCCL the end itself fails here; what the group owes is settled anyway.
        let _ = finish();
        assert!(!in_group());
        // Reset: rank 1 starts level with rank 0 again, so another count is no mismatch.
        clique.check(1, Call { count: 8, ..call }).unwrap();
        STATE.with(|state| {
            let state = state.borrow();
            assert!(state.cliques.is_empty() && state.cliques.capacity() > 0);
        });
    }
}
