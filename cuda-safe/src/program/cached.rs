//! A [`Program`]'s cache key, and compiling through a [`ProgramCache`].
//!
//! One request makes one plan (the flags) and at most one key (one pass over the source): a
//! key this program made for the same target and compiler version before is remembered, and
//! the plan a key needed is the one the compile or the hit uses. Only a recalled compiler
//! version that a miss proves wrong makes a second key, for the right version.

use super::compile::{Plan, Program};
use super::compiled::{CompiledProgram, Toolchain};
use super::compiler::NVRTC;
use super::pch::Pch;
use crate::cache::{CacheKey, ProgramCache};
use crate::code::{CodeKind, CompiledCode};
use crate::error::{Error, Result};
use crate::library_note::{KeyVersion, Learner, Notes};
use crate::trace::span;

/// How the compiler version of a key was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Learnt {
    /// NVRTC said so.
    Asked,
    /// A program cache's note said so for the NVRTC the loader would open; a miss checks it.
    Recalled,
    /// The caller said so ([`KernelCache::assume_nvrtc_version`](crate::KernelCache::assume_nvrtc_version));
    /// a miss fails if NVRTC disagrees.
    Assumed,
}

/// The compiler version a key is made with, how it was learnt, and the learner that checks it
/// (NVRTC's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keying<'a> {
    pub(crate) version: &'a str,
    pub(crate) learnt: Learnt,
    learner: &'static Learner,
}

impl<'a> Keying<'a> {
    /// NVRTC `version`, as the caller says ([`Learnt::Assumed`]).
    pub(crate) fn assumed(version: &'a str) -> Self {
        Self {
            version,
            learnt: Learnt::Assumed,
            learner: &NVRTC,
        }
    }
}

impl Keying<'static> {
    /// The version to key with if this process has it already ([`Learner::known`]).
    pub(crate) fn known() -> Option<Self> {
        NVRTC.known().map(|known| Self::of(&NVRTC, known))
    }

    /// What `learner` learnt.
    fn of(learner: &'static Learner, KeyVersion { version, recalled }: KeyVersion) -> Self {
        Self {
            version,
            learnt: if recalled {
                Learnt::Recalled
            } else {
                Learnt::Asked
            },
            learner,
        }
    }
}

/// A program fetched from a cache or compiled into it, and the key it is stored under (a
/// recalled compiler version that proved wrong is keyed again).
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) key: CacheKey,
    pub(crate) program: CompiledProgram,
}

/// A program's key for one target and compiler version, with the plan that making it needed
/// (none when the key was remembered): what [`Program::fetch_or_compile`] starts from.
pub(crate) struct Keyed {
    pub(crate) key: CacheKey,
    plan: Option<Plan>,
}

