//! Shared helpers of the GPU integration tests in `tests/`.
//!
//! Each GPU test starts with [`gpu_or_skip`]: on a machine without a usable driver and GPU it
//! prints why and the test returns early (passing), unless `CUDA_SAFE_REQUIRE_GPU=1` is set,
//! in which case the missing GPU is a failure. The GPU bundle's `run.sh` sets that variable.

use cuda_sys::CUresult;

/// The variable that turns a missing GPU from a skip into a failure.
pub const REQUIRE_GPU_ENV: &str = "CUDA_SAFE_REQUIRE_GPU";

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

/// `true` when the test should run; otherwise prints the reason and returns `false`.
///
/// # Panics
///
/// Panics (failing the test) when no GPU is usable and `CUDA_SAFE_REQUIRE_GPU=1`.
pub fn gpu_or_skip(test: &str) -> bool {
    match why_no_gpu() {
        None => true,
        Some(reason) if gpu_required() => {
            panic!("{test}: a GPU is required ({REQUIRE_GPU_ENV}=1) but {reason}")
        }
        Some(reason) => {
            eprintln!("skipping {test}: {reason}");
            false
        }
    }
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
