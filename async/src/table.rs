//! The waker table: one slot for each future the reactor watches, where the future leaves its
//! waker and the reactor leaves the outcome, and a free list that hands slots out again, so
//! that a completion allocates no slot once the table has grown to the number of futures in
//! flight.
//!
//! A slot is a small mutex around the waker, the outcome and what a dropped future left to
//! keep alive. Every step (the future storing its waker, the reactor completing, the future
//! dropped before resolving) takes the lock, checks the others' marks and leaves its own, so
//! that whichever comes second sees the first: a completion never misses the waker stored
//! before it, a poll never misses the outcome left before it, and of the future and the
//! reactor exactly one gives the slot back to the table. The loom model below checks these
//! orders exhaustively (`RUSTFLAGS="--cfg cuda_safe_loom"`, see `docs/async.md`); the test
//! beside it races them on real threads.
//!
//! No code of the user's runs under a slot's lock: a waker is cloned before the lock is taken
//! and a replaced one is dropped after it is released (as the reactor wakes outside it), so a
//! waker whose `clone`, `wake` or `drop` panics leaves every slot as consistent as it found it:
//! the outcome stays for the future's next look, the latest waker stored is the one woken.

use std::task::{Poll, Waker};

use crate::sync::{Arc, AtomicUsize, Mutex, Ordering, lock};
use cuda_safe::Result;

/// What a future dropped before resolving leaves for the reactor to drop once the GPU is done
/// with it: the values moved into it, its pinned staging memory.
pub(super) type Keep = Box<dyn Send>;

/// A shared slot, as the future and the reactor hold it.
pub(super) type SlotRef = Arc<Slot>;

/// At most this many idle slots are kept for reuse (about 2 MiB); the rest are freed.
const MAX_IDLE: usize = 16_384;

/// One watched future's meeting point with the reactor.
pub(super) struct Slot {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The waker of the future's last poll.
    waker: Option<Waker>,
    /// The reactor's verdict, until the future reads it.
    outcome: Option<Result<()>>,
    /// The future was dropped before it read an outcome: the reactor finishes the slot alone.
    detached: bool,
    /// What the dropped future left to keep alive until the GPU is done.
    keep: Option<Keep>,
}

/// What [`Slot::complete`] leaves to its caller, to act on outside the lock.
pub(super) enum Finish {
    /// The future is waiting: wake it (it reads the outcome and gives the slot back).
    Wake(Option<Waker>),
    /// The future was dropped: drop what it left, and give the slot back.
    Release(Option<Keep>),
}

/// What [`Slot::detach`] leaves to the dropped future.
pub(super) enum Detach {
    /// The reactor had completed the slot (with the outcome held): release what was to be
    /// kept now, and give the slot back.
    Done(Option<Keep>, Result<()>),
    /// The reactor will complete the slot, drop what was left and give the slot back.
    Left,
}