impl Program {
    /// The key a cache stores this program's compile for `target` under.
    ///
    /// It covers the compiler (`"nvrtc"` and `nvrtc_version`'s major.minor), the target kind
    /// and architecture, the program name, the source, the exact flags in order, the name
    /// expressions, the in-memory headers, the options' `caller_digest`, and for
    /// [`CudaHeaders::Toolkit`](crate::CudaHeaders::Toolkit) the toolkit folders' real paths
    /// and their files' sizes and modification times. PCH files are not covered: they change
    /// how fast NVRTC compiles, not what.
    ///
    /// The key names NVRTC's version, learnt as [`compile_cached`](Self::compile_cached) learns
    /// it, from the note of an on-disk cache open in this process
    /// ([`FileStreamProgramCache`](crate::cache::FileStreamProgramCache), a tiered cache's
    /// back included) on the NVRTC file the loader would open: open the cache first, and a
    /// fresh process's key, then its lookup, loads no NVRTC. Without such a note NVRTC is
    /// loaded and asked (about 5 ms in a fresh process) and the note written in the open
    /// on-disk caches for the next process; [`cache_key_for_compiler`](Self::cache_key_for_compiler)
    /// takes the version instead. A noted version is checked when this process loads NVRTC
    /// (a compile does): a wrong note is rewritten, and keys made with it name the wrong
    /// version (a key that no later process makes).
    ///
    #[doc = nvrtc_sys::api_doc!(nvrtcVersion)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] with include paths, pre-includes or
    /// [`Pch::Use`](crate::Pch::Use) (or a raw option that reads files) and no
    /// `caller_digest`: the key cannot see those files. [`Error::Load`] when NVRTC must be
    /// asked and cannot be loaded; as [`ProgramOptions::to_flags`](crate::ProgramOptions::to_flags)
    /// for [`CudaHeaders::Toolkit`](crate::CudaHeaders::Toolkit).
    ///
    /// ```no_run
    /// # #[cfg(feature = "disk-cache")]
    /// # fn main() -> cuda_safe::Result<()> {
    /// use cuda_safe::cache::{FileStreamProgramCache, ProgramCache};
    /// use cuda_safe::{CodeKind, Program, ProgramOptions};
    ///
    /// let cache = FileStreamProgramCache::with_default_root()?; // opened first: its note serves
    /// let program = Program::new("extern \"C\" __global__ void k() {}", ProgramOptions::default())?;
    /// let key = program.cache_key(CodeKind::Cubin)?;
    /// let code = match cache.get(&key)? {
    ///     Some(code) => code,
    ///     None => {
    ///         let compiled = program.compile(CodeKind::Cubin)?;
    ///         cache.put(&key, compiled.code())?;
    ///         compiled.code().clone()
    ///     }
    /// };
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "disk-cache"))]
    /// # fn main() {}
    /// ```
    #[doc(alias = "nvrtcVersion")]
    pub fn cache_key(&self, target: CodeKind) -> Result<CacheKey> {
        // Made before anything loads NVRTC, so that it describes the search that would.
        let search = NVRTC.fresh_search();
        let version = NVRTC.learn(Notes::Open, search.as_ref())?.version;
        self.cache_key_for_compiler(target, version)
    }

    /// The key for `target` as compiled by NVRTC `version` (`"13.0"`), without loading NVRTC.
    ///
    /// The key of the first version asked for is computed once per program and target, and
    /// remembered; a repeated request costs a comparison (the flags are not rendered again).
    pub fn cache_key_for_compiler(&self, target: CodeKind, version: &str) -> Result<CacheKey> {
        Ok(self.keyed(target, version)?.key)
    }

    /// The key for `target` and `version`: the remembered one (no plan made), else one made
    /// from a plan, which comes with it.
    pub(crate) fn keyed(&self, target: CodeKind, version: &str) -> Result<Keyed> {
        if let Some((known, key)) = self.keys[key_slot(target)].get()
            && known == version
        {
            return Ok(Keyed {
                key: *key,
                plan: None,
            });
        }
        let plan = self.plan(target)?;
        let key = self.remember_key(target, &plan, version)?;
        Ok(Keyed {
            key,
            plan: Some(plan),
        })
    }

    /// The key for `plan` and `version`, made (one pass over the source) and remembered if
    /// this target has none yet.
    fn remember_key(&self, target: CodeKind, plan: &Plan, version: &str) -> Result<CacheKey> {
        let key = self.key_for(target, plan, version)?;
        let (known, remembered) =
            self.keys[key_slot(target)].get_or_init(|| (version.to_owned(), key));
        Ok(if known == version { *remembered } else { key })
    }

    /// Compiles to `target` through `cache`: a hit returns the stored program (with an empty
    /// log) and compiles nothing; a miss compiles and stores the result.
    ///
    /// The key names NVRTC's version. A fresh process learns it from `cache`'s note on the
    /// NVRTC library file the loader would open, without loading NVRTC (a hit then loads no
    /// NVRTC at all, and stores nothing); where there is no such note, or the file, its
    /// directory or the environment changed, NVRTC is loaded and asked, and the note written.
    /// A miss loads NVRTC anyway and checks the noted version against it first.
    ///
    /// A cache that fails to read or write is logged as a warning and treated as a miss, never
    /// failing the compile. A failed compile is never stored.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for [`Pch::Create`](crate::Pch::Create): a hit would create
    /// no PCH file. Then as [`Program::cache_key`], then as [`Program::compile`].
    ///
    /// ```no_run
    /// use cuda_safe::cache::InMemoryProgramCache;
    /// use cuda_safe::{CodeKind, Program, ProgramOptions};
    ///
    /// let cache = InMemoryProgramCache::new(64 << 20);
    /// let program = Program::new("extern \"C\" __global__ void k() {}", ProgramOptions::default())?;
    /// let first = program.compile_cached(CodeKind::Cubin, &cache)?; // compiles
    /// let again = program.compile_cached(CodeKind::Cubin, &cache)?; // a hit
    /// assert_eq!(first.code(), again.code());
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    pub fn compile_cached(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
    ) -> Result<CompiledProgram> {
        Ok(self.fetch_learning(target, cache, &|_| Ok(()))?.program)
    }

    /// [`Program::fetch_or_compile`] with NVRTC's version learnt as
    /// [`compile_cached`](Self::compile_cached) documents: known in this process, else from
    /// `cache`'s note, else from NVRTC itself.
    pub(crate) fn fetch_learning(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
        prepare: &dyn Fn(&CompiledCode) -> Result<()>,
    ) -> Result<Fetched> {
        self.fetch_learning_from(&NVRTC, target, cache, prepare)
    }

    /// [`Program::fetch_learning`] with the version learnt by `learner`.
    fn fetch_learning_from(
        &self,
        learner: &'static Learner,
        target: CodeKind,
        cache: &dyn ProgramCache,
        prepare: &dyn Fn(&CompiledCode) -> Result<()>,
    ) -> Result<Fetched> {
        let keying = match learner.known() {
            Some(known) => Keying::of(learner, known),
            None => {
                self.refuse_uncacheable()?;
                // Made before anything loads NVRTC, so that it describes the search that would.
                let search = learner.fresh_search();
                Keying::of(learner, learner.learn(Notes::In(cache), search.as_ref())?)
            }
        };
        self.fetch_or_compile(target, cache, keying, prepare, None)
    }

    /// Refuses what a cache hit cannot do: create a PCH file ([`Pch::Create`]).
    fn refuse_uncacheable(&self) -> Result<()> {
        match &self.options().pch {
            Some(Pch::Create(file)) => Err(Error::invalid_argument(format!(
                "Pch::Create({file:?}) through a program cache: a hit compiles nothing and would \
                 create no PCH; create it with Program::compile, then cache the compiles that \
                 use it"
            ))),
            _ => Ok(()),
        }
    }

    /// [`Program::compile_cached`] with the compiler version given.
    #[cfg(test)]
    fn through_cache(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
        version: &str,
    ) -> Result<CompiledProgram> {
        let keying = Keying {
            version,
            learnt: Learnt::Asked,
            learner: &NVRTC,
        };
        Ok(self
            .fetch_or_compile(target, cache, keying, &|_| Ok(()), None)?
            .program)
    }

    /// The entry of `cache` for this program keyed with `keying` (with an empty log), or, on a
    /// miss, this program compiled to `target`, passed to `prepare` (which may refuse it) and
    /// stored there; `keyed` is the key for `keying`'s version if the caller made it already.
    ///
    /// A miss checks the key's compiler version first: a recalled one against NVRTC's own
    /// (a wrong note is rewritten and the program keyed again, and looked up again), an
    /// assumed one likewise, failing with [`Error::NvrtcVersionMismatch`] if NVRTC disagrees,
    /// so no code is stored under a key that misnames its compiler. A cache that fails to read
    /// or write is logged as a warning and treated as a miss; a failed compile is returned and
    /// never stored.
    pub(crate) fn fetch_or_compile(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
        keying: Keying<'_>,
        prepare: &dyn Fn(&CompiledCode) -> Result<()>,
        keyed: Option<Keyed>,
    ) -> Result<Fetched> {
        let span = span!(
            DEBUG,
            "compile_cached",
            program = %self.options().name,
            %target,
            hit = tracing::field::Empty
        );
        self.refuse_uncacheable()?;
        let Keyed { mut key, plan } = match keyed {
            Some(keyed) => keyed,
            None => self.keyed(target, keying.version)?,
        };
        let plan = match plan {
            Some(plan) => plan,
            None => self.plan(target)?,
        };
        if let Some(code) = lookup(cache, &key) {
            span.record_hit(true);
            let program = CompiledProgram::cached(code, plan.flags, Toolchain::Nvrtc);
            return Ok(Fetched { key, program });
        }
        match keying.learnt {
            Learnt::Asked => {}
            Learnt::Recalled => {
                if let Some(actual) = keying.learner.check(cache, keying.version)? {
                    key = self.remember_key(target, &plan, actual)?;
                    if let Some(code) = lookup(cache, &key) {
                        span.record_hit(true);
                        let program = CompiledProgram::cached(code, plan.flags, Toolchain::Nvrtc);
                        return Ok(Fetched { key, program });
                    }
                }
            }
            Learnt::Assumed => {
                let actual = keying.learner.answer()?;
                if actual != keying.version {
                    return Err(Error::NvrtcVersionMismatch {
                        assumed: keying.version.into(),
                        loaded: actual.into(),
                    });
                }
            }
        }
        span.record_hit(false);
        let compiled = self.compile_with(target, plan.flags)?;
        prepare(compiled.code())?;
        if let Err(error) = cache.put(&key, compiled.code()) {
            // Counted in the cache's stats (`failed_stores`) by the cache itself.
            log::warn!("cuda-safe: storing program cache entry {key} failed: {error}");
        }
        Ok(Fetched {
            key,
            program: compiled,
        })
    }

    /// The key for `plan`, with the compiler version given: one pass over the source.
    fn key_for(&self, target: CodeKind, plan: &Plan, version: &str) -> Result<CacheKey> {
        #[cfg(test)]
        counted::bump(&counted::DIGESTS);
        let options = self.options();
        let mut builder = CacheKey::builder(self.source())
            .compiler("nvrtc", version)
            .target(target, &plan.arch)
            .program_name(&options.name)
            .options(&plan.flags)
            .name_expressions(self.name_expressions())
            .headers(
                options
                    .headers
                    .iter()
                    .map(|(name, contents)| (name.as_str(), contents.as_str())),
            );
        if let Some(digest) = &options.caller_digest {
            builder = builder.caller_digest(digest);
        }
        let headers = self.resolved_headers()?;
        if let Some(digest) = &headers.digest {
            builder = builder.seen_files(&headers.flags, digest);
        }
        builder.build()
    }
}

