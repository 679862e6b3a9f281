//! [`KernelCache`]: the per-process map from a program's key to its loaded code, in front of a
//! [`ProgramCache`] of compiled bytes.

use std::collections::HashMap;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use super::{CacheKey, CachedProgram, CodeKind, ProgramCache};
use crate::{Error, Kernel, ObjectCode, Program, Result};

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
    assumed_compiler: Option<String>,
}

impl<C: ProgramCache> KernelCache<C> {
    /// A kernel cache over the program cache `programs`.
    pub fn new(programs: C) -> Self {
        Self {
            programs,
            loaded: RwLock::new(HashMap::new()),
            assumed_compiler: None,
        }
    }

    /// Keys programs as compiled by NVRTC `major.minor` without loading NVRTC to ask, so a hit
    /// in a fresh process skips NVRTC's load (about 5 ms). For deployments that pin their
    /// NVRTC: on a miss NVRTC is loaded to compile, and if its version is another one the
    /// request fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument) rather
    /// than storing code under a key that misnames its compiler.
    pub fn assume_nvrtc_version(mut self, major: u32, minor: u32) -> Self {
        self.assumed_compiler = Some(format!("{major}.{minor}"));
        self
    }

    /// The program cache behind this one.
    pub fn programs(&self) -> &C {
        &self.programs
    }

    /// `program` compiled for `target` and loaded: from this process's loaded code, else from
    /// the program cache, else compiled (and stored there).
    pub fn object_code(&self, program: &Program, target: CodeKind) -> Result<ObjectCode> {
        let key = match &self.assumed_compiler {
            Some(version) => program.cache_key_for_compiler(target, version)?,
            None => program.cache_key(target)?,
        };
        if let Some(code) = self
            .loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(code.clone());
        }
        let code = ObjectCode::load(&self.fetch_or_compile(program, target, &key)?)?;
        let mut loaded = self.loaded.write().unwrap_or_else(PoisonError::into_inner);
        Ok(loaded.entry(key).or_insert(code).clone())
    }

    /// The compiled program under `key`: from the program cache, else compiled and stored.
    fn fetch_or_compile(
        &self,
        program: &Program,
        target: CodeKind,
        key: &CacheKey,
    ) -> Result<CachedProgram> {
        match self.programs.get(key) {
            Ok(Some(cached)) => return Ok(cached),
            Ok(None) => {}
            Err(error) => log::warn!("cuda-safe: reading program cache entry {key}: {error}"),
        }
        if let Some(assumed) = &self.assumed_compiler {
            let actual = crate::program::compiler_version()?;
            if &actual != assumed {
                return Err(Error::invalid_argument(format!(
                    "the kernel cache assumes NVRTC {assumed}, but NVRTC {actual} is loaded"
                )));
            }
        }
        let compiled = program.compile(target)?.program;
        if let Err(error) = self.programs.put(key, &compiled) {
            log::warn!("cuda-safe: storing program cache entry {key}: {error}");
        }
        Ok(compiled)
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
            .field("assumed_compiler", &self.assumed_compiler)
            .finish()
    }
}
