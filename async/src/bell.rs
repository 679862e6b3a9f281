//! The bell the reactor thread sleeps on: rung by a registration, by a driver callback when
//! watched work finishes, and by the last handle going. A ring costs one atomic operation
//! unless the reactor sleeps, when it also unparks it; a ring while the reactor is awake is
//! never lost (the reactor looks at the bell again before it sleeps).
//!
//! Both sides change one word with read-modify-writes, which the word's modification order
//! puts one before the other: the ringer sets `RUNG` and reads whether `SLEEPING` was set; the
//! reactor sets `SLEEPING` and reads whether `RUNG` was. Whichever comes second sees the
//! first: either the reactor sees the ring and does not sleep, or the ringer sees it asleep and
//! unparks it (an unpark before the park makes the park return at once). The loom model below
//! checks it. (A pair of flags, each stored and the other loaded, needs sequential consistency
//! for the same argument, which loom reports as a deadlock it cannot rule out.)

use std::time::Duration;

use crate::sync::{AtomicUsize, Mutex, Ordering, Thread, current, lock, park};

/// The bell was rung since the waiter last looked.
const RUNG: usize = 1;
/// The waiter is asleep, or about to be.
const SLEEPING: usize = 2;

/// A bell one thread waits on and any thread rings.
pub(super) struct Bell {
    state: AtomicUsize,
    /// The waiting thread, which attaches itself before it first waits.
    waiter: Mutex<Option<Thread>>,
}

impl Bell {
    /// A bell nobody waits on yet.
    pub(super) fn new() -> Self {
        Self {
            state: AtomicUsize::new(0),
            waiter: Mutex::new(None),
        }
    }

    /// Makes the calling thread the one that waits.
    pub(super) fn attach(&self) {
        *lock(&self.waiter) = Some(current());
    }

    /// Rings: the waiting thread wakes (or does not go to sleep).
    pub(super) fn ring(&self) {
        if self.state.fetch_or(RUNG, Ordering::AcqRel) & SLEEPING != 0
            && let Some(waiter) = lock(&self.waiter).as_ref()
        {
            waiter.unpark();
        }
    }

    /// Whether the bell was rung since the waiter last looked, without taking the ring (the
    /// next [`wait`](Self::wait) still returns at once).
    pub(super) fn is_rung(&self) -> bool {
        self.state.load(Ordering::Acquire) & RUNG != 0
    }

    /// Waits for a ring, at most `timeout` (forever for `None`); returns whether it was rung
    /// (`false` after the timeout or a spurious wake).
    pub(super) fn wait(&self, timeout: Option<Duration>) -> bool {
        if self.state.fetch_and(!RUNG, Ordering::AcqRel) & RUNG != 0 {
            return true;
        }
        if self.state.fetch_or(SLEEPING, Ordering::AcqRel) & RUNG == 0 {
            park(timeout);
        }
        self.state.swap(0, Ordering::AcqRel) & RUNG != 0
    }
}

#[cfg(all(test, not(cuda_safe_loom)))]
mod tests {
    use std::sync::Arc;
    use std::thread;
    use std::time::Instant;

    use super::{AtomicUsize, Bell, Duration, Ordering};

    #[test]
    fn a_ring_before_the_wait_is_kept_and_a_silent_bell_times_out() {
        let bell = Bell::new();
        bell.attach();
        bell.ring();
        assert!(bell.wait(None), "the earlier ring is kept");
        let start = Instant::now();
        assert!(!bell.wait(Some(Duration::from_millis(20))));
        assert!(start.elapsed() >= Duration::from_millis(15));
    }

    /// Rings raced against the waiter going to sleep, many thousand times: the waiter always
    /// sees the work each ring announces, without a timeout to save it.
    #[test]
    fn rings_racing_sleeps_are_never_lost() {
        const ROUNDS: usize = 50_000;
        let bell = Arc::new(Bell::new());
        let posted = Arc::new(AtomicUsize::new(0));
        let waiter = {
            let (bell, posted) = (bell.clone(), posted.clone());
            thread::spawn(move || {
                bell.attach();
                let mut seen = 0;
                while seen < ROUNDS {
                    let now = posted.load(Ordering::SeqCst);
                    if now > seen {
                        seen = now;
                        continue;
                    }
                    bell.wait(None);
                }
            })
        };
        for round in 1..=ROUNDS {
            posted.store(round, Ordering::SeqCst);
            bell.ring();
            if round % 7 == 0 {
                thread::yield_now();
            }
        }
        waiter.join().unwrap();
    }
}

/// The loom model of the bell (run as the table's, `docs/async.md`).
#[cfg(all(test, cuda_safe_loom))]
mod loom_model {
    use super::{Bell, Ordering};
    use crate::sync::Arc;
    use loom::sync::atomic::AtomicBool;

    #[test]
    fn a_ring_racing_the_sleep_always_wakes_the_waiter() {
        loom::model(|| {
            let bell = Arc::new(Bell::new());
            let posted = Arc::new(AtomicBool::new(false));
            let waiter = {
                let (bell, posted) = (bell.clone(), posted.clone());
                loom::thread::spawn(move || {
                    bell.attach();
                    while !posted.load(Ordering::SeqCst) {
                        bell.wait(None);
                    }
                })
            };
            posted.store(true, Ordering::SeqCst);
            bell.ring();
            waiter.join().unwrap();
        });
    }
}
