//! Shared helpers and the test harness of the GPU integration tests in `tests/`.
//!
//! The GPU tests are one test target, `gpu` (`tests/tests/main.rs`, `harness = false`), whose
//! modules are the test files (`cache.rs`, `graph/`, ...). Each file lists its tests in a
//! [`GpuFile`] made by [`gpu_file!`], and `main` hands every file to [`run_gpu_files`]. A
//! test's name is its file's, then its own: `cache::a_warm_kernel_request_returns_the_same_kernel`,
//! `graph::capture::capture_in_global_mode_records_launches`.
//!
//! The tests run under [`libtest_mimic`], which reads libtest's command line (a filter,
//! `--exact`, `--skip`, `--list`, `--ignored`, `--include-ignored`, `--test-threads`,
//! `--format`, `--quiet`, ...) and exits as libtest does: 0, or 101 when a test failed. As
//! under libtest, each test runs on a thread of its own named after it, and
//! `RUST_TEST_THREADS` stands in for a missing `--test-threads`; unlike libtest, a test's
//! output is not captured (`--nocapture` is accepted and changes nothing).
//!
//! Each file's tests run in a process of their own, as when every file was a binary of its
//! own: where a GPU is usable and the tests chosen come from several files, the binary starts
//! itself once per file, one after another, with [`FILE_ENV`] naming the file (`run.sh` does
//! the same, one item per file). A file may rely on its process: `context_release` needs a
//! primary context nothing else retained; others set pool attributes or peer access that last
//! as long as the process.
//!
//! Whether a GPU is usable ([`why_no_gpu`]) is found once, before any test runs, and decides
//! what becomes of every test ([`GpuVerdict`]):
//!
//! - A GPU is usable: the tests run.
//! - No GPU is usable: one line on stderr says why, and every test is reported as ignored,
//!   marked `[no GPU]` (`test [no GPU] name ... ignored`). `--ignored` or `--include-ignored`
//!   runs them anyway: each fails with the reason.
//! - No GPU is usable and `CUDA_SAFE_REQUIRE_GPU=1` (the GPU bundle's `run.sh` sets it): the
//!   same line, and every test fails with the reason.

mod files;

pub use files::{FILE_ENV, GpuFile, run_gpu_files};

use std::any::Any;
use std::thread;

use cuda_sys::CUresult;
use libtest_mimic::{Failed, Trial};

/// The variable that turns a missing GPU from an ignored test into a failed one.
pub const REQUIRE_GPU_ENV: &str = "CUDA_SAFE_REQUIRE_GPU";

/// The kind shown before the name of a test that cannot run here: `test [no GPU] name`.
const NO_GPU_KIND: &str = "no GPU";

/// Whether `CUDA_SAFE_REQUIRE_GPU=1` is set.
pub fn gpu_required() -> bool {
    std::env::var(REQUIRE_GPU_ENV).is_ok_and(|value| value == "1")
}

/// Why this machine cannot run GPU tests, or `None` when it can (driver loads, `cuInit`
/// succeeds and at least one device is visible).
pub fn why_no_gpu() -> Option<String> {
    let driver = match cuda_sys::driver() {
        Ok(driver) => driver,
        Err(error) => return Some(error.to_string()),
    };
    // SAFETY: cuInit takes flags (must be 0) and has no other precondition.
    match unsafe { driver.cuInit(0) } {
        Ok(CUresult::CUDA_SUCCESS) => {}
        Ok(code) => return Some(format!("cuInit failed with CUresult {}", code.0)),
        Err(error) => return Some(error.to_string()),
    }
    let mut count = 0;
    // SAFETY: `count` is a valid place for an int.
    match unsafe { driver.cuDeviceGetCount(&mut count) } {
        Ok(CUresult::CUDA_SUCCESS) if count > 0 => None,
        Ok(CUresult::CUDA_SUCCESS) => Some("no CUDA device is visible".to_owned()),
        Ok(code) => Some(format!("cuDeviceGetCount failed with CUresult {}", code.0)),
        Err(error) => Some(error.to_string()),
    }
}

/// A GPU test as [`gpu_file!`] lists it: its name in its file and its function.
pub type GpuTest = (&'static str, fn());

/// What becomes of the GPU tests on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuVerdict {
    /// A GPU is usable: the tests run.
    Run,
    /// No GPU is usable, for the reason held: the tests are ignored.
    Ignore(String),
    /// No GPU is usable, for the reason held, and `CUDA_SAFE_REQUIRE_GPU=1`: the tests fail.
    Fail(String),
}

