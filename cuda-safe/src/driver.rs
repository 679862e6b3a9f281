//! The process's initialised driver.

use std::sync::OnceLock;

use crate::error::check;
use crate::sys::Driver;
use crate::{Error, Result};

/// The driver's entry points after `cuInit(0)` succeeded, loading `libcuda` on first use.
///
/// Handles keep the returned reference, so a hot-path call never goes through this function.
pub(crate) fn driver() -> Result<&'static Driver> {
    static INITIALISED: OnceLock<Result<&'static Driver>> = OnceLock::new();
    INITIALISED
        .get_or_init(|| {
            let driver = crate::sys::driver()?;
            // SAFETY: cuInit takes flags, which must be 0; it is safe to call from any thread.
            check("cuInit", unsafe { driver.cuInit(0) })?;
            Ok(driver)
        })
        .as_ref()
        .map(|driver| *driver)
        .map_err(Error::clone)
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
