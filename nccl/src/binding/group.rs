//! Group calls as a scope: [`group`] hands its closure a [`Group`], which records the calls
//! (each checked as it comes) and, once the closure returned `Ok` and the group as a whole
//! passed its checks, makes them all between one `ncclGroupStart` and `ncclGroupEnd`, then
//! orders the memory's own streams after them. A refusal therefore queues nothing, and no
//! NCCL group is ever open while the caller's code runs.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;

use super::clique::{check_complete, check_in_group};
use super::collective::Prepared;
use super::state::{Open, nccl_group};
use cuda_safe::{Error, Result};

thread_local! {
    /// The room of the last group's list of calls, kept so that a group allocates nothing
    /// once warm. Always empty.
    static ROOM: Cell<Vec<Prepared<'static>>> = const { Cell::new(Vec::new()) };
}

/// The calls of one [`group`], recorded: each collective method checks its arguments
/// (lengths, devices, roots, and for the ranks of [`Communicator::init_all`](crate::Communicator::init_all) the call against
/// the other ranks' at the same place in the group) and records the call; NCCL sees none of
/// them before the closure returned `Ok`.
///
/// Everything a recorded call uses is borrowed for `'env`, which outlives the whole
/// [`group`] call: the communicator, the memory it reads (shared) and writes (exclusively),
/// and the stream. So nothing a grouped call uses can be dropped, moved, written or aborted
/// through its owner before NCCL has queued the call and the memory's streams are ordered
/// after it. A buffer made inside the closure cannot be borrowed that long:
///
/// ```compile_fail,E0597
/// use cuda_safe::Device;
/// use cuda_safe_nccl::{self as nccl, Communicator, ReduceOp};
///
/// let device = Device::new(0)?;
/// let comms = Communicator::init_all(&[device])?;
/// let stream = device.create_stream(Default::default())?;
/// nccl::group(|group| {
///     let mut local = device.default_memory_resource()?.allocate(64, &stream)?;
///     // `local` would be freed at the end of the closure, before NCCL used it: refused.
///     group.all_reduce_in_place::<f32>(&comms[0], &mut local, ReduceOp::Sum, &stream)
/// })?;
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
/// Nor can a communicator or memory a call was recorded on be dropped or written before the
/// group ends:
///
/// ```compile_fail,E0505
/// use cuda_safe::Device;
/// use cuda_safe_nccl::{self as nccl, Communicator, ReduceOp};
///
/// let device = Device::new(0)?;
/// let mut comms = Communicator::init_all(&[device])?;
/// let stream = device.create_stream(Default::default())?;
/// let mut buffer = device.default_memory_resource()?.allocate(64, &stream)?;
/// let comm = comms.remove(0);
/// nccl::group(|group| {
///     group.all_reduce_in_place::<f32>(&comm, &mut buffer, ReduceOp::Sum, &stream)?;
///     // Destroying the communicator before the group's end: refused.
///     drop(comm);
///     Ok(())
/// })?;
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
/// ```compile_fail,E0502
/// use cuda_safe::Device;
/// use cuda_safe_nccl::{self as nccl, Communicator, ReduceOp};
///
/// let device = Device::new(0)?;
/// let comms = Communicator::init_all(&[device])?;
/// let stream = device.create_stream(Default::default())?;
/// let pool = device.default_memory_resource()?;
/// let mut send = pool.allocate(64, &stream)?;
/// let mut recv = pool.allocate(64, &stream)?;
/// nccl::group(|group| {
///     group.all_reduce::<f32>(&comms[0], &send, &mut recv, ReduceOp::Sum, &stream)?;
///     // Writing what the all-reduce will read: refused.
///     send.fill(0f32)
/// })?;
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
/// It belongs to the thread running the group (neither `Send` nor `Sync`). The list of calls
/// is a vector whose room is kept in a thread-local between groups: a group allocates nothing
/// once a first group of as many calls has run on the thread.
pub struct Group<'env> {
    /// Invariant in `'env` (a `RefCell`'s contents are), so a `Group<'env>` cannot pass for
    /// one of a shorter lifetime that a local of the closure would satisfy.
    calls: RefCell<Vec<Prepared<'env>>>,
    _thread: PhantomData<*const ()>,
}

