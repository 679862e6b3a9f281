//! [`KernelCache`]: the per-process map from a program's key to its loaded code, in front of a
//! [`ProgramCache`] of compiled bytes.

use std::collections::HashMap;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use super::{CacheKey, CodeKind, ProgramCache};
use crate::{Kernel, ObjectCode, Program, Result};

/// Launchable kernels for programs, compiling and loading each program at most once per
/// process.
///
/// A request first looks in this process's loaded libraries (keyed by the program's
/// [`cache_key`](Program::cache_key), which the program computes once), then in the program
/// cache `C` (in memory, on disk, or both, [`TieredProgramCache`](super::TieredProgramCache)),
/// and compiles only when both miss. A repeated request therefore neither hashes the source
/// again nor reloads the code: it is one map lookup and `cuLibraryGetKernel`.
///
/// ```no_run
/// use cuda_safe::cache::{FileStreamProgramCache, InMemoryProgramCache, KernelCache, TieredProgramCache};
/// use cuda_safe::{CodeKind, Program, ProgramOptions};
///
/// let programs = TieredProgramCache::new(
///     InMemoryProgramCache::new(64 << 20),
///     FileStreamProgramCache::with_default_root()?,
/// );
/// let kernels = KernelCache::new(programs);
/// let program = Program::new("extern \"C\" __global__ void k() {}", ProgramOptions::default())?;
/// let kernel = kernels.kernel(&program, CodeKind::Cubin, "k")?; // disk hit or compile
/// let again = kernels.kernel(&program, CodeKind::Cubin, "k")?; // microseconds
/// # Ok::<(), cuda_safe::Error>(())
/// ```
pub struct KernelCache<C> {
    programs: C,
    loaded: RwLock<HashMap<CacheKey, ObjectCode>>,
}

impl<C: ProgramCache> KernelCache<C> {
    /// A kernel cache over the program cache `programs`.
    pub fn new(programs: C) -> Self {
        Self {
            programs,
            loaded: RwLock::new(HashMap::new()),
        }
    }

    /// The program cache behind this one.
    pub fn programs(&self) -> &C {
        &self.programs
    }

    /// `program` compiled for `target` and loaded: from this process's loaded code, else from
    /// the program cache, else compiled (and stored there).
    pub fn object_code(&self, program: &Program, target: CodeKind) -> Result<ObjectCode> {
        let key = program.cache_key(target)?;
        if let Some(code) = self
            .loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(code.clone());
        }
        let compiled = program.compile_cached(target, &self.programs)?;
        let code = ObjectCode::load(&compiled.program)?;
        let mut loaded = self.loaded.write().unwrap_or_else(PoisonError::into_inner);
        Ok(loaded.entry(key).or_insert(code).clone())
    }

    /// The kernel `name` (a symbol or a name expression) of `program` compiled for `target`.
    pub fn kernel(&self, program: &Program, target: CodeKind, name: &str) -> Result<Kernel> {
        self.object_code(program, target)?.get_kernel(name)
    }

    /// How many programs this process has loaded through the cache.
    pub fn loaded_count(&self) -> usize {
        self.loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Forgets the loaded code (kernels already handed out stay valid); the program cache is
    /// untouched.
    pub fn unload_all(&self) {
        self.loaded
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl<C: fmt::Debug> fmt::Debug for KernelCache<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loaded = self.loaded.read().map_or(0, |loaded| loaded.len());
        f.debug_struct("KernelCache")
            .field("programs", &self.programs)
            .field("loaded", &loaded)
            .finish()
    }
}
