//! The process's initialised driver.

use std::sync::OnceLock;

use crate::Result;
use crate::error::check;
use crate::sys::Driver;

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
    let driver = crate::sys::driver()?;
    // SAFETY: cuInit takes flags, which must be 0; it is safe to call from any thread, and
    // again after it succeeded.
    check("cuInit", unsafe { driver.cuInit(0) })?;
    Ok(INITIALISED.get_or_init(|| driver))
}

/// The CUDA version the driver supports (`13000` for 13.0), from `cuDriverGetVersion`.
#[doc(alias = "cuDriverGetVersion")]
pub fn driver_version() -> Result<crate::sys::CudaVersion> {
    let driver = driver()?;
    let mut version = 0;
    // SAFETY: `version` is a valid place for an int.
    check("cuDriverGetVersion", unsafe {
        driver.cuDriverGetVersion(&mut version)
    })?;
    Ok(crate::sys::CudaVersion(version.max(0) as u32))
}
