//! The one way an owned driver handle releases itself: [`Owned`] wraps a value that knows how
//! to give its handle back ([`Release`]), releases it exactly once (on [`Owned::close`], which
//! returns the driver's error, or on drop, which logs it), and never panics.
//!
//! Streams, events, pools, buffers, loaded libraries, contexts, graphs, captures and NVRTC
//! programs all go through it, and so do the handles of the annex crates (NCCL communicators,
//! cuBLAS handles, cuRAND generators, ...), so none of them carries its own "already closed"
//! sentinel. A crate that wraps another CUDA library releases its handles the same way:
//!
//! ```
//! use cuda_safe::handle::{Owned, Release};
//!
//! struct Plan(u64);
//!
//! impl Release for Plan {
//!     const WHAT: &'static str = "plan";
//!     fn release(&mut self) -> cuda_safe::Result<()> {
//!         // The library's destroy call, checked, goes here.
//!         Ok(())
//!     }
//! }
//!
//! let plan = Owned::new(Plan(7));
//! assert_eq!(plan.0, 7);
//! plan.close()?; // or dropped: released once either way, a failure logged
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use crate::error::{Error, Result};

/// A value owning a driver handle (or allocation) that must be given back once.
pub trait Release {
    /// What the handle is, for the log line of a failed release on drop (`"stream"`).
    const WHAT: &'static str;

    /// Gives the handle back. Called exactly once, by [`Owned`]; a value that does not own its
    /// handle (a borrowed stream, the default pool) does nothing here.
    fn release(&mut self) -> Result<()>;
}

/// An owner that releases its value's handle exactly once: on [`close`](Self::close) or on
/// drop. It dereferences to the value.
pub struct Owned<T: Release> {
    value: ManuallyDrop<T>,
}

impl<T: Release> Owned<T> {
    /// Takes ownership of `value`'s handle.
    #[inline]
    pub fn new(value: T) -> Self {
        Self {
            value: ManuallyDrop::new(value),
        }
    }

    /// The value, its handle not released: the caller takes over giving it back (a capture
    /// that ends into a graph, a registration undone before its buffer is handed back).
    pub fn into_unreleased(self) -> T {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used again and its destructor never runs, so the value is
        // taken out exactly once.
        unsafe { ManuallyDrop::take(&mut this.value) }
    }

    /// Releases the handle now, returning the error (dropping does the same and only logs).
    pub fn close(self) -> Result<()> {
        self.into_unreleased().release()
    }
}

impl<T: Release> Drop for Owned<T> {
    #[inline]
    fn drop(&mut self) {
        if let Err(error) = self.value.release() {
            log_drop_error(T::WHAT, &error);
        }
        // SAFETY: the value is dropped once, here, after its handle was released.
        unsafe { ManuallyDrop::drop(&mut self.value) }
    }
}

impl<T: Release + std::fmt::Debug> std::fmt::Debug for Owned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: Release> Deref for Owned<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Release> DerefMut for Owned<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

/// Reports an error that a `Drop` cannot return (it never panics): logged at error level.
#[cold]
pub fn log_drop_error(what: &str, error: &Error) {
    log::error!("cuda-safe: dropping a {what} failed: {error}");
}

/// Asserts at compile time that each type is `Send` and `Sync`:
/// `cuda_safe::assert_send_sync!(MyHandle);`.
#[macro_export]
macro_rules! assert_send_sync {
    ($($ty:ty),+ $(,)?) => {
        const _: () = {
            const fn assert_send_sync<T: Send + Sync>() {}
            $(assert_send_sync::<$ty>();)+
        };
    };
}
pub use assert_send_sync;

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Counted {
        releases: Arc<AtomicUsize>,
        fail: bool,
    }

    impl Release for Counted {
        const WHAT: &'static str = "test handle";

        fn release(&mut self) -> Result<()> {
            self.releases.fetch_add(1, Ordering::SeqCst);
            if self.fail {
                Err(Error::invalid_argument("release refused"))
            } else {
                Ok(())
            }
        }
    }

    fn counted(fail: bool) -> (Owned<Counted>, Arc<AtomicUsize>) {
        let releases = Arc::new(AtomicUsize::new(0));
        let owned = Owned::new(Counted {
            releases: releases.clone(),
            fail,
        });
        (owned, releases)
    }

    #[test]
    fn drop_releases_once() {
        let (owned, releases) = counted(false);
        drop(owned);
        assert_eq!(releases.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn into_unreleased_hands_the_value_over_without_releasing() {
        let (owned, releases) = counted(false);
        let mut value = owned.into_unreleased();
        assert_eq!(
            releases.load(Ordering::SeqCst),
            0,
            "not released on the way out"
        );
        value.release().unwrap();
        drop(value);
        assert_eq!(
            releases.load(Ordering::SeqCst),
            1,
            "the taker released it, once"
        );
    }

    #[test]
    fn close_releases_once_and_returns_the_error() {
        let (owned, releases) = counted(false);
        owned.close().unwrap();
        assert_eq!(releases.load(Ordering::SeqCst), 1);
        let (owned, releases) = counted(true);
        assert!(owned.close().unwrap_err().to_string().contains("refused"));
        assert_eq!(
            releases.load(Ordering::SeqCst),
            1,
            "no second release on drop"
        );
    }

    #[test]
    fn a_failed_release_on_drop_is_logged_not_panicked() {
        let (owned, releases) = counted(true);
        drop(owned);
        assert_eq!(releases.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_value_is_reachable_through_the_owner() {
        let (mut owned, _) = counted(false);
        assert!(!owned.fail);
        owned.fail = true;
        assert!(owned.close().is_err());
    }
}
