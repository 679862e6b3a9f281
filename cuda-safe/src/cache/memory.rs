//! [`InMemoryProgramCache`]: a thread-safe LRU of compiled programs, bounded by bytes.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::lru::Lru;
use super::stats::Counters;
use super::{CacheKey, CacheStats, ProgramCache};
use crate::code::CompiledCode;
use crate::error::Result;

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
/// let key = CacheKey::from_bytes([7; 32]);
/// cache.put(&key, &CompiledCode::new(CodeKind::Ptx, b"// ptx\0".to_vec(), Vec::new()))?;
/// assert_eq!(cache.get(&key)?.map(|program| program.kind()), Some(CodeKind::Ptx));
/// assert_eq!(cache.stats()?.hits, 1);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug)]
pub struct InMemoryProgramCache {
    entries: Mutex<Lru<CacheKey, CompiledCode>>,
    counters: Counters,
    max_bytes: u64,
    max_entries: Option<usize>,
}

impl InMemoryProgramCache {
    /// An empty cache holding at most `max_bytes` of entries.
    pub fn new(max_bytes: u64) -> Self {
        Self {
            entries: Mutex::new(Lru::new()),
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
    fn lock(&self) -> MutexGuard<'_, Lru<CacheKey, CompiledCode>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn over_cap(&self, entries: &Lru<CacheKey, CompiledCode>) -> bool {
        entries.weight() > self.max_bytes || self.max_entries.is_some_and(|max| entries.len() > max)
    }
}

impl ProgramCache for InMemoryProgramCache {
    fn get(&self, key: &CacheKey) -> Result<Option<CompiledCode>> {
        let found = self.lock().get(key).cloned();
        Counters::bump(match found {
            Some(_) => &self.counters.hits,
            None => &self.counters.misses,
        });
        Ok(found)
    }

    fn put(&self, key: &CacheKey, program: &CompiledCode) -> Result<()> {
        let weight = program.weight();
        if weight > self.max_bytes || self.max_entries == Some(0) {
            Counters::bump(&self.counters.rejected);
            return Ok(());
        }
        let mut entries = self.lock();
        entries.insert(*key, program.clone(), weight);
        Counters::bump(&self.counters.insertions);
        while self.over_cap(&entries) {
            if entries.pop_oldest().is_none() {
                break;
            }
            Counters::bump(&self.counters.evictions);
        }
        Ok(())
    }

    fn remove(&self, key: &CacheKey) -> Result<()> {
        self.lock().remove(key);
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        self.lock().clear();
        Ok(())
    }

    fn stats(&self) -> Result<CacheStats> {
        let (entries, bytes) = {
            let entries = self.lock();
            (entries.len() as u64, entries.weight())
        };
        Ok(self.counters.snapshot(entries, bytes))
    }
}
