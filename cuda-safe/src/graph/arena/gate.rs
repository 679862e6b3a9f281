//! The launch gate of one arena: launches of its graphs pass it from their generation check
//! until their event is recorded, and a reset closes it while it decides, so that no launch
//! can slip in between the reset's look at the flights and its freeing of their memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// Set while a reset decides; the other bits count the launches passing the gate.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// A count of launches in progress, and a flag a reset raises while none is.
#[derive(Debug, Default)]
pub(super) struct LaunchGate {
    state: AtomicUsize,
}

impl LaunchGate {
    /// A launch enters: waits while a reset decides (a few event queries), then counts.
    pub(super) fn enter(&self) {
        let mut seen = self.state.load(Ordering::Acquire);
        loop {
            if seen & CLOSED != 0 {
                thread::yield_now();
                seen = self.state.load(Ordering::Acquire);
                continue;
            }
            match self.state.compare_exchange_weak(
                seen,
                seen + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// A launch that entered has recorded its event (or failed): it leaves.
    pub(super) fn leave(&self) {
        self.state.fetch_sub(1, Ordering::Release);
    }

    /// Closes the gate when no launch is passing it; otherwise the number passing.
    pub(super) fn close(&self) -> Result<Closed<'_>, usize> {
        match self
            .state
            .compare_exchange(0, CLOSED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(Closed { gate: self }),
            Err(launching) => Err(launching & !CLOSED),
        }
    }
}

/// The gate, closed until dropped: no launch enters meanwhile.
#[derive(Debug)]
pub(super) struct Closed<'a> {
    gate: &'a LaunchGate,
}

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        self.gate.state.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_passing_keeps_the_gate_open() {
        let gate = LaunchGate::default();
        gate.enter();
        gate.enter();
        assert_eq!(gate.close().map(drop), Err(2));
        gate.leave();
        assert_eq!(gate.close().map(drop), Err(1));
        gate.leave();
        let closed = gate.close();
        assert!(closed.is_ok());
        assert_eq!(gate.close().map(drop), Err(0));
        drop(closed);
        assert!(gate.close().is_ok());
    }

    #[test]
    fn a_launch_waits_while_the_gate_is_closed() {
        let gate = LaunchGate::default();
        let entered = std::sync::atomic::AtomicBool::new(false);
        thread::scope(|scope| {
            let closed = gate.close();
            assert!(closed.is_ok());
            scope.spawn(|| {
                gate.enter();
                entered.store(true, Ordering::SeqCst);
            });
            thread::sleep(std::time::Duration::from_millis(20));
            assert!(!entered.load(Ordering::SeqCst));
            drop(closed);
        });
        assert!(entered.load(Ordering::SeqCst));
        assert_eq!(gate.close().map(drop), Err(1));
    }
}