impl GpuVerdict {
    /// The verdict on this machine: [`why_no_gpu`], then [`gpu_required`].
    pub fn here() -> Self {
        match why_no_gpu() {
            None => Self::Run,
            Some(reason) if gpu_required() => Self::Fail(reason),
            Some(reason) => Self::Ignore(reason),
        }
    }

    /// The line saying why the tests do not run, or `None` when they do.
    pub fn line(&self) -> Option<String> {
        match self {
            Self::Run => None,
            Self::Ignore(reason) => Some(format!(
                "no usable GPU, so the GPU tests are ignored ({REQUIRE_GPU_ENV}=1 fails them \
                 instead): {reason}"
            )),
            Self::Fail(reason) => Some(format!(
                "no usable GPU and {REQUIRE_GPU_ENV}=1, so the GPU tests fail: {reason}"
            )),
        }
    }

    /// The trial the test `name` becomes: it runs [`GpuVerdict::run`]; where no GPU is usable
    /// it is marked `[no GPU]`, and ignored unless a GPU is required.
    pub fn trial(&self, name: String, test: fn()) -> Trial {
        let verdict = self.clone();
        let thread_name = name.clone();
        let trial = Trial::test(name, move || {
            verdict.run(&thread_name, test).map_err(Failed::from)
        });
        match self {
            Self::Run => trial,
            Self::Ignore(_) => trial.with_kind(NO_GPU_KIND).with_ignored_flag(true),
            Self::Fail(_) => trial.with_kind(NO_GPU_KIND),
        }
    }

    /// Runs `test`: on a thread of its own named `name` where a GPU is usable (a panic is the
    /// error); otherwise the error is the reason no GPU is usable.
    pub fn run(&self, name: &str, test: fn()) -> Result<(), String> {
        match self {
            Self::Run => thread::Builder::new()
                .name(name.to_owned())
                .spawn(test)
                .map_err(|error| format!("starting the test's thread failed: {error}"))?
                .join()
                .map_err(|payload| format!("test panicked: {}", panic_message(payload.as_ref()))),
            Self::Ignore(reason) => Err(format!("a GPU is needed but {reason}")),
            Self::Fail(reason) => Err(format!(
                "a GPU is required ({REQUIRE_GPU_ENV}=1) but {reason}"
            )),
        }
    }
}

/// The text a panic was raised with, when it was a string.
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a payload that is not a string)")
}

/// Panics with the API name and code unless `result` is `CUDA_SUCCESS`.
#[track_caller]
pub fn check(api: &str, result: Result<CUresult, cuda_sys::LoadError>) {
    match result {
        Ok(CUresult::CUDA_SUCCESS) => {}
        Ok(code) => panic!("{api} failed with CUresult {}", code.0),
        Err(error) => panic!("{api}: {error}"),
    }
}

/// `n` pseudo-random words from `seed` (xorshift), for data the GPU tests move and check.
pub fn random_words(n: usize, mut seed: u64) -> Vec<u32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 16) as u32
        })
        .collect()
}

/// The variable naming how many GPUs a run must have: with `CUDA_SAFE_REQUIRE_GPUS=2`, a test
/// that needs two GPUs fails where fewer are visible instead of skipping.
pub const REQUIRE_GPUS_ENV: &str = "CUDA_SAFE_REQUIRE_GPUS";

