//! The C floors' setup calls over the `-sys` tables alone: the primary context made current,
//! and a kernel from NVRTC for the device's architecture (`--gpu-architecture=sm_XY`, nothing
//! else), `cuLibraryLoadData` and `cuLibraryGetKernel`. Shared by the diagnostics that rebuild
//! a floor in Rust (`diag_launch_threads`, `diag_green`).

use std::ffi::{CStr, CString, c_char};

use crate::check::check;
use cuda_safe::nvrtc_sys::{nvrtc, nvrtcProgram, nvrtcResult};
use cuda_safe::sys::{
    CUcontext, CUdevice, CUdevice_attribute, CUfunction, CUkernel, CUlibrary, driver,
};
use cuda_safe::{Error, Result};

fn check_nvrtc(function: &'static str, code: nvrtcResult) -> Result<()> {
    if code == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::nvrtc(function, code, None))
    }
}

/// `cuInit`, device 0, its primary context retained (for the process: it is never released)
/// and made current.
pub fn primary_context() -> Result<(CUdevice, CUcontext)> {
    let driver = driver()?;
    let mut device: CUdevice = 0;
    let mut primary: CUcontext = std::ptr::null_mut();
    // SAFETY: valid out-pointers; the primary context stays retained for the process.
    unsafe {
        check("cuInit", driver.cuInit(0)?)?;
        check("cuDeviceGet", driver.cuDeviceGet(&mut device, 0)?)?;
        check(
            "cuDevicePrimaryCtxRetain",
            driver.cuDevicePrimaryCtxRetain(&mut primary, device)?,
        )?;
        check("cuCtxSetCurrent", driver.cuCtxSetCurrent(primary)?)?;
    }
    Ok((device, primary))
}

/// `source` compiled to a cubin for `device` and loaded; the library stays loaded for the
/// process, as in the floors.
pub fn load(device: CUdevice, source: &str) -> Result<CUlibrary> {
    let driver = driver()?;
    let nvrtc = nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out-pointers and device.
    unsafe {
        check(
            "cuDeviceGetAttribute",
            driver.cuDeviceGetAttribute(
                &mut major,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                device,
            )?,
        )?;
        check(
            "cuDeviceGetAttribute",
            driver.cuDeviceGetAttribute(
                &mut minor,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                device,
            )?,
        )?;
    }
    let source = CString::new(source).map_err(|_| Error::invalid_argument("NUL in the source"))?;
    let arch = format!("--gpu-architecture=sm_{major}{minor}\0");
    let options = [arch.as_ptr().cast::<c_char>()];
    let mut program: nvrtcProgram = std::ptr::null_mut();
    let mut size = 0;
    let mut library: CUlibrary = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings that outlive the calls, valid out-pointers; the cubin
    // buffer has the size NVRTC reported; the program is destroyed once, after the copy.
    unsafe {
        check_nvrtc(
            "nvrtcCreateProgram",
            nvrtc.nvrtcCreateProgram(
                &mut program,
                source.as_ptr(),
                c"k.cu".as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )?,
        )?;
        check_nvrtc(
            "nvrtcCompileProgram",
            nvrtc.nvrtcCompileProgram(program, 1, options.as_ptr())?,
        )?;
        check_nvrtc(
            "nvrtcGetCUBINSize",
            nvrtc.nvrtcGetCUBINSize(program, &mut size)?,
        )?;
        let mut cubin = vec![0u8; size];
        check_nvrtc(
            "nvrtcGetCUBIN",
            nvrtc.nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast())?,
        )?;
        check_nvrtc(
            "nvrtcDestroyProgram",
            nvrtc.nvrtcDestroyProgram(&mut program)?,
        )?;
        check(
            "cuLibraryLoadData",
            driver.cuLibraryLoadData(
                &mut library,
                cubin.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )?,
        )?;
    }
    Ok(library)
}

/// The kernel `name` of `library` as a launch handle (a `CUkernel` is accepted where a
/// `CUfunction` is, as the floors use it).
pub fn kernel(library: CUlibrary, name: &CStr) -> Result<CUfunction> {
    let mut kernel: CUkernel = std::ptr::null_mut();
    // SAFETY: a loaded library, a NUL-terminated name and a valid out-pointer.
    check("cuLibraryGetKernel", unsafe {
        driver()?.cuLibraryGetKernel(&mut kernel, library, name.as_ptr())?
    })?;
    Ok(kernel.cast())
}