impl Slot {
    fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
        }
    }

    /// The first waker of a slot just taken from the table (empty: nothing is replaced), cloned
    /// by the caller outside every lock.
    pub(super) fn watch(&self, waker: Waker) {
        let replaced = lock(&self.state).waker.replace(waker);
        drop(replaced);
    }

    /// The future's poll: the outcome if the reactor left one (the slot is then the future's
    /// to give back), else `Pending` with `waker` kept for the reactor.
    ///
    /// `waker` is cloned, and the waker it replaces dropped, outside the lock: when either
    /// panics, the slot keeps the outcome, or a waker the reactor wakes (the one before, or
    /// the new one).
    pub(super) fn poll(&self, waker: &Waker) -> Poll<Result<()>> {
        if let Some(seen) = self.look(waker) {
            return seen;
        }
        let fresh = waker.clone();
        let mut state = lock(&self.state);
        if state.outcome.is_none() {
            let replaced = state.waker.replace(fresh);
            drop(state);
            drop(replaced);
            return Poll::Pending;
        }
        // Completed meanwhile: the outcome stays in the slot while the clone is dropped.
        drop(state);
        drop(fresh);
        self.look(waker).unwrap_or(Poll::Pending)
    }

    /// The outcome, if the reactor left one, or `Pending` when the kept waker wakes `waker`'s
    /// task already; `None` when `waker` must be stored.
    fn look(&self, waker: &Waker) -> Option<Poll<Result<()>>> {
        let mut state = lock(&self.state);
        if let Some(outcome) = state.outcome.take() {
            return Some(Poll::Ready(outcome));
        }
        state
            .waker
            .as_ref()
            .is_some_and(|kept| kept.will_wake(waker))
            .then_some(Poll::Pending)
    }

    /// The reactor's verdict on the slot's work. The reactor touches the slot no more after
    /// this (it only acts on the returned value).
    pub(super) fn complete(&self, outcome: Result<()>) -> Finish {
        let mut state = lock(&self.state);
        if state.detached {
            return Finish::Release(state.keep.take());
        }
        state.outcome = Some(outcome);
        Finish::Wake(state.waker.take())
    }

    /// The future is dropped before it read an outcome; `keep` is what must live until the GPU
    /// is done. The waker the slot held comes back with the answer, to be dropped by the
    /// caller outside the lock.
    pub(super) fn detach(&self, keep: Option<Keep>) -> (Detach, Option<Waker>) {
        let mut state = lock(&self.state);
        let waker = state.waker.take();
        if let Some(outcome) = state.outcome.take() {
            return (Detach::Done(keep, outcome), waker);
        }
        state.detached = true;
        state.keep = keep;
        (Detach::Left, waker)
    }

    /// Empties the slot for its next future; what it held is dropped outside the lock.
    fn reset(&self) {
        let old = std::mem::take(&mut *lock(&self.state));
        drop(old);
    }
}

/// The slots: handed out to futures that wait, given back once their outcome is read.
pub(super) struct Table {
    free: Mutex<Vec<Arc<Slot>>>,
    /// Slots made so far (the table's size: idle ones plus those in use).
    made: AtomicUsize,
}

impl Table {
    /// An empty table.
    pub(super) fn new() -> Self {
        Self {
            free: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
        }
    }

    /// An empty slot: an idle one, or a new one while the table grows.
    pub(super) fn take(&self) -> SlotRef {
        if let Some(slot) = lock(&self.free).pop() {
            return slot;
        }
        self.made.fetch_add(1, Ordering::Relaxed);
        Arc::new(Slot::new())
    }

