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
    let assumed = Keying::assumed("0.0");
    let key = program
        .cache_key_for_compiler(CodeKind::Ptx, "0.0")
        .unwrap();
    cache.put(&key, &stored).unwrap();
    let fetched = program
        .fetch_or_compile(CodeKind::Ptx, &cache, assumed, &|_| Ok(()), None)
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
    let assumed = Keying::assumed("0.0");
    let error = program
        .fetch_or_compile(CodeKind::Cubin, &cache, assumed, &|_| Ok(()), None)
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
    match (NVRTC.answer(), NVRTC.answer()) {
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

/// A stand-in NVRTC that says 12.9 without being loaded, and is found nowhere.
static STAND_IN: crate::library_note::Learner = crate::library_note::Learner::new(
    &NOWHERE,
    "stand-in NVRTC",
    || Ok("12.9".to_owned()),
    || None,
    false,
);

static NOWHERE: nvrtc_sys::LibrarySpec = nvrtc_sys::LibrarySpec {
    name: "a stand-in NVRTC",
    env_var: "CUDA_SAFE_TEST_NO_SUCH_NVRTC",
    file_names: &["libcuda-safe-no-such-nvrtc.so.1"],
    search_dirs: &[],
    wheel_dirs: &[],
    global: false,
};

/// A request makes one plan and one key (one pass over the source), whether it hits or
/// misses, learns the version first or knows it (`KernelCache`'s request: its own test);
/// a repeated one makes no key at all.
#[test]
fn a_request_makes_one_plan_and_one_key() {
    let program = Program::new(SOURCE, options()).unwrap();
    let stored = CompiledCode::new(CodeKind::Ptx, b"// stored\0".to_vec(), Vec::new());
    let hit = InMemoryProgramCache::new(1 << 20);
    hit.put(&key(&program, CodeKind::Ptx).unwrap(), &stored)
        .unwrap();
    counted::take();

    // The version learnt first (asked: no note), then a hit.
    let fetched = program
        .fetch_learning_from(&STAND_IN, CodeKind::Ptx, &hit, &|_| Ok(()))
        .unwrap();
    assert_eq!(fetched.program.code(), &stored);
    assert_eq!(counted::take(), (1, 1), "learnt, then a hit");
    // Known now, and the key remembered: the plan gives the hit's flags, no key is made.
    program
        .fetch_learning_from(&STAND_IN, CodeKind::Ptx, &hit, &|_| Ok(()))
        .unwrap();
    assert_eq!(counted::take(), (1, 0), "a repeated request");

    // A miss: one plan and one key before the compile (which fails here without NVRTC, or
    // on the source with it).
    let fresh = Program::new(SOURCE, options()).unwrap();
    let empty = InMemoryProgramCache::new(1 << 20);
    let _ = fresh.fetch_learning_from(&STAND_IN, CodeKind::Cubin, &empty, &|_| Ok(()));
    assert_eq!(counted::take(), (1, 1), "a miss");
}
