//! Prints what the raw layer finds on this machine: the CUDA driver and its devices, NVRTC and
//! NVML. With no driver it prints one line saying what is missing and exits with status 1.
//!
//! ```text
//! cargo run --release -p cuda-safe --example driver_info
//! ```

use std::error::Error;
use std::ffi::{CStr, c_char};
use std::process::ExitCode;

use cuda_safe::sys::{self as cuda_sys, CUdevice_attribute, CUresult};
use cuda_safe::{nvml_sys, nvrtc_sys};

/// Turns a `CUresult` into an error naming the call.
fn check(api: &str, result: Result<CUresult, cuda_sys::LoadError>) -> Result<(), Box<dyn Error>> {
    match result? {
        CUresult::CUDA_SUCCESS => Ok(()),
        code => Err(format!("{api} failed with CUresult {}", code.0).into()),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let driver = cuda_sys::driver()?;
    // SAFETY: flags must be 0.
    check("cuInit", unsafe { driver.cuInit(0) })?;
    let mut version = 0;
    // SAFETY: `version` is a valid place for an int.
    check("cuDriverGetVersion", unsafe {
        driver.cuDriverGetVersion(&mut version)
    })?;
    println!(
        "CUDA driver {}.{} ({}), bindings for CUDA {}.{}",
        version / 1000,
        version % 1000 / 10,
        driver.library().path().display(),
        cuda_sys::HEADER_CUDA_VERSION / 1000,
        cuda_sys::HEADER_CUDA_VERSION % 1000 / 10,
    );
    let mut count = 0;
    // SAFETY: `count` is a valid place for an int.
    check("cuDeviceGetCount", unsafe {
        driver.cuDeviceGetCount(&mut count)
    })?;
    for ordinal in 0..count {
        let mut device = 0;
        // SAFETY: `device` is a valid place for a CUdevice.
        check("cuDeviceGet", unsafe {
            driver.cuDeviceGet(&mut device, ordinal)
        })?;
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds `name.len()` bytes.
        check("cuDeviceGetName", unsafe {
            driver.cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device)
        })?;
        let mut bytes = 0usize;
        // SAFETY: `bytes` is a valid place for a size_t.
        check("cuDeviceTotalMem_v2", unsafe {
            driver.cuDeviceTotalMem_v2(&mut bytes, device)
        })?;
        let attribute = |attribute| -> Result<i32, Box<dyn Error>> {
            let mut value = 0;
            // SAFETY: `value` is a valid place for an int; `device` came from cuDeviceGet.
            check("cuDeviceGetAttribute", unsafe {
                driver.cuDeviceGetAttribute(&mut value, attribute, device)
            })?;
            Ok(value)
        };
        let major = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sms = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        // SAFETY: the driver wrote a NUL-terminated string.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
        println!(
            "  device {ordinal}: {name}, sm_{major}{minor}, {sms} SMs, {} MiB",
            bytes >> 20
        );
    }
    match nvrtc_sys::nvrtc() {
        Ok(nvrtc) => {
            let (mut major, mut minor) = (0, 0);
            // SAFETY: both pointers are valid places for ints.
            unsafe { nvrtc.nvrtcVersion(&mut major, &mut minor) }?;
            println!(
                "NVRTC {major}.{minor} ({})",
                nvrtc.library().path().display()
            );
        }
        Err(error) => println!("NVRTC unavailable: {error}"),
    }
    match nvml_sys::nvml() {
        Ok(nvml) => {
            // SAFETY: no preconditions; paired with the shutdown below.
            if unsafe { nvml.nvmlInit_v2() }? == nvml_sys::nvmlReturn_t::NVML_SUCCESS {
                let mut gpus = 0;
                // SAFETY: `gpus` is a valid place for an unsigned int.
                unsafe { nvml.nvmlDeviceGetCount_v2(&mut gpus) }?;
                println!(
                    "NVML sees {gpus} GPUs ({})",
                    nvml.library().path().display()
                );
                // SAFETY: pairs the init above.
                unsafe { nvml.nvmlShutdown() }?;
            }
        }
        Err(error) => println!("NVML unavailable: {error}"),
    }
    Ok(())
}