impl std::fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("calls", &self.calls.borrow().len())
            .finish()
    }
}

impl<'env> Group<'env> {
    /// Records `call` after checking it against the calls of its clique's other ranks.
    pub(super) fn record(&self, call: Prepared<'env>) -> Result<()> {
        let mut calls = self.calls.borrow_mut();
        if let Some(next) = call.in_group() {
            check_in_group(calls.iter().filter_map(Prepared::in_group), next)?;
        }
        calls.push(call);
        Ok(())
    }
}

/// Runs `calls` with a [`Group`] that records the NCCL calls it is given, then (when `calls`
/// returned `Ok`) makes them all as one NCCL group: how one thread drives the communicators of
/// several GPUs (each call alone would wait for the other ranks), and how sends and receives
/// that must progress together are made.
///
/// The recorded calls are checked as they come and once more together (every rank of an
/// all-GPU clique with calls in the group made as many, the same), and only then does NCCL see
/// them: `ncclGroupStart`, every call, `ncclGroupEnd`; then the streams of memory on other
/// streams are ordered after the calls, as a launch's are. When `calls` returns an error, or
/// a check fails, nothing is queued. On a non-blocking communicator the group is waited for
/// until NCCL has queued it.
///
/// Inside `calls`, the [`Communicator`](crate::Communicator) methods that would run before the recorded calls or
/// wait for them (the collectives, [`split`](crate::Communicator::split),
/// [`split_all`](crate::Communicator::split_all),
/// [`wait_with_timeout`](crate::Communicator::wait_with_timeout)) and a nested `group` are refused
/// with [`Error::InvalidArgument`]. No NCCL group is open while `calls` runs, so dropping,
/// closing or aborting a communicator the group does not borrow acts at once, as outside.
///
/// ```no_run
/// use cuda_safe::Device;
/// use cuda_safe_nccl::{self as nccl, Communicator, ReduceOp};
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
/// nccl::group(|group| {
///     for ((comm, buffer), stream) in comms.iter().zip(&mut buffers).zip(&streams) {
///         group.all_reduce_in_place::<f32>(comm, buffer, ReduceOp::Sum, stream)?;
///     }
///     Ok(())
/// })?;
/// assert_eq!(buffers[0].to_vec::<f32>()?[0], devices.len() as f32);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
#[doc = nccl_sys::api_doc!(ncclGroupStart)]
#[doc = nccl_sys::api_doc!(ncclGroupEnd)]
/// # Errors
///
/// The error of `calls` (nothing queued); [`Error::InvalidArgument`] inside another group, or
/// when an all-GPU clique's ranks made different numbers of calls, or a recorded
/// communicator was aborted meanwhile (nothing queued); NCCL's error from a call or the
/// group's end; as [`Communicator::wait_with_timeout`](crate::Communicator::wait_with_timeout) while a non-blocking communicator
/// queues the group; [`Error::LaunchOrdering`] when ordering the memory's streams failed (the
/// calls' streams were drained first).
#[doc(alias = "ncclGroupStart")]
#[doc(alias = "ncclGroupEnd")]
pub fn group<'env, R>(calls: impl FnOnce(&Group<'env>) -> Result<R>) -> Result<R> {
    let open = Open::enter()?;
    let group = Group {
        calls: RefCell::new(ROOM.with(Cell::take)),
        _thread: PhantomData,
    };
    let value = calls(&group);
    drop(open);
    let recorded = group.calls.into_inner();
    let ended = match value {
        Ok(_) => end(&recorded),
        Err(_) => Ok(()),
    };
    ROOM.with(|room| room.set(recycle(recorded)));
    let value = value?;
    ended.map(|()| value)
}

