//! NVML's lifetime: initialised on first use, shut down when the last user is gone.
//!
//! Every [`Session`](super::Session), [`Device`](super::Device) and
//! [`EventSet`](super::EventSet) holds an `Arc<Guard>`. The first one created calls
//! `nvmlInit_v2`; dropping the last one calls `nvmlShutdown`. A process-wide
//! `Mutex<Weak<Guard>>` hands the live guard to later users, so two threads starting at once
//! share one initialisation.
//!
//! A guard being dropped while another thread creates the next one is harmless: NVML counts
//! its initialisations, and each guard pairs exactly one `nvmlInit_v2` with one `nvmlShutdown`.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::error::{Result, nvml};
use crate::handle::{Owned, Release};
use nvml_sys::{LoadError, Nvml};

/// One `nvmlInit_v2`, undone by `nvmlShutdown` when the guard is dropped.
pub(crate) type Guard = Owned<Initialised>;

/// What a [`Guard`] owns: one initialisation of NVML.
pub(crate) struct Initialised {
    nvml: &'static Nvml,
}

impl Initialised {
    /// The NVML entry points this guard initialised.
    pub(crate) fn nvml(&self) -> &'static Nvml {
        self.nvml
    }
}

impl std::fmt::Debug for Initialised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("library", &self.nvml.library().path())
            .finish()
    }
}

impl Release for Initialised {
    const WHAT: &'static str = "guard of NVML's initialisation";

    fn release(&mut self) -> Result<()> {
        // SAFETY: pairs the `nvmlInit_v2` that created this guard; no handle obtained under
        // it outlives it, since every holder of a handle also holds the guard.
        unsafe { nvml!(self.nvml, nvmlShutdown()) }
    }
}

/// A value created by its first user and dropped with its last one, shared in between.
#[derive(Debug)]
pub(crate) struct Shared<T> {
    slot: Mutex<Weak<T>>,
}

impl<T> Shared<T> {
    /// An empty slot.
    pub(crate) const fn new() -> Self {
        Self {
            slot: Mutex::new(Weak::new()),
        }
    }

    /// The live value, or a new one from `create` when none is alive. A failed `create`
    /// leaves the slot empty, so the next call tries again.
    pub(crate) fn get_or_try_create<E>(
        &self,
        create: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        // A panic elsewhere while the lock was held leaves a `Weak`, which is always valid.
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = slot.upgrade() {
            return Ok(live);
        }
        let fresh = Arc::new(create()?);
        *slot = Arc::downgrade(&fresh);
        Ok(fresh)
    }
}

/// The process's NVML guard.
static GUARD: Shared<Guard> = Shared::new();

/// The live NVML guard, initialising NVML when no guard is alive.
///
/// Fails with [`Error::Load`](crate::Error::Load) when `libnvidia-ml` cannot be loaded and
/// with [`Error::Nvml`](crate::Error::Nvml) when `nvmlInit_v2` fails (no driver loaded, no
/// permission). Never touches the CUDA driver.
pub(crate) fn acquire() -> Result<Arc<Guard>> {
    acquire_from(&GUARD, nvml_sys::nvml)
}

/// [`acquire`] with the slot and the library loader given, so tests can supply their own.
fn acquire_from(
    slot: &Shared<Guard>,
    load: impl FnOnce() -> Result<&'static Nvml, LoadError>,
) -> Result<Arc<Guard>> {
    let nvml = load()?;
    slot.get_or_try_create(|| {
        // SAFETY: nvmlInit_v2 has no preconditions; the guard created below pairs it with
        // one nvmlShutdown.
        unsafe { nvml!(nvml, nvmlInit_v2()) }?;
        Ok(Guard::new(Initialised { nvml }))
    })
}

/// NVML entry points resolved from libc, which has none of them: every call fails with
/// `LoadError::SymbolMissing` before reaching C. For CPU tests of the wrappers.
#[cfg(test)]
pub(super) fn nvml_without_symbols() -> &'static Nvml {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    static FAKE: OnceLock<Nvml> = OnceLock::new();
    FAKE.get_or_init(|| {
        // SAFETY: libc's initialisers have run already in this process; only lookups happen,
        // and none of its functions is called (it has none of NVML's symbols).
        unsafe {
            nvml_sys::Library::open_first(
                "libc",
                [PathBuf::from("libc.so.6")],
                &nvml_sys::ENTRY_POINTS,
            )
            .map(|library| Nvml::new(library))
        }
        .expect("libc.so.6 loads")
    })
}

