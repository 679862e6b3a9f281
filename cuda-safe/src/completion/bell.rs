//! The bell the reactor thread sleeps on: rung by a registration, by a driver callback when
//! watched work finishes, and by the last handle going. A ring costs a store and a load unless
//! the reactor sleeps, when it also unparks it; a ring while the reactor is awake is never
//! lost (the reactor looks at the bell again before it sleeps).
//!
//! The ringer raises `rung` and then reads `sleeping`; the reactor raises `sleeping` and then
//! reads `rung`, both sequentially consistent, so at least one of them sees the other: either
//! the reactor sees the ring and does not sleep, or the ringer sees it asleep and unparks it
//! (an unpark before the park makes the park return at once). The loom model below checks it.

use std::time::Duration;

use super::sync::{AtomicBool, Mutex, Ordering, Thread, current, lock, park};

/// A bell one thread waits on and any thread rings.
pub(super) struct Bell {
    rung: AtomicBool,
    sleeping: AtomicBool,
    /// The waiting thread, which attaches itself before it first waits.
    waiter: Mutex<Option<Thread>>,
}

impl Bell {
    /// A bell nobody waits on yet.
    pub(super) fn new() -> Self {
        Self {
            rung: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            waiter: Mutex::new(None),
        }
    }

    /// Makes the calling thread the one that waits.
    pub(super) fn attach(&self) {
        *lock(&self.waiter) = Some(current());
    }

    /// Rings: the waiting thread wakes (or does not go to sleep).
    pub(super) fn ring(&self) {
        self.rung.store(true, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst)
            && let Some(waiter) = lock(&self.waiter).as_ref()
        {
            waiter.unpark();
        }
    }

    /// Waits for a ring, at most `timeout` (forever for `None`); returns whether it was rung
    /// (`false` after the timeout or a spurious wake).
    pub(super) fn wait(&self, timeout: Option<Duration>) -> bool {
        if self.rung.swap(false, Ordering::SeqCst) {
            return true;
        }
        self.sleeping.store(true, Ordering::SeqCst);
        if !self.rung.load(Ordering::SeqCst) {
            park(timeout);
        }
        self.sleeping.store(false, Ordering::SeqCst);
        self.rung.swap(false, Ordering::SeqCst)
    }
}

#[cfg(all(test, not(cuda_safe_loom)))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::thread;
    use std::time::Instant;

    use super::*;

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
    use super::*;
    use crate::completion::sync::Arc;

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
