//! [`TieredProgramCache`]: a fast cache in front of a persistent one.

use super::{CacheKey, CacheStats, FileStreamProgramCache, InMemoryProgramCache, ProgramCache};
use crate::code::CompiledCode;
use crate::error::Result;

/// Two caches in series: `get` asks the front, then the back, and a back hit fills the front;
/// `put`, `remove` and `clear` go to both.
///
/// A back hit is returned even when filling the front fails (the failure is logged as a
/// warning): the front is only an accelerator.
///
/// By default an [`InMemoryProgramCache`] in front of a [`FileStreamProgramCache`].
///
/// ```
/// use cuda_safe::cache::{
///     CacheKey, CompiledCode, CodeKind, FileStreamProgramCache, InMemoryProgramCache,
///     ProgramCache, TieredProgramCache,
/// };
///
/// let dir = tempfile::tempdir().unwrap();
/// let key = CacheKey::from_bytes([2; 32]);
/// let program = CompiledCode::new(CodeKind::Ptx, b"// ptx\0".to_vec(), Vec::new());
/// FileStreamProgramCache::new(dir.path())?.put(&key, &program)?;
///
/// let cache = TieredProgramCache::new(
///     InMemoryProgramCache::new(16 << 20),
///     FileStreamProgramCache::new(dir.path())?,
/// );
/// assert_eq!(cache.get(&key)?, Some(program.clone())); // from disk
/// assert_eq!(cache.front().get(&key)?, Some(program)); // now in memory too
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug)]
pub struct TieredProgramCache<F = InMemoryProgramCache, B = FileStreamProgramCache> {
    front: F,
    back: B,
}

impl<F: ProgramCache, B: ProgramCache> TieredProgramCache<F, B> {
    /// `front` in front of `back`.
    pub fn new(front: F, back: B) -> Self {
        Self { front, back }
    }

    /// The front (fast) cache.
    pub fn front(&self) -> &F {
        &self.front
    }

    /// The back (persistent) cache.
    pub fn back(&self) -> &B {
        &self.back
    }
}

impl<F: ProgramCache, B: ProgramCache> ProgramCache for TieredProgramCache<F, B> {
    fn get(&self, key: &CacheKey) -> Result<Option<CompiledCode>> {
        if let Some(program) = self.front.get(key)? {
            return Ok(Some(program));
        }
        let found = self.back.get(key)?;
        if let Some(program) = &found
            && let Err(error) = self.front.put(key, program)
        {
            log::warn!(
                "cuda-safe: a program cache hit for {key} could not be copied to the front \
                     cache: {error}"
            );
        }
        Ok(found)
    }

    fn put(&self, key: &CacheKey, program: &CompiledCode) -> Result<()> {
        self.front.put(key, program)?;
        self.back.put(key, program)
    }

    fn remove(&self, key: &CacheKey) -> Result<()> {
        self.front.remove(key)?;
        self.back.remove(key)
    }

    fn clear(&self) -> Result<()> {
        self.front.clear()?;
        self.back.clear()
    }

    /// The back cache's figures, with the front's hits added to its hits (`hits` counts the
    /// requests either level served and `misses` those neither could) and the front's failed
    /// stores to its failed stores (`failed_stores` counts the levels' failed `put`s).
    fn stats(&self) -> Result<CacheStats> {
        let front = self.front.stats()?;
        let mut stats = self.back.stats()?;
        stats.hits = stats.hits.saturating_add(front.hits);
        stats.failed_stores = stats.failed_stores.saturating_add(front.failed_stores);
        stats.unreadable_shards = stats
            .unreadable_shards
            .saturating_add(front.unreadable_shards);
        Ok(stats)
    }

    /// The front's note, else the back's (copied to the front).
    fn get_note(&self, key: &CacheKey) -> Option<Vec<u8>> {
        if let Some(note) = self.front.get_note(key) {
            return Some(note);
        }
        let note = self.back.get_note(key)?;
        if let Err(error) = self.front.put_note(key, &note) {
            log::debug!(
                "cuda-safe: a program cache note could not be copied to the front: {error}"
            );
        }
        Some(note)
    }

    fn put_note(&self, key: &CacheKey, note: &[u8]) -> Result<()> {
        self.front.put_note(key, note)?;
        self.back.put_note(key, note)
    }

    /// The front's noted entry, else the back's (not copied: a noted entry serves a fresh
    /// process's first request only; later requests of that process go by the ordinary key,
    /// which the back's hit copies to the front).
    fn get_noted(
        &self,
        key: &CacheKey,
        accept: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Option<(Vec<u8>, CompiledCode)>> {
        match self.front.get_noted(key, accept)? {
            Some(found) => Ok(Some(found)),
            None => self.back.get_noted(key, accept),
        }
    }

    fn put_noted(&self, key: &CacheKey, note: &[u8], program: &CompiledCode) -> Result<()> {
        self.front.put_noted(key, note, program)?;
        self.back.put_noted(key, note, program)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::TieredProgramCache;
    use crate::cache::ProgramCache;
    use crate::cache::{CacheKey, CacheStats, InMemoryProgramCache};
    use crate::code::{CodeKind, CompiledCode};
    use crate::error::{Error, Result};

    /// A front cache whose every operation but `stats` fails, counting the `put`s it refused
    /// (its failed stores).
    #[derive(Debug, Default)]
    struct FailingCache {
        puts: AtomicU64,
    }

    fn refused() -> Error {
        Error::invalid_argument("this test cache refuses everything")
    }

    impl ProgramCache for FailingCache {
        fn get(&self, _: &CacheKey) -> Result<Option<CompiledCode>> {
            Ok(None)
        }

        fn put(&self, _: &CacheKey, _: &CompiledCode) -> Result<()> {
            self.puts.fetch_add(1, Ordering::Relaxed);
            Err(refused())
        }

        fn remove(&self, _: &CacheKey) -> Result<()> {
            Err(refused())
        }

        fn clear(&self) -> Result<()> {
            Err(refused())
        }

        fn stats(&self) -> Result<CacheStats> {
            Ok(CacheStats {
                failed_stores: self.puts.load(Ordering::Relaxed),
                ..CacheStats::default()
            })
        }
    }

    #[test]
    fn a_back_hit_survives_a_failing_front() {
        let key = CacheKey::from_bytes([6; 32]);
        let program = CompiledCode::new(CodeKind::Cubin, vec![0x7f, b'E', b'L', b'F'], Vec::new());
        let back = InMemoryProgramCache::new(1 << 20);
        back.put(&key, &program).unwrap();
        let cache = TieredProgramCache::new(FailingCache::default(), back);

        assert_eq!(cache.get(&key).unwrap(), Some(program.clone()));
        assert_eq!(cache.get(&key).unwrap(), Some(program));
        // The front was asked to keep the hit each time and refused each time.
        assert_eq!(cache.front().puts.load(Ordering::Relaxed), 2);
        // A miss in both levels is still a plain miss.
        assert_eq!(cache.get(&CacheKey::from_bytes([0; 32])).unwrap(), None);
        // Writes still report the front's failure: only the read path shields it.
        assert!(
            cache
                .put(&key, &CompiledCode::new(CodeKind::Ptx, vec![0], Vec::new()))
                .is_err()
        );
        // Every refused put of the front is in the combined count.
        assert_eq!(cache.stats().unwrap().failed_stores, 3);
    }
}
