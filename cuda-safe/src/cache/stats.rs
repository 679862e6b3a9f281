//! What a cache reports about itself.

use std::sync::atomic::{AtomicU64, Ordering};

/// A cache's size and its counters.
///
/// `entries` and `bytes` describe what the cache holds now (for an on-disk cache, the whole
/// directory, whoever wrote it); the counters count what this cache object has done since it
/// was created.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Entries held.
    pub entries: u64,
    /// Bytes held: the entries' weights in memory; on disk, the sizes of the entry files and
    /// of the cache's temp files (what the cap bounds).
    pub bytes: u64,
    /// `get`s that returned an entry.
    pub hits: u64,
    /// `get`s that returned nothing (corrupt entries included).
    pub misses: u64,
    /// Entries stored by `put`.
    pub insertions: u64,
    /// Entries removed to stay within the cap.
    pub evictions: u64,
    /// `put`s not stored because the entry alone is larger than the cap.
    pub rejected: u64,
    /// Entries found truncated, corrupted, of the wrong type or of another user, and removed.
    pub corrupt_entries: u64,
    /// `put`s that returned an error. Callers that store as a side effect and only log a
    /// failure ([`Program::compile_cached`](crate::Program::compile_cached),
    /// [`KernelCache`](crate::KernelCache)) leave their trace here.
    pub failed_stores: u64,
}

/// Thread-safe counters behind [`CacheStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) hits: AtomicU64,
    pub(crate) misses: AtomicU64,
    pub(crate) insertions: AtomicU64,
    pub(crate) evictions: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) corrupt_entries: AtomicU64,
    pub(crate) failed_stores: AtomicU64,
}

impl Counters {
    /// Adds one to `counter`.
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters, with the given size.
    pub(crate) fn snapshot(&self, entries: u64, bytes: u64) -> CacheStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CacheStats {
            entries,
            bytes,
            hits: read(&self.hits),
            misses: read(&self.misses),
            insertions: read(&self.insertions),
            evictions: read(&self.evictions),
            rejected: read(&self.rejected),
            corrupt_entries: read(&self.corrupt_entries),
            failed_stores: read(&self.failed_stores),
        }
    }
}
