//! [`KernelCache`]: the per-process map from a program's key to its loaded code and kernels, in
//! front of a [`ProgramCache`] of compiled bytes.
//!
//! ```no_run
//! use cuda_safe::cache::InMemoryProgramCache;
//! use cuda_safe::{CodeKind, KernelCache, Program, ProgramOptions};
//!
//! let kernels = KernelCache::new(InMemoryProgramCache::new(64 << 20));
//! let program = Program::new("extern \"C\" __global__ void k() {}", ProgramOptions::default())?;
//! let kernel = kernels.kernel(&program, CodeKind::Cubin, "k")?; // compiled, loaded, looked up
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};

use crate::cache::{CacheKey, InMemoryProgramCache, ProgramCache};
use crate::code::CodeKind;
use crate::error::Result;
use crate::kernel::Kernel;
use crate::module::{ObjectCode, check_compiled};
use crate::program::{CompiledProgram, Keying, Program};
use crate::trace::span;

/// Launchable kernels for programs, compiling and loading each program at most once per
/// process and looking each kernel up at most once per loaded program.
///
/// A request first looks in this process's loaded programs (keyed by the program's
/// [`cache_key`](Program::cache_key), which the program computes once), then in the program
/// cache `C` (in memory, on disk, or both, [`TieredProgramCache`](crate::cache::TieredProgramCache)),
/// and compiles only when both miss. The key's NVRTC version comes from the program cache's
/// note on the NVRTC file the loader would open (see
/// [`Program::compile_cached`](Program::compile_cached)), so a disk hit in a fresh process
/// loads no NVRTC; a miss checks the note against NVRTC before compiling. Compiled code is
/// checked as an image before it is stored, and an on-disk entry verified against its
/// checksum is not walked again when it loads. A repeated request therefore neither hashes the source
/// again, nor reloads the code, nor asks the driver for the kernel: it is a lookup in this
/// cache's maps, and it returns a clone of the same [`Kernel`] (same handle, and one parameter
/// list shared by the clones, read on the first launch).
///
/// ```no_run
/// # #[cfg(feature = "disk-cache")]
/// # fn main() -> cuda_safe::Result<()> {
/// use cuda_safe::cache::{FileStreamProgramCache, InMemoryProgramCache, TieredProgramCache};
/// use cuda_safe::{CodeKind, KernelCache, Program, ProgramOptions};
///
/// let programs = TieredProgramCache::new(
///     InMemoryProgramCache::new(64 << 20),
///     FileStreamProgramCache::with_default_root()?,
/// );
/// let kernels = KernelCache::new(programs);
/// let program = Program::new("extern \"C\" __global__ void k() {}", ProgramOptions::default())?;
/// let kernel = kernels.kernel(&program, CodeKind::Cubin, "k")?; // disk hit or compile
/// let again = kernels.kernel(&program, CodeKind::Cubin, "k")?; // no driver call
/// assert_eq!(kernel.as_raw(), again.as_raw());
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "disk-cache"))]
/// # fn main() {}
/// ```
pub struct KernelCache<C = InMemoryProgramCache> {
    programs: C,
    loaded: RwLock<HashMap<CacheKey, Arc<Loaded>>>,
    assumed_compiler: Option<String>,
}

/// One loaded program and the kernels looked up in it so far, by the name asked for.
struct Loaded {
    code: ObjectCode,
    kernels: RwLock<HashMap<Box<str>, Kernel>>,
}

impl Loaded {
    /// `program` loaded, with no kernel looked up yet.
    fn of(program: &CompiledProgram) -> Result<Self> {
        Ok(Self {
            code: program.load()?,
            kernels: RwLock::new(HashMap::new()),
        })
    }
}

impl Default for KernelCache<InMemoryProgramCache> {
    /// A kernel cache over [`InMemoryProgramCache::default`].
    fn default() -> Self {
        Self::new(InMemoryProgramCache::default())
    }
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
    /// request fails with [`Error::NvrtcVersionMismatch`](crate::Error::NvrtcVersionMismatch)
    /// rather than storing code under a key that misnames its compiler.
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
    ///
    /// # Errors
    ///
    /// As [`Program::cache_key`], [`Program::compile`] and
    /// [`ObjectCode::from_compiled`]; with [`assume_nvrtc_version`](Self::assume_nvrtc_version),
    /// [`Error::NvrtcVersionMismatch`](crate::Error::NvrtcVersionMismatch) when a miss finds
    /// another NVRTC loaded. A program cache that fails is only logged.
    pub fn object_code(&self, program: &Program, target: CodeKind) -> Result<ObjectCode> {
        Ok(self.loaded(program, target)?.code.clone())
    }