/// A guard over [`nvml_without_symbols`], as if its `nvmlInit_v2` had succeeded (dropping it
/// logs that `nvmlShutdown` is missing).
#[cfg(test)]
pub(super) fn guard_without_symbols() -> Arc<Guard> {
    Arc::new(Guard::new(Initialised {
        nvml: nvml_without_symbols(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops in the counter it points to.
    struct Counted<'a> {
        dropped: &'a AtomicUsize,
    }

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn users_share_one_value_and_the_last_drop_ends_it() {
        let created = AtomicUsize::new(0);
        let dropped = AtomicUsize::new(0);
        let shared = Shared::new();
        let create = || {
            created.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>(Counted { dropped: &dropped })
        };
        let first = shared.get_or_try_create(create).unwrap();
        let second = shared.get_or_try_create(create).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(created.load(Ordering::SeqCst), 1);
        drop(first);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        drop(second);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);

        let third = shared.get_or_try_create(create).unwrap();
        assert_eq!(created.load(Ordering::SeqCst), 2);
        drop(third);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_creation_leaves_the_slot_empty() {
        let shared: Shared<u32> = Shared::new();
        assert_eq!(
            shared.get_or_try_create(|| Err("no driver")),
            Err("no driver")
        );
        let value = shared.get_or_try_create(|| Ok::<_, &str>(7)).unwrap();
        assert_eq!(*value, 7);
    }

    #[test]
    fn threads_racing_pair_every_creation_with_one_drop() {
        let created = AtomicUsize::new(0);
        let dropped = AtomicUsize::new(0);
        let shared = Shared::new();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..200 {
                        let held = shared
                            .get_or_try_create(|| {
                                created.fetch_add(1, Ordering::SeqCst);
                                Ok::<_, ()>(Counted { dropped: &dropped })
                            })
                            .unwrap();
                        drop(held);
                    }
                });
            }
        });
        let created = created.load(Ordering::SeqCst);
        assert!(created >= 1);
        assert_eq!(created, dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn a_missing_library_is_the_typed_load_error() {
        let slot = Shared::new();
        let error = acquire_from(&slot, || {
            Err(LoadError::LibraryNotFound {
                library: "NVML (libnvidia-ml)",
                tried: Vec::new(),
            })
        })
        .unwrap_err();
        assert!(
            matches!(error, Error::Load(LoadError::LibraryNotFound { .. })),
            "{error:?}"
        );
    }

    #[test]
    fn a_library_without_nvml_init_is_the_typed_symbol_error_and_no_guard() {
        let slot = Shared::new();
        let error = acquire_from(&slot, || Ok(nvml_without_symbols())).unwrap_err();
        assert!(error.is_symbol_missing(), "{error:?}");
        assert!(error.to_string().contains("nvmlInit_v2"), "{error}");
        assert!(slot.slot.lock().unwrap().upgrade().is_none());
    }

    #[test]
    fn the_public_entry_reports_what_loading_and_initialising_nvml_did() {
        match nvml_sys::nvml() {
            // Without NVML: the loader's error, unchanged.
            Err(load) => {
                let error = acquire().unwrap_err();
                assert!(
                    matches!(&error, Error::Load(error) if *error == load),
                    "{error:?}"
                );
            }
            // With NVML: a guard over the process's library that later users share, or, where
            // NVML cannot start (no driver loaded, no permission), NVML's own error.
            Ok(nvml) => match acquire() {
                Ok(guard) => {
                    assert!(std::ptr::eq(guard.nvml(), nvml));
                    let again = acquire().unwrap();
                    assert!(Arc::ptr_eq(&guard, &again));
                }
                Err(error) => assert!(
                    matches!(
                        error,
                        Error::Nvml {
                            api: "nvmlInit_v2",
                            ..
                        }
                    ),
                    "{error:?}"
                ),
            },
        }
    }
}