/// The index of `target`'s remembered key.
fn key_slot(target: CodeKind) -> usize {
    match target {
        CodeKind::Ptx => 0,
        CodeKind::Cubin => 1,
        CodeKind::LtoIr => 2,
        CodeKind::Fatbin => 3,
    }
}

/// The entry under `key`, or `None` for a miss or a cache that failed to read (logged).
fn lookup(cache: &dyn ProgramCache, key: &CacheKey) -> Option<CompiledCode> {
    cache.get(key).unwrap_or_else(|error| {
        log::warn!("cuda-safe: reading program cache entry {key} failed, compiling: {error}");
        None
    })
}

/// How many plans and keys this thread made (tests count a request's work).
#[cfg(test)]
pub(crate) mod counted {
    use std::cell::Cell;
    use std::thread::LocalKey;

    thread_local! {
        /// Plans made ([`Program::plan`](super::Program::plan)).
        pub(crate) static PLANS: Cell<usize> = const { Cell::new(0) };
        /// Keys made, each one pass over the source.
        pub(crate) static DIGESTS: Cell<usize> = const { Cell::new(0) };
    }

    /// Counts one more on this thread.
    pub(crate) fn bump(counter: &'static LocalKey<Cell<usize>>) {
        counter.with(|count| count.set(count.get() + 1));
    }

    /// The plans and keys made on this thread since the last call.
    pub(crate) fn take() -> (usize, usize) {
        (PLANS.with(|c| c.replace(0)), DIGESTS.with(|c| c.replace(0)))
    }
}

#[cfg(test)]
mod tests;
