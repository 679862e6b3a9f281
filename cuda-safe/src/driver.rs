//! The process's initialised driver, and the CUDA version it supports.
//!
//! ```no_run
//! let version = cuda_safe::cuda_driver_version()?;
//! println!("the driver supports CUDA {version}"); // 13.0
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::sync::OnceLock;

use crate::error::{Result, cu};
use cuda_sys::{CudaVersion, Driver};

/// The driver's entry points after `cuInit(0)` succeeded, loading `libcuda` on first use.
///
/// Only success is remembered: a failed `cuInit` (a transient `CUDA_ERROR_SYSTEM_NOT_READY`
/// while a fabric manager starts, say) is retried on the next call. Handles keep the returned
/// reference, so a hot-path call never goes through this function.
pub(crate) fn driver() -> Result<&'static Driver> {
    static INITIALISED: OnceLock<&'static Driver> = OnceLock::new();
    if let Some(driver) = INITIALISED.get() {
        return Ok(driver);
    }
    let driver = cuda_sys::driver()?;
    // SAFETY: cuInit takes flags, which must be 0; it is safe to call from any thread, and
    // again after it succeeded.
    unsafe { cu!(driver, cuInit(0)) }?;
    Ok(INITIALISED.get_or_init(|| driver))
}

/// The CUDA version the driver supports (`13000` for 13.0), from `cuDriverGetVersion`; the
/// same number NVML reports as [`system::cuda_driver_version`](crate::system::cuda_driver_version).
#[doc = cuda_sys::api_doc!(cuDriverGetVersion)]
#[doc(alias = "cuDriverGetVersion")]
pub fn cuda_driver_version() -> Result<CudaVersion> {
    let driver = driver()?;
    let mut version = 0;
    // SAFETY: `version` is a valid place for an int.
    unsafe { cu!(driver, cuDriverGetVersion(&mut version)) }?;
    Ok(CudaVersion(version.max(0) as u32))
}

/// The CUDA version the driver supports (`cuda_driver_version` since 0.2).
///
/// # Errors
///
/// As [`cuda_driver_version`].
#[deprecated(since = "0.2.0", note = "use `cuda_safe::cuda_driver_version`")]
pub fn driver_version() -> Result<CudaVersion> {
    cuda_driver_version()
}
