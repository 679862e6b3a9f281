//! [`TieredProgramCache`]: a fast cache in front of a persistent one.

use super::{
    CacheKey, CacheStats, CachedProgram, FileStreamProgramCache, InMemoryProgramCache, ProgramCache,
};
use crate::Result;

/// Two caches in series: `get` asks the front, then the back, and a back hit fills the front;
/// `put`, `remove` and `clear` go to both.
///
/// By default an [`InMemoryProgramCache`] in front of a [`FileStreamProgramCache`].
///
/// ```
/// use cuda_safe::cache::{
///     CacheKey, CachedProgram, CodeKind, FileStreamProgramCache, InMemoryProgramCache,
///     ProgramCache, TieredProgramCache,
/// };
///
/// let dir = tempfile::tempdir().unwrap();
/// let key = CacheKey::from_bytes([2; 32]);
/// let program = CachedProgram::new(CodeKind::Ptx, b"// ptx\0".to_vec(), Vec::new());
/// FileStreamProgramCache::new(dir.path()).put(&key, &program)?;
///
/// let cache = TieredProgramCache::new(
///     InMemoryProgramCache::new(16 << 20),
///     FileStreamProgramCache::new(dir.path()),
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
    fn get(&self, key: &CacheKey) -> Result<Option<CachedProgram>> {
        if let Some(program) = self.front.get(key)? {
            return Ok(Some(program));
        }
        let found = self.back.get(key)?;
        if let Some(program) = &found {
            self.front.put(key, program)?;
        }
        Ok(found)
    }

    fn put(&self, key: &CacheKey, program: &CachedProgram) -> Result<()> {
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

    /// The back cache's figures, with the front's hits added to its hits: `hits` counts the
    /// requests either level served and `misses` those neither could.
    fn stats(&self) -> Result<CacheStats> {
        let front = self.front.stats()?;
        let mut stats = self.back.stats()?;
        stats.hits = stats.hits.saturating_add(front.hits);
        Ok(stats)
    }
}