    /// The kernel `name` (a symbol or a name expression) of `program` compiled for `target`.
    ///
    /// The first request for a name looks it up (`cuLibraryGetKernel`); later ones return a
    /// clone of that same kernel without calling the driver.
    ///
    /// # Errors
    ///
    /// As [`object_code`](Self::object_code), then as [`ObjectCode::get_kernel`].
    pub fn kernel(&self, program: &Program, target: CodeKind, name: &str) -> Result<Kernel> {
        let loaded = self.loaded(program, target)?;
        get_or_try_insert(&loaded.kernels, name, || {
            let kernel = loaded.code.get_kernel(name)?;
            Ok((Box::from(name), kernel))
        })
    }

    /// How many programs this process has loaded through the cache.
    pub fn loaded_count(&self) -> usize {
        self.loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Forgets the loaded code and kernels (kernels already handed out stay valid); the
    /// program cache is untouched.
    pub fn unload_all(&self) {
        self.loaded
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The loaded program for `program` and `target`, loading (and compiling) it on a miss.
    fn loaded(&self, program: &Program, target: CodeKind) -> Result<Arc<Loaded>> {
        let _span = span!(TRACE, "kernel_cache_get", program = %program.options().name, %target);
        let keying = match &self.assumed_compiler {
            Some(version) => Keying::assumed(version),
            None => match Keying::known() {
                Some(keying) => keying,
                // The first keying of the process: nothing of it is loaded yet (every keying
                // after it knows the version), so the lookup comes first.
                None => {
                    let fetched =
                        program.fetch_learning(target, &self.programs, &check_compiled)?;
                    let key = fetched.key;
                    return get_or_try_insert(&self.loaded, &key, || {
                        Ok((key, Arc::new(Loaded::of(&fetched.program)?)))
                    });
                }
            },
        };
        // One plan and one key for the request: the program cache's lookup takes them.
        let keyed = program.keyed(target, keying.version)?;
        let key = keyed.key;
        get_or_try_insert(&self.loaded, &key, || {
            let fetched = program.fetch_or_compile(
                target,
                &self.programs,
                keying,
                &check_compiled,
                Some(keyed),
            )?;
            Ok((fetched.key, Arc::new(Loaded::of(&fetched.program)?)))
        })
    }
}

/// The value under `key` in `map`; on a miss, the key and value `make` returns, stored.
///
/// `make` runs without the lock held. If another thread stored a value under the key
/// meanwhile, that one is kept and returned (and `make`'s dropped), so every caller gets the
/// same value. A failed `make` stores nothing.
fn get_or_try_insert<K, Q, V>(
    map: &RwLock<HashMap<K, V>>,
    key: &Q,
    make: impl FnOnce() -> Result<(K, V)>,
) -> Result<V>
where
    K: Borrow<Q> + Eq + Hash,
    Q: Eq + Hash + ?Sized,
    V: Clone,
{
    if let Some(value) = map.read().unwrap_or_else(PoisonError::into_inner).get(key) {
        return Ok(value.clone());
    }
    let (owned, value) = make()?;
    let mut map = map.write().unwrap_or_else(PoisonError::into_inner);
    Ok(map.entry(owned).or_insert(value).clone())
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::HashMap;
    use std::sync::{Arc, RwLock};

    use super::{KernelCache, get_or_try_insert};
    use crate::cache::{CacheKey, InMemoryProgramCache, ProgramCache};
    use crate::code::{CodeKind, CompiledCode};
    use crate::error::{Error, Result};
    use crate::program::{Program, ProgramOptions};

    #[test]
    fn a_stored_value_is_returned_without_making_it_again() {
        let map: RwLock<HashMap<Box<str>, Arc<u32>>> = RwLock::new(HashMap::new());
        let made = Cell::new(0);
        let make = |value: u32| {
            made.set(made.get() + 1);
            Ok((Box::from("saxpy"), Arc::new(value)))
        };
        let first = get_or_try_insert(&map, "saxpy", || make(1)).unwrap();
        let second = get_or_try_insert(&map, "saxpy", || make(2)).unwrap();
        assert_eq!(made.get(), 1);
        // The very same value (not an equal copy) comes back, looked up by `&str`.
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(*second, 1);
        let other = get_or_try_insert(&map, "scale<float>", || {
            Ok::<_, Error>((Box::from("scale<float>"), Arc::new(3)))
        })
        .unwrap();
        assert_eq!(*other, 3);
        assert_eq!(map.read().unwrap().len(), 2);
    }

    #[test]
    fn a_failure_is_returned_and_not_stored() {
        let map: RwLock<HashMap<CacheKey, u32>> = RwLock::new(HashMap::new());
        let key = CacheKey::from_bytes([1; 32]);
        let error = get_or_try_insert(&map, &key, || -> Result<(CacheKey, u32)> {
            Err(Error::invalid_argument("no such kernel"))
        })
        .unwrap_err();
        assert!(error.to_string().contains("no such kernel"), "{error}");
        assert!(map.read().unwrap().is_empty());
        assert_eq!(get_or_try_insert(&map, &key, || Ok((key, 7))).unwrap(), 7);
    }

    #[test]
    fn the_first_value_stored_wins_a_race() {
        let map: RwLock<HashMap<CacheKey, Arc<&str>>> = RwLock::new(HashMap::new());
        let key = CacheKey::from_bytes([2; 32]);
        let winner = Arc::new("winner");
        // Another thread stores its value while this one is making its own (no lock held).
        let got = get_or_try_insert(&map, &key, || {
            map.write().unwrap().insert(key, winner.clone());
            Ok((key, Arc::new("loser")))
        })
        .unwrap();
        assert!(Arc::ptr_eq(&got, &winner));
        assert!(Arc::ptr_eq(&map.read().unwrap()[&key], &winner));
    }

    fn program() -> Program {
        let options = ProgramOptions {
            arch: Some("90".into()),
            ..Default::default()
        };
        Program::new("extern \"C\" __global__ void k() {}", options).unwrap()
    }

    #[test]
    fn a_request_that_cannot_compile_loads_nothing() {
        // No NVRTC 0.0 exists: the miss fails (on NVRTC's load, or on its version), and
        // nothing is stored or loaded.
        let kernels =
            KernelCache::new(InMemoryProgramCache::new(1 << 20)).assume_nvrtc_version(0, 0);
        let error = kernels
            .kernel(&program(), CodeKind::Cubin, "k")
            .unwrap_err();
        assert!(
            matches!(&error, Error::Load(_) | Error::NvrtcVersionMismatch { .. }),
            "{error}"
        );
        assert_eq!(kernels.loaded_count(), 0);
        let stats = kernels.programs().stats().unwrap();
        assert_eq!((stats.misses, stats.insertions), (1, 0), "{stats:?}");
    }

    #[test]
    fn a_program_cache_hit_is_used_under_the_assumed_version() {
        // The stored bytes are no real CUBIN: loading them fails (with or without a driver),
        // but only after the program cache was asked under the assumed version's key.
        let program = program();
        let key = program
            .cache_key_for_compiler(CodeKind::Cubin, "0.0")
            .unwrap();
        let programs = InMemoryProgramCache::new(1 << 20);
        let stored = CompiledCode::new(CodeKind::Cubin, b"not an ELF".to_vec(), Vec::new());
        programs.put(&key, &stored).unwrap();
        let kernels = KernelCache::new(programs).assume_nvrtc_version(0, 0);
        assert!(kernels.object_code(&program, CodeKind::Cubin).is_err());
        assert_eq!(kernels.loaded_count(), 0);
        assert_eq!(kernels.programs().stats().unwrap().hits, 1);
    }

    /// A kernel cache's request with an assumed version makes one plan and one key (one pass
    /// over the source), the key the program cache's lookup takes.
    #[test]
    fn a_request_makes_one_plan_and_one_key() {
        let options = ProgramOptions {
            arch: Some("90".into()),
            ..Default::default()
        };
        let program = Program::new(
            "template <class T> __global__ void k(T* x) { *x *= 2; }",
            options,
        )
        .unwrap();
        let programs = InMemoryProgramCache::new(1 << 20);
        crate::program::counted::take();
        let assumed = KernelCache::new(programs).assume_nvrtc_version(12, 9);
        assert!(
            assumed.object_code(&program, CodeKind::Ptx).is_err(),
            "no NVRTC or no driver here"
        );
        assert_eq!(crate::program::counted::take(), (1, 1));
    }
}
