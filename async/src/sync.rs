//! The synchronization the waker table and the bell are built from: the standard library's,
//! or loom's when the crate is built with `--cfg cuda_safe_loom` to model-check them (see
//! [`table`](super::table) and [`bell`](super::bell)). Only those two files use it.

#[cfg(not(cuda_safe_loom))]
pub(super) use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(cuda_safe_loom))]
pub(super) use std::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(cuda_safe_loom))]
pub(super) use std::thread::{Thread, current};

#[cfg(cuda_safe_loom)]
pub(super) use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(cuda_safe_loom)]
pub(super) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(cuda_safe_loom)]
pub(super) use loom::thread::{Thread, current};

use std::sync::PoisonError;
use std::time::Duration;

/// Locks `mutex`, taking the data of a poisoned one as it is (every holder leaves it
/// consistent between its statements, and nothing here panics while holding it).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Parks the calling thread until it is unparked, or `timeout` has passed (loom has no timed
/// park: its models only wait where a wake is sure to come).
pub(super) fn park(timeout: Option<Duration>) {
    #[cfg(not(cuda_safe_loom))]
    match timeout {
        Some(timeout) => std::thread::park_timeout(timeout),
        None => std::thread::park(),
    }
    #[cfg(cuda_safe_loom)]
    {
        let _ = timeout;
        loom::thread::park();
    }
}
