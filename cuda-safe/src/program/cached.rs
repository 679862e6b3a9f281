//! A [`Program`]'s cache key, and compiling through a [`ProgramCache`].

use super::compile::{Plan, Program};
use super::compiled::{CompiledProgram, Toolchain};
use super::compiler::{NVRTC, compiler_version};
use super::pch::Pch;
use crate::cache::{CacheKey, ProgramCache};
use crate::code::{CodeKind, CompiledCode};
use crate::error::{Error, Result};
use crate::library_note::{KeyVersion, noted};
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

/// The compiler version a key is made with, and how it was learnt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keying<'a> {
    pub(crate) version: &'a str,
    pub(crate) learnt: Learnt,
}

impl Keying<'static> {
    /// The version to key with if this process has it already ([`Learner::known`]).
    ///
    /// [`Learner::known`]: crate::library_note::Learner::known
    pub(crate) fn known() -> Option<Self> {
        NVRTC.known().map(Self::from)
    }
}

impl From<KeyVersion> for Keying<'static> {
    fn from(KeyVersion { version, recalled }: KeyVersion) -> Self {
        Self {
            version,
            learnt: if recalled {
                Learnt::Recalled
            } else {
                Learnt::Asked
            },
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
    /// Learning NVRTC's version loads NVRTC (about 5 ms in a fresh process);
    /// [`cache_key_for_compiler`](Self::cache_key_for_compiler) takes the version instead.
    ///
    #[doc = nvrtc_sys::api_doc!(nvrtcVersion)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] with include paths, pre-includes or
    /// [`Pch::Use`](crate::Pch::Use) (or a raw option that reads files) and no
    /// `caller_digest`: the key cannot see those files. [`Error::Load`] when NVRTC cannot be
    /// loaded; as [`ProgramOptions::to_flags`](crate::ProgramOptions::to_flags) for
    /// [`CudaHeaders::Toolkit`](crate::CudaHeaders::Toolkit).
    #[doc(alias = "nvrtcVersion")]
    pub fn cache_key(&self, target: CodeKind) -> Result<CacheKey> {
        self.cache_key_for_compiler(target, compiler_version()?)
    }

    /// The key for `target` as compiled by NVRTC `version` (`"13.0"`), without loading NVRTC.
    ///
    /// The key of the first version asked for is computed once per program and target, and
    /// remembered; a repeated request costs a comparison (the flags are not rendered again).
    pub fn cache_key_for_compiler(&self, target: CodeKind, version: &str) -> Result<CacheKey> {
        self.remembered_key(target, None, version)
    }

    /// [`Program::cache_key_for_compiler`], with the plan when the caller has it already.
    fn remembered_key(
        &self,
        target: CodeKind,
        plan: Option<&Plan>,
        version: &str,
    ) -> Result<CacheKey> {
        let slot = &self.keys[key_slot(target)];
        if let Some((known, key)) = slot.get()
            && known == version
        {
            return Ok(*key);
        }
        let key = match plan {
            Some(plan) => self.key_for(target, plan, version)?,
            None => self.key_for(target, &self.plan(target)?, version)?,
        };
        let (known, remembered) = slot.get_or_init(|| (version.to_owned(), key));
        Ok(if known == version { *remembered } else { key })
    }

    /// Compiles to `target` through `cache`: a hit returns the stored program (with an empty
    /// log) and compiles nothing; a miss compiles and stores the result.
    ///
    /// The key names NVRTC's version. A fresh process learns it from `cache`'s note on the
    /// NVRTC library file the loader would open, without loading NVRTC (a hit then loads no
    /// NVRTC at all); where there is no such note, or the file, its directory or the
    /// environment changed, NVRTC is loaded and asked, and the note written. A miss loads
    /// NVRTC anyway and checks the noted version against it first.
    ///
    /// A cache that keeps noted entries (an on-disk one: [`ProgramCache::get_noted`]) is given
    /// the program a second time with the note inside, so that the first request of a fresh
    /// process reads one file; a hit that found no such copy stores it.
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
    /// [`compile_cached`](Self::compile_cached) documents: known in this process, else from a
    /// noted entry of `cache` in one read ([`noted`]), else from its note or NVRTC itself. A
    /// hit found without the noted entry is stored noted for the next process.
    pub(crate) fn fetch_learning(
        &self,
        target: CodeKind,
        cache: &dyn ProgramCache,
        prepare: &dyn Fn(&CompiledCode) -> Result<()>,
    ) -> Result<Fetched> {
        if let Some(keying) = Keying::known() {
            return self.fetch_or_compile(target, cache, keying, prepare);
        }
        self.refuse_uncacheable()?;
        // Made before anything loads NVRTC, so that it describes the search that would.
        let search = NVRTC.fresh_search();
        if let Some(search) = &search {
            let span = span!(
                DEBUG,
                "compile_cached_noted",
                program = %self.options().name,
                %target,
                hit = tracing::field::Empty
            );
            let plan = self.plan(target)?;
            let label = noted::label(search);
            let noted_key = self.key_for(target, &plan, &label)?;
            let found = noted::lookup(cache, &noted_key, search, target)
                .filter(|(note, version, _)| NVRTC.recall(search, note, version.clone()));
            if let Some((_, version, code)) = found {
                span.record_hit(true);
                let key = self.remembered_key(target, Some(&plan), &version)?;
                let program = CompiledProgram::cached(code, plan.flags, Toolchain::Nvrtc);
                return Ok(Fetched { key, program });
            }
        }
        let keying = Keying::from(NVRTC.learn(cache, search.as_ref())?);
        let fetched = self.fetch_or_compile(target, cache, keying, prepare)?;
        if fetched.program.from_cache() {
            let plan = self.plan(target)?;
            self.store_noted(target, &plan, cache, fetched.program.code(), &fetched.key);
        }
        Ok(fetched)
    }

    /// Stores `code`, found or compiled under `key`, in `cache` as this program's noted entry
    /// for `target`, if this process has a note on NVRTC naming the version `key` names
    /// ([`noted::store`]: best effort).
    fn store_noted(
        &self,
        target: CodeKind,
        plan: &Plan,
        cache: &dyn ProgramCache,
        code: &CompiledCode,
        key: &CacheKey,
    ) {
        NVRTC.store_noted(cache, code, key, |field| {
            self.remembered_key(target, Some(plan), field)
        });
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
        };
        Ok(self
            .fetch_or_compile(target, cache, keying, &|_| Ok(()))?
            .program)
    }

    /// The entry of `cache` for this program keyed with `keying` (with an empty log), or, on a
    /// miss, this program compiled to `target`, passed to `prepare` (which may refuse it) and
    /// stored there.
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
    ) -> Result<Fetched> {
        let span = span!(
            DEBUG,
            "compile_cached",
            program = %self.options().name,
            %target,
            hit = tracing::field::Empty
        );
        self.refuse_uncacheable()?;
        let plan = self.plan(target)?;
        let mut key = self.remembered_key(target, Some(&plan), keying.version)?;
        if let Some(code) = lookup(cache, &key) {
            span.record_hit(true);
            let program = CompiledProgram::cached(code, plan.flags, Toolchain::Nvrtc);
            return Ok(Fetched { key, program });
        }
        match keying.learnt {
            Learnt::Asked => {}
            Learnt::Recalled => {
                if let Some(actual) = NVRTC.check(cache, keying.version)? {
                    key = self.remembered_key(target, Some(&plan), actual)?;
                    if let Some(code) = lookup(cache, &key) {
                        span.record_hit(true);
                        let program = CompiledProgram::cached(code, plan.flags, Toolchain::Nvrtc);
                        return Ok(Fetched { key, program });
                    }
                }
            }
            Learnt::Assumed => {
                let actual = compiler_version()?;
                if actual != keying.version {
                    return Err(Error::NvrtcVersionMismatch {
                        assumed: keying.version.into(),
                        loaded: actual.into(),
                    });
                }
            }
        }
        span.record_hit(false);
        let compiled = self.compile_with(target, plan.flags.clone())?;
        prepare(compiled.code())?;
        if let Err(error) = cache.put(&key, compiled.code()) {
            // Counted in the cache's stats (`failed_stores`) by the cache itself.
            log::warn!("cuda-safe: storing program cache entry {key} failed: {error}");
        }
        self.store_noted(target, &plan, cache, compiled.code(), &key);
        Ok(Fetched {
            key,
            program: compiled,
        })
    }

    /// The key for `plan`, with the compiler version given.
    fn key_for(&self, target: CodeKind, plan: &Plan, version: &str) -> Result<CacheKey> {
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

#[cfg(test)]
mod tests;