/// The first `count` devices, for a test that needs several GPUs; `None` (after printing why)
/// where fewer are visible, so the test passes as skipped on a smaller machine, unless
/// [`REQUIRE_GPUS_ENV`] asks for at least `count`, when it panics instead.
#[track_caller]
pub fn devices(count: usize) -> Option<Vec<cuda_safe::Device>> {
    let visible = cuda_safe::Device::count().expect("cuDeviceGetCount");
    if visible >= count {
        return Some(
            (0..count)
                .map(|ordinal| cuda_safe::Device::new(ordinal).expect("cuDeviceGet"))
                .collect(),
        );
    }
    let required = std::env::var(REQUIRE_GPUS_ENV)
        .ok()
        .and_then(|value| value.parse::<usize>().ok())
        .unwrap_or(0);
    assert!(
        required < count,
        "this test needs {count} GPUs and {REQUIRE_GPUS_ENV}={required}, but {visible} visible"
    );
    eprintln!("skipped: this test needs {count} GPUs, {visible} visible");
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const REASON: &str = "the CUDA driver (libcuda) could not be loaded";

    fn on_a_thread_named_after_it() {
        assert_eq!(thread::current().name(), Some("on_a_thread_named_after_it"));
    }

    fn panics() {
        panic!("the kernel wrote 3");
    }

    #[test]
    fn with_a_gpu_each_test_runs_on_its_own_thread_and_a_panic_fails_it() {
        let verdict = GpuVerdict::Run;
        assert_eq!(verdict.line(), None);
        let name = "on_a_thread_named_after_it";
        let trial = verdict.trial(name.to_owned(), on_a_thread_named_after_it);
        assert_eq!(trial.name(), name);
        assert_eq!(trial.kind(), "");
        assert!(!trial.has_ignored_flag());
        assert_eq!(verdict.run(name, on_a_thread_named_after_it), Ok(()));
        assert_eq!(
            verdict.run("panics", panics),
            Err("test panicked: the kernel wrote 3".to_owned())
        );
    }

    #[test]
    fn without_a_gpu_tests_are_ignored_with_the_reason_and_fail_when_run_anyway() {
        let verdict = GpuVerdict::Ignore(REASON.to_owned());
        let line = verdict.line().expect("a line saying why");
        assert!(line.contains("ignored") && line.ends_with(REASON), "{line}");
        let trial = verdict.trial("file::panics".to_owned(), panics);
        assert_eq!(trial.name(), "file::panics");
        assert_eq!(trial.kind(), "no GPU");
        assert!(trial.has_ignored_flag());
        assert_eq!(
            verdict.run("panics", panics),
            Err(format!("a GPU is needed but {REASON}"))
        );
    }

    #[test]
    fn without_a_gpu_when_one_is_required_tests_fail_with_the_reason() {
        let verdict = GpuVerdict::Fail(REASON.to_owned());
        let line = verdict.line().expect("a line saying why");
        assert!(
            line.contains("CUDA_SAFE_REQUIRE_GPU=1") && line.ends_with(REASON),
            "{line}"
        );
        let trial = verdict.trial("panics".to_owned(), panics);
        assert_eq!(trial.kind(), "no GPU");
        assert!(!trial.has_ignored_flag());
        assert_eq!(
            verdict.run("panics", panics),
            Err(format!(
                "a GPU is required (CUDA_SAFE_REQUIRE_GPU=1) but {REASON}"
            ))
        );
    }
}

/// The Rust blocks of the workspace's Markdown files, as doctests of this package, which
/// depends on the core and every annex with their features: `cargo test --workspace` (and
/// `cargo test -p cuda-gpu-tests --doc`) compiles them all and runs those that need no GPU.
#[cfg(doctest)]
mod workspace_docs {
    /// One item per file, documented with the file's text.
    macro_rules! markdown {
        ($($name:ident: $path:literal,)*) => {$(
            #[doc = include_str!(concat!("../../", $path))]
            struct $name;
        )*};
    }

    markdown! {
        Readme: "README.md",
        Architecture: "docs/architecture.md",
        Async: "docs/async.md",
        Blas: "docs/blas.md",
        Collectives: "docs/collectives.md",
        Dnn: "docs/dnn.md",
        Fft: "docs/fft.md",
        GettingStarted: "docs/getting-started.md",
        GraphArena: "docs/graph-arena.md",
        Graphs: "docs/graphs.md",
        GreenContexts: "docs/green-contexts.md",
        Interop: "docs/interop.md",
        LinkingAndTma: "docs/linking-and-tma.md",
        MigratingFromCudaCore: "docs/migrating-from-cuda-core.md",
        MigratingFromCudarc: "docs/migrating-from-cudarc.md",
        MultiGpu: "docs/multi-gpu.md",
        Nvml: "docs/nvml.md",
        Performance: "docs/performance.md",
        ProgramCache: "docs/program-cache.md",
        Programs: "docs/programs.md",
        Security: "docs/security.md",
        Solver: "docs/solver.md",
        Sparse: "docs/sparse.md",
        Textures: "docs/textures.md",
        Tools: "docs/tools.md",
    }
}
