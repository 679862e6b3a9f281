//! A [`Program`]'s cache key, and compiling through a [`ProgramCache`].

use super::compile::{Plan, Program};
use super::compiled::{CompiledProgram, Toolchain};
use super::compiler::{KeyCompiler, check_recalled, compiler_version, key_compiler};
use super::pch::Pch;
use crate::cache::{CacheKey, ProgramCache};
use crate::code::{CodeKind, CompiledCode};
use crate::error::{Error, Result};
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
    /// The version to key with through `cache`, as [`key_compiler`] learns it.
    pub(crate) fn through(cache: &dyn ProgramCache) -> Result<Self> {
        let KeyCompiler { version, asked } = key_compiler(cache)?;
        Ok(Self {
            version,
            learnt: if asked {
                Learnt::Asked
            } else {
                Learnt::Recalled
            },
        })
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
        self.refuse_uncacheable()?;
        let keying = Keying::through(cache)?;
        Ok(self
            .fetch_or_compile(target, cache, keying, &|_| Ok(()))?
            .program)
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
                if let Some(actual) = check_recalled(cache, keying.version)? {
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
mod tests {
    use super::*;
    use crate::cache::{CacheStats, InMemoryProgramCache};
    use crate::code::CompiledCode;
    use crate::program::version::nvrtc_version;
    use crate::program::{CppStandard, ProgramOptions};

    const SOURCE: &str = "template <class T> __global__ void k(T* x) { *x *= 2; }";

    fn options() -> ProgramOptions {
        ProgramOptions {
            arch: Some("90".into()),
            ..Default::default()
        }
    }

    fn key(program: &Program, target: CodeKind) -> Result<CacheKey> {
        program.key_for(target, &program.plan(target)?, "12.9")
    }

    fn key_of(options: ProgramOptions, expressions: &[&str]) -> CacheKey {
        let mut program = Program::new(SOURCE, options).unwrap();
        for expression in expressions {
            program.add_name_expression(expression).unwrap();
        }
        key(&program, CodeKind::Cubin).unwrap()
    }

    #[test]
    fn the_key_changes_with_every_input() {
        let base = key_of(options(), &["k<float>"]);
        assert_eq!(base, key_of(options(), &["k<float>"]), "deterministic");
        let variants = [
            key_of(options(), &[]),
            key_of(options(), &["k<double>"]),
            key_of(options(), &["k<float>", "k<int>"]),
            key_of(
                ProgramOptions {
                    std: Some(CppStandard::Cpp20),
                    ..options()
                },
                &["k<float>"],
            ),
            key_of(options().define_as("N", "4"), &["k<float>"]),
            key_of(options().define_as("N", "5"), &["k<float>"]),
            key_of(
                ProgramOptions {
                    fast_math: true,
                    ..options()
                },
                &["k<float>"],
            ),
            key_of(
                ProgramOptions {
                    arch: Some("sm_80".into()),
                    ..Default::default()
                },
                &["k<float>"],
            ),
            key_of(
                ProgramOptions {
                    name: "other.cu".into(),
                    ..options()
                },
                &["k<float>"],
            ),
            key_of(options().header("a.h", "#define A 1"), &["k<float>"]),
            key_of(options().header("a.h", "#define A 2"), &["k<float>"]),
        ];
        for (index, variant) in variants.iter().enumerate() {
            assert_ne!(*variant, base, "variant {index}");
            for other in &variants[index + 1..] {
                assert_ne!(variant, other, "variant {index}");
            }
        }
    }

    #[test]
    fn the_target_and_compiler_version_are_in_the_key() {
        let program = Program::new(SOURCE, options()).unwrap();
        let plan = program.plan(CodeKind::Cubin).unwrap();
        let keys = [
            key(&program, CodeKind::Ptx).unwrap(),
            key(&program, CodeKind::Cubin).unwrap(),
            key(&program, CodeKind::LtoIr).unwrap(),
            program.key_for(CodeKind::Cubin, &plan, "13.0").unwrap(),
        ];
        for (index, first) in keys.iter().enumerate() {
            for second in &keys[index + 1..] {
                assert_ne!(first, second);
            }
        }
    }

    #[test]
    fn name_expression_order_does_not_change_the_key() {
        assert_eq!(
            key_of(options(), &["k<float>", "k<int>"]),
            key_of(options(), &["k<int>", "k<float>"])
        );
    }

    #[test]
    fn include_paths_and_pre_includes_need_a_caller_digest() {
        for needs_digest in [
            options().include_path("/opt/include"),
            options().pre_include("prelude.h"),
            options().option("-I/opt/include"),
        ] {
            let program = Program::new(SOURCE, needs_digest.clone()).unwrap();
            let error = key(&program, CodeKind::Cubin).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
            assert!(error.to_string().contains("caller digest"), "{error}");

            let digested = ProgramOptions {
                caller_digest: Some(b"sha of /opt/include".to_vec()),
                ..needs_digest
            };
            let first = key(
                &Program::new(SOURCE, digested.clone()).unwrap(),
                CodeKind::Cubin,
            );
            let other = ProgramOptions {
                caller_digest: Some(b"another sha".to_vec()),
                ..digested
            };
            let second = key(&Program::new(SOURCE, other).unwrap(), CodeKind::Cubin);
            assert_ne!(first.unwrap(), second.unwrap());
        }
    }

    #[test]
    fn a_hit_is_returned_without_compiling() {
        // The stored bytes are no real program: only a hit can return them.
        let cache = InMemoryProgramCache::new(1 << 20);
        let mut program = Program::new(SOURCE, options()).unwrap();
        program.add_name_expression("k<float>").unwrap();
        let stored = CompiledCode::new(
            CodeKind::Cubin,
            b"\x7fELF stored".to_vec(),
            vec![("k<float>".to_owned(), "_Z1kIfEvPT_".to_owned())],
        );
        cache
            .put(&key(&program, CodeKind::Cubin).unwrap(), &stored)
            .unwrap();
        let hit = program
            .through_cache(CodeKind::Cubin, &cache, "12.9")
            .unwrap();
        assert_eq!(hit.code(), &stored);
        assert_eq!(hit.log(), "");
        assert_eq!(hit.options(), ["--gpu-architecture=sm_90"]);
        assert_eq!(hit.lowered_name("k<float>"), Some("_Z1kIfEvPT_"));
        assert_eq!(cache.stats().unwrap().hits, 1);
    }

    /// A cache whose every operation fails.
    struct Broken;

    impl Broken {
        fn error() -> Error {
            Error::CacheIo {
                path: "/broken".into(),
                source: std::sync::Arc::new(std::io::Error::other("disk on fire")),
            }
        }
    }

    impl ProgramCache for Broken {
        fn get(&self, _: &CacheKey) -> Result<Option<CompiledCode>> {
            Err(Self::error())
        }
        fn put(&self, _: &CacheKey, _: &CompiledCode) -> Result<()> {
            Err(Self::error())
        }
        fn remove(&self, _: &CacheKey) -> Result<()> {
            Err(Self::error())
        }
        fn clear(&self) -> Result<()> {
            Err(Self::error())
        }
        fn stats(&self) -> Result<CacheStats> {
            Err(Self::error())
        }
    }

    #[test]
    fn a_failing_cache_is_a_miss_not_an_error() {
        // Past the failed `get` comes the compile: it fails here on the source (with NVRTC) or
        // on loading NVRTC (without), never with the cache's error.
        let program = Program::new("this is not C++", options()).unwrap();
        let error = program
            .through_cache(CodeKind::Cubin, &Broken, "12.9")
            .unwrap_err();
        assert!(
            matches!(error, Error::Nvrtc { .. } | Error::Load(_)),
            "{error}"
        );
    }

    #[test]
    fn a_key_the_builder_refuses_fails_before_the_cache() {
        let program = Program::new(SOURCE, options().include_path("/opt/include")).unwrap();
        let error = program
            .through_cache(CodeKind::Cubin, &Broken, "12.9")
            .unwrap_err();
        assert!(error.to_string().contains("caller digest"), "{error}");
    }

    #[test]
    fn an_assumed_compiler_is_not_checked_on_a_hit() {
        // "0.0" is no NVRTC anyone has: a hit must come back without asking which is loaded.
        let cache = InMemoryProgramCache::new(1 << 20);
        let program = Program::new(SOURCE, options()).unwrap();
        let key = key(&program, CodeKind::Ptx).unwrap();
        let stored = CompiledCode::new(CodeKind::Ptx, b"// stored\0".to_vec(), Vec::new());
        cache.put(&key, &stored).unwrap();
        let assumed = Keying {
            version: "0.0",
            learnt: Learnt::Assumed,
        };
        let key = program
            .cache_key_for_compiler(CodeKind::Ptx, "0.0")
            .unwrap();
        cache.put(&key, &stored).unwrap();
        let fetched = program
            .fetch_or_compile(CodeKind::Ptx, &cache, assumed, &|_| Ok(()))
            .unwrap();
        assert_eq!(fetched.key, key);
        let hit = fetched.program;
        assert_eq!(hit.code(), &stored);
        assert_eq!(hit.options(), program.flags(CodeKind::Ptx).unwrap());
    }

    #[test]
    fn an_assumed_compiler_is_checked_before_compiling_a_miss() {
        let cache = InMemoryProgramCache::new(1 << 20);
        let program = Program::new(SOURCE, options()).unwrap();
        let key = key(&program, CodeKind::Cubin).unwrap();
        let _ = key;
        let assumed = Keying {
            version: "0.0",
            learnt: Learnt::Assumed,
        };
        let error = program
            .fetch_or_compile(CodeKind::Cubin, &cache, assumed, &|_| Ok(()))
            .unwrap_err();
        // Without NVRTC its load fails; with one, its version is not 0.0.
        match &error {
            Error::Load(_) => {}
            Error::NvrtcVersionMismatch { assumed, .. } => assert_eq!(&**assumed, "0.0"),
            other => panic!("unexpected error {other}"),
        }
        let stats = cache.stats().unwrap();
        assert_eq!((stats.misses, stats.insertions), (1, 0), "{stats:?}");
    }

    #[test]
    fn the_compiler_version_is_formatted_once() {
        match (compiler_version(), compiler_version()) {
            (Ok(first), Ok(second)) => {
                assert!(std::ptr::eq(first, second), "{first} was formatted twice");
                let (major, minor) = nvrtc_version().unwrap();
                assert_eq!(first, format!("{major}.{minor}"));
            }
            (Err(first), Err(second)) => {
                assert!(matches!(first, Error::Load(_)), "{first}");
                assert!(matches!(second, Error::Load(_)), "{second}");
            }
            (first, second) => panic!("NVRTC came and went: {first:?} then {second:?}"),
        }
    }

    #[test]
    fn a_remembered_key_is_returned_for_its_version_only() {
        let program = Program::new(SOURCE, options()).unwrap();
        let first = program
            .cache_key_for_compiler(CodeKind::Cubin, "12.9")
            .unwrap();
        assert_eq!(
            program
                .cache_key_for_compiler(CodeKind::Cubin, "12.9")
                .unwrap(),
            first
        );
        assert_eq!(first, key(&program, CodeKind::Cubin).unwrap());
        let other = program
            .cache_key_for_compiler(CodeKind::Cubin, "13.0")
            .unwrap();
        assert_ne!(other, first);
        assert_eq!(
            program
                .cache_key_for_compiler(CodeKind::Cubin, "12.9")
                .unwrap(),
            first
        );
    }
}
