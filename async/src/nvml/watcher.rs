//! The watcher thread of an [`NvmlEventStream`](super::NvmlEventStream) and the queue it
//! shares with the consumer.
//!
//! The thread owns the event set. It blocks in `nvmlEventSetWait` for at most the wait timeout
//! at a time (NVML has no way to interrupt a wait but a signal, which a library must not
//! install a handler for), hands each event to the queue and wakes the consumer, and looks at
//! the stop flag each time the wait returns. A full queue holds the thread (on a condition
//! variable, not in NVML) until the consumer takes an event, so no event is dropped; the
//! events wait in NVML's own queue meanwhile. An error from NVML is delivered as the last item.
//! When the consumer is gone (dropped, or closing), the thread frees the set at its next wake
//! and ends; the consumer never waits for that unless it asked to ([`close`]).
//!
//! Every waker runs outside the queue's lock and under `catch_unwind` on this thread: a
//! panicking waker is logged and cannot stop the thread or leave the queue locked.
//!
//! [`close`]: super::NvmlEventStream::close

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
use std::time::Duration;

use cuda_safe::Result;
use cuda_safe::system::{Event, EventSet};

/// What the watcher and the consumer share.
#[derive(Debug, Default)]
pub(super) struct Shared {
    state: Mutex<State>,
    /// Signalled when the consumer takes an event or stops: the watcher waits here while the
    /// queue is full.
    room: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Delivered and not taken yet, oldest first.
    queue: VecDeque<Result<Event>>,
    /// The consumer's waker, taken by the next delivery.
    waker: Option<Waker>,
    /// The consumer is gone or closing: deliver nothing more, free the set, end.
    stopping: bool,
    /// The watcher delivers nothing more (it stopped, or NVML failed).
    ended: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock (wakers run outside it), so a poisoned one
        // is consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next event, the end, or `Pending` with `waker` stored for the next delivery. The
    /// waker is cloned outside the lock (user code never runs under it) and only when the one
    /// stored would not wake the same task.
    pub(super) fn poll_next(&self, waker: &Waker) -> Poll<Option<Result<Event>>> {
        let mut fresh: Option<Waker> = None;
        loop {
            let mut state = self.lock();
            if let Some(item) = state.queue.pop_front() {
                drop(state);
                self.room.notify_one();
                return Poll::Ready(Some(item));
            }
            if state.ended {
                return Poll::Ready(None);
            }
            if state
                .waker
                .as_ref()
                .is_some_and(|kept| kept.will_wake(waker))
            {
                return Poll::Pending;
            }
            match fresh.take() {
                Some(fresh) => {
                    let old = state.waker.replace(fresh);
                    drop(state);
                    drop(old);
                    return Poll::Pending;
                }
                None => {
                    drop(state);
                    fresh = Some(waker.clone());
                }
            }
        }
    }

    /// Tells the watcher to stop: it frees the set at its next wake. Returns the consumer's
    /// stored waker, for the caller to drop outside the lock.
    pub(super) fn stop(&self) -> Option<Waker> {
        let waker = {
            let mut state = self.lock();
            state.stopping = true;
            state.waker.take()
        };
        self.room.notify_all();
        waker
    }

    /// Queues `item` once there is room; `false` (and nothing queued) when the consumer is
    /// gone.
    fn deliver(&self, item: Result<Event>, capacity: usize) -> bool {
        let mut state = self.lock();
        while state.queue.len() >= capacity && !state.stopping {
            state = self
                .room
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.stopping {
            return false;
        }
        state.queue.push_back(item);
        let waker = state.waker.take();
        drop(state);
        wake(waker);
        true
    }

    /// Marks the end (nothing more comes) and wakes the consumer to see it.
    fn end(&self) {
        let waker = {
            let mut state = self.lock();
            state.ended = true;
            state.waker.take()
        };
        wake(waker);
    }

    fn stopping(&self) -> bool {
        self.lock().stopping
    }
}

/// Wakes `waker`, if any, catching (and logging) a panic in the user's `wake`. The panic's
/// payload is forgotten, not dropped: its own `Drop` may panic too.
fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker
        && let Err(payload) = catch_unwind(AssertUnwindSafe(|| waker.wake()))
    {
        std::mem::forget(payload);
        log::error!("an NVML event stream's waker panicked in `wake`; the watcher goes on");
    }
}

/// Marks the end of `Shared` when dropped: the consumer learns that nothing more comes however
/// the watcher's loop leaves.
struct EndOnDrop<'a>(&'a Shared);

impl Drop for EndOnDrop<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The watcher thread's body: waits on `set` (at most `timeout` per call) and delivers what
/// comes until the consumer stops or NVML fails; then frees the set, returning the free's
/// result.
pub(super) fn watch(
    mut set: EventSet,
    shared: &Shared,
    timeout: Duration,
    capacity: usize,
) -> Result<()> {
    let end = EndOnDrop(shared);
    while !shared.stopping() {
        let item = match set.wait(timeout) {
            Ok(None) => continue,
            Ok(Some(event)) => Ok(event),
            Err(error) => Err(error),
        };
        let failed = item.is_err();
        if !shared.deliver(item, capacity) || failed {
            break;
        }
    }
    drop(end);
    set.close()
}