    /// Gives a slot back, by whichever of the future and the reactor finished it.
    pub(super) fn give(&self, slot: SlotRef) {
        slot.reset();
        let mut free = lock(&self.free);
        if free.len() < MAX_IDLE {
            free.push(slot);
        } else {
            drop(free);
            self.made.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Frees the idle slots (the reactor thread ends).
    pub(super) fn trim(&self) {
        let idle = std::mem::take(&mut *lock(&self.free));
        self.made.fetch_sub(idle.len(), Ordering::Relaxed);
    }

    /// Slots that exist now, and how many of them are idle.
    pub(super) fn sizes(&self) -> (usize, usize) {
        let idle = lock(&self.free).len();
        (self.made.load(Ordering::Relaxed), idle)
    }
}

#[cfg(all(test, not(cuda_safe_loom)))]
mod unwinding;

#[cfg(all(test, not(cuda_safe_loom)))]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    use std::task::Wake;
    use std::thread;
    use std::time::{Duration, Instant};

    use super::{Arc, Detach, Finish, Keep, Ordering, Poll, Slot, Table, Waker};
    use cuda_safe::Error;

    /// A waker that raises a flag and unparks the thread that made it.
    struct Flag {
        raised: AtomicBool,
        thread: thread::Thread,
    }

    impl Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.raised.store(true, Ordering::SeqCst);
            self.thread.unpark();
        }
    }

    fn flag() -> (std::sync::Arc<Flag>, Waker) {
        let flag = std::sync::Arc::new(Flag {
            raised: AtomicBool::new(false),
            thread: thread::current(),
        });
        (flag.clone(), Waker::from(flag))
    }

    /// Registration (a poll storing its waker) raced against completion on another thread, a
    /// hundred thousand times: every future is woken or sees the outcome at once, and every
    /// slot goes back to the table.
    #[test]
    fn registrations_racing_completions_lose_no_wake_up() {
        const ROUNDS: usize = 100_000;
        let table = std::sync::Arc::new(Table::new());
        let (to_reactor, slots) = mpsc::channel::<(Arc<Slot>, usize)>();
        let reactor = thread::spawn(move || {
            for (slot, round) in slots {
                // Let the poll and the completion land in either order.
                if round % 3 == 0 {
                    thread::yield_now();
                }
                match slot.complete(Ok(())) {
                    Finish::Wake(waker) => waker.into_iter().for_each(Waker::wake),
                    Finish::Release(_) => panic!("no future was dropped"),
                }
            }
        });
        let mut woken_late = 0;
        for round in 0..ROUNDS {
            let slot = table.take();
            let (flag, waker) = flag();
            to_reactor.send((slot.clone(), round)).unwrap();
            if round % 2 == 0 {
                thread::yield_now();
            }
            if slot.poll(&waker).is_pending() {
                woken_late += 1;
                let start = Instant::now();
                while !flag.raised.load(Ordering::SeqCst) {
                    assert!(
                        start.elapsed() < Duration::from_secs(10),
                        "round {round}: the completion never woke the future"
                    );
                    thread::park_timeout(Duration::from_millis(10));
                }
                assert!(matches!(slot.poll(&waker), Poll::Ready(Ok(()))));
            }
            table.give(slot);
        }
        drop(to_reactor);
        reactor.join().unwrap();
        let (made, idle) = table.sizes();
        assert_eq!(made, idle, "every slot came back");
        assert!(made <= 4, "slots were reused ({made} made)");
        println!("{woken_late} of {ROUNDS} futures waited for their wake");
    }

    /// A future dropped while the reactor completes it: exactly one of the two gives the slot
    /// back, and what the future left is dropped exactly once, after the completion.
    #[test]
    fn drops_racing_completions_release_exactly_once() {
        let table = Table::new();
        for round in 0..20_000 {
            let slot = table.take();
            let kept = std::sync::Arc::new(());
            let keep: Keep = Box::new(kept.clone());
            let reactor = {
                let slot = slot.clone();
                thread::spawn(move || slot.complete(Ok(())))
            };
            if round % 2 == 0 {
                thread::yield_now();
            }
            let (detached, _) = slot.detach(Some(keep));
            let finished = reactor.join().unwrap();
            let gives = match (detached, finished) {
                (Detach::Done(keep, outcome), Finish::Wake(None)) => {
                    assert!(outcome.is_ok());
                    drop(keep);
                    1
                }
                (Detach::Left, Finish::Release(keep)) => {
                    assert!(keep.is_some(), "the reactor drops what was kept");
                    drop(keep);
                    1
                }
                (Detach::Done(..), Finish::Release(_)) => 2,
                (Detach::Left, Finish::Wake(_)) => 0,
                (Detach::Done(..), Finish::Wake(Some(_))) => panic!("a dropped future was woken"),
            };
            assert_eq!(
                gives, 1,
                "round {round}: the slot was given back {gives} times"
            );
            assert_eq!(
                std::sync::Arc::strong_count(&kept),
                1,
                "kept until dropped once"
            );
            table.give(slot);
        }
    }

    #[test]
    fn a_slot_is_at_most_128_bytes_with_its_reference_counts() {
        let size = size_of::<Slot>() + 2 * size_of::<usize>();
        assert!(size <= 128, "a slot takes {size} bytes");
    }

    #[test]
    fn a_later_poll_replaces_the_waker_and_errors_reach_the_future() {
        let table = Table::new();
        let slot = table.take();
        let (first, first_waker) = flag();
        let (second, second_waker) = flag();
        assert!(slot.poll(&first_waker).is_pending());
        assert!(slot.poll(&second_waker).is_pending());
        match slot.complete(Err(Error::invalid_argument("a fault"))) {
            Finish::Wake(Some(waker)) => waker.wake(),
            _ => panic!("the waiting future is woken"),
        }
        assert!(
            !first.raised.load(Ordering::SeqCst),
            "the stale waker is not woken"
        );
        assert!(second.raised.load(Ordering::SeqCst));
        assert!(matches!(
            slot.poll(&second_waker),
            Poll::Ready(Err(Error::InvalidArgument(_)))
        ));
        table.give(slot);
        let again = table.take();
        let (_, waker) = flag();
        assert!(
            again.poll(&waker).is_pending(),
            "a given-back slot is empty"
        );
        assert_eq!(table.sizes(), (1, 0));
    }
}

