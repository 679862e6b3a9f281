//! The raw layer alone against a real driver: `cuda-sys`, `nvrtc-sys` and `nvml-sys`.

use std::ffi::CStr;

use cuda_gpu_tests::{GpuFile, check, gpu_file};
use cuda_sys::{EntryPoint, LoadError};

fn driver_version() -> i32 {
    let driver = cuda_sys::driver().expect("driver loads");
    let mut version = 0;
    // SAFETY: `version` is a valid place for an int.
    check("cuDriverGetVersion", unsafe {
        driver.cuDriverGetVersion(&mut version)
    });
    version
}

fn driver_init_version_devices_and_names() {
    let driver = cuda_sys::driver().expect("driver loads");
    // SAFETY: flags must be 0.
    check("cuInit", unsafe { driver.cuInit(0) });
    let version = driver_version();
    let abi_major = (cuda_sys::HEADER_CUDA_VERSION / 1000) as i32;
    assert!(
        version / 1000 >= abi_major,
        "driver {version} older than the ABI {abi_major}"
    );
    println!(
        "libcuda: {}, driver API {version}",
        driver.library().path().display()
    );

    let mut count = 0;
    // SAFETY: `count` is a valid place for an int.
    check("cuDeviceGetCount", unsafe {
        driver.cuDeviceGetCount(&mut count)
    });
    assert!(count >= 1);
    for ordinal in 0..count {
        let mut device = 0;
        // SAFETY: `device` is a valid place for a CUdevice.
        check("cuDeviceGet", unsafe {
            driver.cuDeviceGet(&mut device, ordinal)
        });
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: the buffer holds 256 bytes, the length passed.
        check("cuDeviceGetName", unsafe {
            driver.cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device)
        });
        // SAFETY: the driver wrote a NUL-terminated string into the buffer.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut bytes = 0usize;
        // SAFETY: `bytes` is a valid place for a size_t.
        check("cuDeviceTotalMem_v2", unsafe {
            driver.cuDeviceTotalMem_v2(&mut bytes, device)
        });
        let (mut major, mut minor) = (0, 0);
        // SAFETY: valid places for ints; valid attribute and device.
        unsafe {
            check(
                "cuDeviceGetAttribute",
                driver.cuDeviceGetAttribute(
                    &mut major,
                    cuda_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    device,
                ),
            );
            check(
                "cuDeviceGetAttribute",
                driver.cuDeviceGetAttribute(
                    &mut minor,
                    cuda_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    device,
                ),
            );
        }
        println!(
            "device {ordinal}: {name}, sm_{major}{minor}, {} MiB",
            bytes >> 20
        );
        assert!(!name.is_empty());
        assert!(bytes > 0);
        assert!(major >= 5);
    }
}

fn every_symbol_the_driver_should_have_resolves() {
    let driver = cuda_sys::driver().expect("driver loads");
    let version = driver_version() as u32;
    let library = driver.library();
    let mut missing = Vec::new();
    let mut newer = 0;
    for (index, entry) in library.entry_points().iter().enumerate() {
        match entry.since() {
            Some(since) if since.0 <= version => {
                if !library.has(index) {
                    missing.push(entry.name());
                }
            }
            _ => newer += 1,
        }
    }
    println!(
        "{} entry points; {} newer than the driver's CUDA {version} or undated",
        library.entry_points().len(),
        newer
    );
    assert!(
        missing.is_empty(),
        "the driver lacks symbols it should have: {missing:?}"
    );
}

fn a_symbol_newer_than_the_driver_is_a_typed_error() {
    let driver = cuda_sys::driver().expect("driver loads");
    let version = driver_version() as u32;
    let library = driver.library();
    let newest = library
        .entry_points()
        .iter()
        .enumerate()
        .filter(|(_, entry)| entry.since().is_some_and(|since| since.0 > version))
        .collect::<Vec<(usize, &EntryPoint)>>();
    println!(
        "{} entry points are newer than the driver's CUDA {version}",
        newest.len()
    );
    for (index, entry) in newest {
        if library.has(index) {
            continue; // a driver may ship a symbol before its headers date it
        }
        // SAFETY: only the lookup happens; the function is never called.
        let error = unsafe { library.get::<unsafe extern "C" fn()>(index) }.unwrap_err();
        match error {
            LoadError::SymbolMissing { symbol, since, .. } => {
                assert_eq!(symbol, entry.name());
                assert_eq!(since, entry.introduced());
            }
            other => panic!("unexpected error {other:?}"),
        }
    }
}

fn nvrtc_reports_its_version() {
    let nvrtc = nvrtc_sys::nvrtc().expect("libnvrtc loads");
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are valid places for ints.
    let status = unsafe { nvrtc.nvrtcVersion(&mut major, &mut minor) }.expect("nvrtcVersion");
    assert_eq!(status, nvrtc_sys::nvrtcResult::NVRTC_SUCCESS);
    println!(
        "NVRTC {major}.{minor} from {}",
        nvrtc.library().path().display()
    );
    assert!(major >= 12);
}

fn nvml_initialises_and_counts_devices() {
    let nvml = nvml_sys::nvml().expect("libnvidia-ml loads");
    // SAFETY: no preconditions; paired with the shutdown below.
    let status = unsafe { nvml.nvmlInit_v2() }.expect("nvmlInit_v2");
    assert_eq!(status, nvml_sys::nvmlReturn_t::NVML_SUCCESS);
    let mut count = 0;
    // SAFETY: `count` is a valid place for an unsigned int.
    let status = unsafe { nvml.nvmlDeviceGetCount_v2(&mut count) }.expect("nvmlDeviceGetCount_v2");
    assert_eq!(status, nvml_sys::nvmlReturn_t::NVML_SUCCESS);
    let mut version = [0 as std::ffi::c_char; 96];
    // SAFETY: the buffer holds `version.len()` bytes.
    let status =
        unsafe { nvml.nvmlSystemGetDriverVersion(version.as_mut_ptr(), version.len() as u32) }
            .expect("nvmlSystemGetDriverVersion");
    assert_eq!(status, nvml_sys::nvmlReturn_t::NVML_SUCCESS);
    // SAFETY: NVML wrote a NUL-terminated string.
    let version = unsafe { CStr::from_ptr(version.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    println!("NVML sees {count} GPUs, driver {version}");
    assert!(count >= 1);
    // SAFETY: pairs the init above.
    let status = unsafe { nvml.nvmlShutdown() }.expect("nvmlShutdown");
    assert_eq!(status, nvml_sys::nvmlReturn_t::NVML_SUCCESS);
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    driver_init_version_devices_and_names,
    every_symbol_the_driver_should_have_resolves,
    a_symbol_newer_than_the_driver_is_a_typed_error,
    nvrtc_reports_its_version,
    nvml_initialises_and_counts_devices,
];
