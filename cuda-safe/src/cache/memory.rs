//! [`InMemoryProgramCache`]: a thread-safe LRU of compiled programs, bounded by bytes.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use lru::LruCache;

use super::stats::Counters;
use super::{CacheKey, CacheStats, ProgramCache, too_large};
use crate::code::CompiledCode;
use crate::error::Result;
use crate::trace::span;

/// The most notes an in-memory cache keeps; storing one more forgets the others.
const MAX_NOTES: usize = 64;

/// A thread-safe least-recently-used cache of programs, bounded by total bytes (each entry
/// weighs [`CompiledCode::weight`]) and optionally by entry count.
///
/// `get` and `put` take one mutex and cost O(1). An entry heavier than the byte cap is not
/// stored (counted in [`CacheStats::rejected`]); storing one that fits evicts the least recently
/// used entries until both bounds hold.
///
/// ```
/// use cuda_safe::cache::{CacheKey, InMemoryProgramCache, ProgramCache};
/// use cuda_safe::{CodeKind, CompiledCode};
///
/// let cache = InMemoryProgramCache::new(1 << 20).with_max_entries(64);
/// assert_eq!(InMemoryProgramCache::default().max_bytes(), InMemoryProgramCache::DEFAULT_MAX_BYTES);
/// let key = CacheKey::from_bytes([7; 32]);
/// cache.put(&key, &CompiledCode::new(CodeKind::Ptx, b"// ptx\0".to_vec(), Vec::new()))?;
/// assert_eq!(cache.get(&key)?.map(|program| program.kind()), Some(CodeKind::Ptx));
/// assert_eq!(cache.stats()?.hits, 1);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug)]
pub struct InMemoryProgramCache {
    entries: Mutex<Entries>,
    notes: Mutex<HashMap<CacheKey, Vec<u8>>>,
    counters: Counters,
    max_bytes: u64,
    max_entries: Option<usize>,
}

/// The entries, least recently used first, each with its weight, and their total weight.
#[derive(Debug)]
struct Entries {
    lru: LruCache<CacheKey, (CompiledCode, u64)>,
    weight: u64,
}

impl Entries {
    fn remove(&mut self, key: &CacheKey) {
        if let Some((_, weight)) = self.lru.pop(key) {
            self.weight = self.weight.saturating_sub(weight);
        }
    }
}

impl Default for InMemoryProgramCache {
    /// An empty cache of [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES).
    fn default() -> Self {
        Self::new(Self::DEFAULT_MAX_BYTES)
    }
}

impl InMemoryProgramCache {
    /// The byte cap of [`InMemoryProgramCache::default`]: 256 MiB, some thousands of kernels.
    pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

    /// An empty cache holding at most `max_bytes` of entries.
    pub fn new(max_bytes: u64) -> Self {
        Self {
            entries: Mutex::new(Entries {
                lru: LruCache::unbounded(),
                weight: 0,
            }),
            notes: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            max_bytes,
            max_entries: None,
        }
    }

    /// Also bounds the number of entries.
    pub fn with_max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = Some(max_entries);
        self
    }

    /// The byte cap.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The entry cap, if one was set.
    pub fn max_entries(&self) -> Option<usize> {
        self.max_entries
    }

    /// The map, recovered if a thread panicked while holding it: every update leaves it
    /// consistent before anything that could panic.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn over_cap(&self, entries: &Entries) -> bool {
        entries.weight > self.max_bytes
            || self.max_entries.is_some_and(|max| entries.lru.len() > max)
    }
}

impl ProgramCache for InMemoryProgramCache {
    fn get(&self, key: &CacheKey) -> Result<Option<CompiledCode>> {
        let span = span!(TRACE, "cache_get", cache = "memory", %key, hit = tracing::field::Empty);
        let found = self.lock().lru.get(key).map(|(code, _)| code.clone());
        span.record_hit(found.is_some());
        Counters::bump(match found {
            Some(_) => &self.counters.hits,
            None => &self.counters.misses,
        });
        Ok(found)
    }

    fn put(&self, key: &CacheKey, program: &CompiledCode) -> Result<()> {
        let _span = span!(TRACE, "cache_put", cache = "memory", %key);
        let weight = program.weight();
        if weight > self.max_bytes || self.max_entries == Some(0) {
            Counters::bump(&self.counters.rejected);
            return Ok(());
        }
        let mut entries = self.lock();
        entries.remove(key);
        entries.lru.put(*key, (program.clone(), weight));
        entries.weight = entries.weight.saturating_add(weight);
        Counters::bump(&self.counters.insertions);
        while self.over_cap(&entries) {
            let Some((_, (_, weight))) = entries.lru.pop_lru() else {
                break;
            };
            entries.weight = entries.weight.saturating_sub(weight);
            Counters::bump(&self.counters.evictions);
        }
        Ok(())
    }

    fn remove(&self, key: &CacheKey) -> Result<()> {
        self.lock().remove(key);
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        let mut entries = self.lock();
        entries.lru.clear();
        entries.weight = 0;
        drop(entries);
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        Ok(())
    }

    fn stats(&self) -> Result<CacheStats> {
        let (entries, bytes) = {
            let entries = self.lock();
            (entries.lru.len() as u64, entries.weight)
        };
        Ok(self.counters.snapshot(entries, bytes))
    }

    fn get_note(&self, key: &CacheKey) -> Option<Vec<u8>> {
        let notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        notes.get(key).cloned()
    }

    fn put_note(&self, key: &CacheKey, note: &[u8]) -> Result<()> {
        if let Some(refusal) = too_large(note) {
            return Err(refusal);
        }
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if notes.len() >= MAX_NOTES && !notes.contains_key(key) {
            notes.clear();
        }
        notes.insert(*key, note.to_vec());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::InMemoryProgramCache;
    use crate::cache::{CacheKey, ProgramCache};
    use crate::code::{CodeKind, CompiledCode};

    fn code(weight: usize) -> CompiledCode {
        CompiledCode::new(CodeKind::Cubin, vec![0; weight], Vec::new())
    }

    #[test]
    fn least_recently_used_entries_go_first_and_weights_add_up() {
        let cache = InMemoryProgramCache::new(30);
        let key = |n: u8| CacheKey::from_bytes([n; 32]);
        for n in 1..=3 {
            cache.put(&key(n), &code(10)).unwrap();
        }
        assert!(cache.get(&key(1)).unwrap().is_some()); // 2 is now the oldest
        cache.put(&key(4), &code(10)).unwrap();
        assert_eq!(cache.get(&key(2)).unwrap(), None);
        // Replacing an entry counts its new weight only.
        cache.put(&key(4), &code(5)).unwrap();
        let stats = cache.stats().unwrap();
        assert_eq!((stats.entries, stats.bytes, stats.evictions), (3, 25, 1));
        cache.remove(&key(1)).unwrap();
        assert_eq!(cache.stats().unwrap().bytes, 15);
    }

    #[test]
    fn notes_are_kept_and_bounded() {
        let cache = InMemoryProgramCache::default();
        let key = CacheKey::from_bytes([9; 32]);
        assert_eq!(cache.get_note(&key), None);
        cache.put_note(&key, b"13.0").unwrap();
        assert_eq!(cache.get_note(&key).as_deref(), Some(&b"13.0"[..]));
        assert!(cache.put_note(&key, &[0; 5000]).is_err());
        cache.clear().unwrap();
        assert_eq!(cache.get_note(&key), None);
    }
}