/// The loom model of the table: `RUSTFLAGS="--cfg cuda_safe_loom" cargo test -p
/// cuda-safe-async --lib --release` (in a target directory of its own; `docs/async.md`).
#[cfg(all(test, cuda_safe_loom))]
mod loom_model {
    use std::task::Wake;

    use super::{Arc, Detach, Finish, Ordering, Poll, Slot, Table, Waker};
    use loom::sync::atomic::AtomicBool;

    /// A waker raising a flag the model checks.
    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn flag() -> (std::sync::Arc<Flag>, Waker) {
        let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
        (flag.clone(), Waker::from(flag))
    }

    #[test]
    fn a_registration_racing_a_completion_is_never_lost() {
        loom::model(|| {
            let slot = Arc::new(Slot::new());
            let (flag, waker) = flag();
            let reactor = {
                let slot = slot.clone();
                loom::thread::spawn(move || match slot.complete(Ok(())) {
                    Finish::Wake(waker) => waker.into_iter().for_each(Waker::wake),
                    Finish::Release(_) => panic!("nothing was dropped"),
                })
            };
            let first = slot.poll(&waker);
            reactor.join().unwrap();
            if first.is_pending() {
                assert!(flag.0.load(Ordering::SeqCst), "the stored waker was woken");
                assert!(matches!(slot.poll(&waker), Poll::Ready(Ok(()))));
            }
        });
    }

    #[test]
    fn a_drop_racing_a_completion_gives_the_slot_back_once() {
        loom::model(|| {
            let table = Arc::new(Table::new());
            let slot = table.take();
            let kept = std::sync::Arc::new(());
            let (woken, waker) = flag();
            assert!(slot.poll(&waker).is_pending());
            drop(waker);
            let reactor = {
                let (slot, table) = (slot.clone(), table.clone());
                loom::thread::spawn(move || match slot.complete(Ok(())) {
                    Finish::Release(keep) => {
                        assert!(keep.is_some());
                        table.give(slot);
                        true
                    }
                    Finish::Wake(waker) => {
                        waker.into_iter().for_each(Waker::wake);
                        false
                    }
                })
            };
            let (detached, stale) = slot.detach(Some(Box::new(kept.clone())));
            let future_gives = match detached {
                Detach::Done(keep, _) => {
                    drop(keep);
                    table.give(slot);
                    true
                }
                Detach::Left => false,
            };
            let reactor_gives = reactor.join().unwrap();
            assert!(
                future_gives != reactor_gives,
                "exactly one gives the slot back"
            );
            // The waker comes back to whichever side took it, to drop outside the lock: to
            // the dropped future, or woken by the reactor before the future was dropped.
            assert!(
                stale.is_some() != woken.0.load(Ordering::SeqCst),
                "the waker was handed out once"
            );
            assert_eq!(std::sync::Arc::strong_count(&kept), 1);
            assert_eq!(table.sizes(), (1, 1));
        });
    }

    /// A later poll with another waker clones it outside the lock, so a completion can come
    /// between the poll's look and its store: the outcome stays in the slot for the poll's
    /// second look, or the completion finds the new waker, and never neither.
    #[test]
    fn a_completion_between_a_poll_s_look_and_store_is_never_lost() {
        loom::model(|| {
            let slot = Arc::new(Slot::new());
            let (first, first_waker) = flag();
            let (second, second_waker) = flag();
            assert!(slot.poll(&first_waker).is_pending());
            let reactor = {
                let slot = slot.clone();
                loom::thread::spawn(move || match slot.complete(Ok(())) {
                    Finish::Wake(waker) => waker.into_iter().for_each(Waker::wake),
                    Finish::Release(_) => panic!("nothing was dropped"),
                })
            };
            let again = slot.poll(&second_waker);
            reactor.join().unwrap();
            let woken = (
                first.0.load(Ordering::SeqCst),
                second.0.load(Ordering::SeqCst),
            );
            match again {
                Poll::Ready(outcome) => {
                    assert!(outcome.is_ok());
                    assert!(!woken.1, "a waker stored after the outcome");
                }
                Poll::Pending => {
                    assert_eq!(woken, (false, true), "the new waker is the one woken");
                    assert!(matches!(slot.poll(&second_waker), Poll::Ready(Ok(()))));
                }
            }
        });
    }
}
