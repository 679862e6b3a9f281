//! Shared helpers and the test harness of the GPU integration tests in `tests/`.
//!
//! Each file in `tests/tests/` is a test target with `harness = false` (its `[[test]]` entry in
//! `tests/Cargo.toml`) whose `main` lists its tests with [`gpu_tests!`]. They run under
//! [`libtest_mimic`], which reads libtest's command line (a filter, `--exact`, `--skip`,
//! `--list`, `--ignored`, `--include-ignored`, `--test-threads`, `--format`, `--quiet`, ...)
//! and exits as libtest does: 0, or 101 when a test failed. As under libtest, each test runs on
//! a thread of its own named after it, and `RUST_TEST_THREADS` stands in for a missing
//! `--test-threads`; unlike libtest, a test's output is not captured (`--nocapture` is accepted
//! and changes nothing).
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

use std::any::Any;
use std::process::ExitCode;
use std::thread;

use cuda_sys::CUresult;
use libtest_mimic::{Arguments, Failed, Trial};

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

/// A GPU test as [`gpu_tests!`] lists it: its name and its function.
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

    /// The trial `test` becomes: it runs [`GpuVerdict::run`]; where no GPU is usable it is
    /// marked `[no GPU]`, and ignored unless a GPU is required.
    pub fn trial(&self, test: GpuTest) -> Trial {
        let verdict = self.clone();
        let trial = Trial::test(test.0, move || verdict.run(test).map_err(Failed::from));
        match self {
            Self::Run => trial,
            Self::Ignore(_) => trial.with_kind(NO_GPU_KIND).with_ignored_flag(true),
            Self::Fail(_) => trial.with_kind(NO_GPU_KIND),
        }
    }

    /// Runs `test`: on a thread of its own named after it where a GPU is usable (a panic is
    /// the error); otherwise the error is the reason no GPU is usable.
    pub fn run(&self, (name, test): GpuTest) -> Result<(), String> {
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

/// Runs `tests` under libtest-mimic with this process's arguments, as [`GpuVerdict::here`]
/// decides, after printing [`GpuVerdict::line`] (unless only listing), and returns the exit
/// code. [`gpu_tests!`] expands to this.
pub fn run_gpu_tests(tests: &[GpuTest]) -> ExitCode {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|threads| threads.parse().ok())
            .filter(|&threads: &usize| threads > 0);
    }
    let verdict = GpuVerdict::here();
    if !args.list
        && let Some(line) = verdict.line()
    {
        eprintln!("{line}");
    }
    let trials = tests.iter().map(|&test| verdict.trial(test)).collect();
    libtest_mimic::run(&args, trials).exit_code()
}

/// Runs a test file's GPU tests, the functions named, and gives the exit code: the body of the
/// file's `main` (see the crate's documentation for what happens without a GPU).
///
/// ```text
/// fn main() -> std::process::ExitCode {
///     gpu_tests![a_kernel_launches, a_buffer_round_trips]
/// }
/// ```
///
/// Each name is a `fn()` of the file, which fails its test by panicking; in a test split into
/// modules (`tests/tests/graph/main.rs`), a path to one, which is also the test's name
/// (`capture::capture_in_global_mode_records_launches`). A test function left out of the list
/// is dead code, which the lints reject. A file in `tests/tests/` needs its `[[test]]` entry
/// with `harness = false`: under libtest its `main` never runs, and it reports no tests.
#[macro_export]
macro_rules! gpu_tests {
    ($($test:path),+ $(,)?) => {
        $crate::run_gpu_tests(&[$((stringify!($test), $test as fn())),+])
    };
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
        let test: GpuTest = ("on_a_thread_named_after_it", on_a_thread_named_after_it);
        let trial = verdict.trial(test);
        assert_eq!(trial.name(), "on_a_thread_named_after_it");
        assert_eq!(trial.kind(), "");
        assert!(!trial.has_ignored_flag());
        assert_eq!(verdict.run(test), Ok(()));
        assert_eq!(
            verdict.run(("panics", panics)),
            Err("test panicked: the kernel wrote 3".to_owned())
        );
    }

    #[test]
    fn without_a_gpu_tests_are_ignored_with_the_reason_and_fail_when_run_anyway() {
        let verdict = GpuVerdict::Ignore(REASON.to_owned());
        let line = verdict.line().expect("a line saying why");
        assert!(line.contains("ignored") && line.ends_with(REASON), "{line}");
        let trial = verdict.trial(("panics", panics));
        assert_eq!(trial.name(), "panics");
        assert_eq!(trial.kind(), "no GPU");
        assert!(trial.has_ignored_flag());
        assert_eq!(
            verdict.run(("panics", panics)),
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
        let trial = verdict.trial(("panics", panics));
        assert_eq!(trial.kind(), "no GPU");
        assert!(!trial.has_ignored_flag());
        assert_eq!(
            verdict.run(("panics", panics)),
            Err(format!(
                "a GPU is required (CUDA_SAFE_REQUIRE_GPU=1) but {REASON}"
            ))
        );
    }
}