/// Makes the recorded `calls`: the checks of the whole group first, so a refusal queues
/// nothing; then the one NCCL group, the wait for a non-blocking communicator, and the
/// ordering of the memory's streams.
fn end(calls: &[Prepared<'_>]) -> Result<()> {
    let Some(first) = calls.first() else {
        return Ok(());
    };
    check_complete(calls.iter().filter_map(Prepared::in_group))?;
    // A communicator aborted inside the closure (`async_error`) has no handle left: refused
    // here, before NCCL sees any call.
    for call in calls {
        call.comm.handle()?;
    }
    for call in calls {
        call.order_before()?;
    }
    let nccl = first.comm.inner().nccl;
    let made = nccl_group(nccl, || {
        calls.iter().try_fold(false, |in_progress, call| {
            Ok(call.call(call.comm.handle()?)? || in_progress)
        })
    });
    let settled = match made {
        // Every communicator, even after one failed: each may still be queueing.
        Ok(true) => calls
            .iter()
            .map(|call| call.comm.settle())
            .fold(Ok(()), Result::and),
        Ok(false) => Ok(()),
        Err(error) => Err(error),
    };
    // Ordered whatever happened: a refused call or group queued nothing (waiting on nothing
    // costs nothing), and a communicator whose wait failed was aborted, so NCCL queues nothing
    // more on its streams.
    if let Err(error) = calls.iter().try_for_each(Prepared::order_after) {
        for call in calls {
            call.stream.drain()?;
        }
        return Err(Error::LaunchOrdering {
            source: Box::new(error),
        });
    }
    settled
}

/// `calls`'s room, emptied, for the next group on this thread.
fn recycle(mut calls: Vec<Prepared<'_>>) -> Vec<Prepared<'static>> {
    calls.clear();
    let mut calls = ManuallyDrop::new(calls);
    let (pointer, room) = (calls.as_mut_ptr(), calls.capacity());
    // SAFETY: the allocation came from a `Vec` of `room` `Prepared`s, and `Prepared<'a>` has
    // the same layout for every `'a`; the vector is empty, so no value of the shorter
    // lifetime is in it, and the old vector is never dropped (ManuallyDrop).
    unsafe { Vec::from_raw_parts(pointer.cast::<Prepared<'static>>(), 0, room) }
}

#[cfg(test)]
mod tests {
    use super::super::state::{in_group, refuse_in_group};
    use super::*;

    #[test]
    fn a_failed_closure_queues_nothing_and_closes_the_group() {
        let failed = group(|_| -> Result<()> {
            assert!(in_group());
            Err(Error::invalid_argument("refused"))
        });
        assert!(matches!(failed, Err(Error::InvalidArgument(text)) if text == "refused"));
        assert!(!in_group());
        // An empty group touches no NCCL (there is none here) and returns the value.
        assert_eq!(group(|_| Ok(7)).unwrap(), 7);
    }

    #[test]
    fn groups_do_not_nest_and_direct_calls_are_refused_inside() {
        let outer = group(|_| {
            let inner = group(|_| Ok(())).unwrap_err();
            assert!(
                inner.to_string().contains("inside another group"),
                "{inner}"
            );
            let direct = refuse_in_group("all_reduce").unwrap_err();
            assert!(direct.to_string().contains("Group::all_reduce"), "{direct}");
            Ok(())
        });
        assert!(outer.is_ok());
        assert!(refuse_in_group("all_reduce").is_ok());
    }

    #[test]
    fn a_panicking_closure_leaves_no_group_open() {
        let caught = std::panic::catch_unwind(|| group(|_| -> Result<()> { panic!("inside") }));
        assert!(caught.is_err());
        assert!(!in_group());
    }

    #[test]
    fn the_room_is_kept_between_groups() {
        let room: Vec<Prepared<'_>> = Vec::with_capacity(8);
        let kept = recycle(room);
        assert!(kept.is_empty() && kept.capacity() >= 8);
        ROOM.with(|cell| cell.set(kept));
        group(|group| {
            assert!(group.calls.borrow().capacity() >= 8);
            Ok(())
        })
        .unwrap();
        ROOM.with(|cell| {
            let room = cell.take();
            assert!(room.is_empty() && room.capacity() >= 8);
        });
    }
}
