//! A CUBIN loaded and a kernel looked up with the raw driver calls alone, as the C floors make
//! them (`cuLibraryLoadData` without options, `cuLibraryGetKernel`): shared by the diagnostics
//! that set the crate's load beside the raw one (`diag_load_ab`, `diag_disk_hit`).

use std::ffi::{CStr, c_void};

use cuda_safe::Result;
use cuda_safe::sys::{CUkernel, CUlibrary, driver};

#[path = "../../../cuda-safe/benches/common/check.rs"]
mod check;

pub use check::check;

/// `cubin` loaded and its kernel `name` looked up; the library stays loaded (unload it with
/// `cuLibraryUnload`, or let the process end).
pub fn load_get(cubin: &[u8], name: &CStr) -> Result<(CUlibrary, CUkernel)> {
    let driver = driver()?;
    let mut library: CUlibrary = std::ptr::null_mut();
    let mut kernel: CUkernel = std::ptr::null_mut();
    // SAFETY: a checked CUBIN image (the callers' own, or one a cache verified), valid
    // out-pointers, no options, a NUL-terminated name.
    unsafe {
        check(
            "cuLibraryLoadData",
            driver.cuLibraryLoadData(
                &mut library,
                cubin.as_ptr().cast::<c_void>(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )?,
        )?;
        check(
            "cuLibraryGetKernel",
            driver.cuLibraryGetKernel(&mut kernel, library, name.as_ptr())?,
        )?;
    }
    Ok((library, kernel))
}
