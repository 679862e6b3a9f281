//! CPU tests of the bindings and the loader's use of them.

use super::*;
use std::collections::HashSet;
use std::path::PathBuf;

fn entry_point_names() -> HashSet<&'static str> {
    ENTRY_POINTS.iter().map(EntryPoint::name).collect()
}

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    assert_eq!(CUDA_VERSION, HEADER_CUDA_VERSION);
}

#[test]
fn every_function_macro_resolves_to_its_versioned_symbol() {
    let names = entry_point_names();
    assert!(
        VERSIONED_NAMES.len() > 40,
        "too few macros: {}",
        VERSIONED_NAMES.len()
    );
    for (api, symbol) in VERSIONED_NAMES {
        assert!(
            names.contains(symbol),
            "{api} maps to {symbol}, which is not an entry point"
        );
        assert!(
            !names.contains(api),
            "the legacy export {api} must not be an entry point"
        );
    }
}

#[test]
fn well_known_entry_points_use_the_header_version() {
    let names = entry_point_names();
    let expected_ctx_create = if ABI_MAJOR == 12 {
        "cuCtxCreate_v2"
    } else {
        "cuCtxCreate_v4"
    };
    for symbol in [
        "cuInit",
        "cuMemAlloc_v2",
        "cuMemFree_v2",
        "cuMemcpyHtoD_v2",
        "cuCtxDestroy_v2",
        "cuDevicePrimaryCtxRelease_v2",
        "cuLaunchKernelEx",
        "cuKernelGetParamInfo",
        expected_ctx_create,
    ] {
        assert!(names.contains(symbol), "{symbol} missing");
    }
    for legacy in [
        "cuMemAlloc",
        "cuMemFree",
        "cuCtxCreate",
        "cuMemcpyHtoD",
        "cuCtxDestroy",
    ] {
        assert!(!names.contains(legacy), "{legacy} is a legacy export");
    }
}

#[test]
fn entry_points_are_unique_and_know_their_cuda_version() {
    assert_eq!(entry_point_names().len(), ENTRY_POINT_COUNT);
    let since = |name: &str| {
        ENTRY_POINTS
            .iter()
            .find(|entry| entry.name() == name)
            .and_then(EntryPoint::since)
            .map(|version| version.0)
    };
    assert_eq!(since("cuInit"), Some(2000));
    assert_eq!(since("cuMemAlloc_v2"), Some(3020));
    assert_eq!(since("cuKernelGetParamInfo"), Some(12040));
    assert_eq!(since("cuGreenCtxCreate"), Some(12040));
    let known = ENTRY_POINTS
        .iter()
        .filter(|entry| entry.since().is_some())
        .count();
    assert!(
        known * 100 / ENTRY_POINT_COUNT >= 95,
        "only {known} of {ENTRY_POINT_COUNT} dated"
    );
}

#[test]
fn struct_layouts_match_the_header() {
    assert_eq!(size_of::<CUdevResource>(), 144);
    assert_eq!(size_of::<CUuuid>(), 16);
    assert_eq!(size_of::<CUdeviceptr>(), 8);
    assert_eq!(size_of::<CUlaunchAttribute>(), 72);
    assert_eq!(size_of::<CUlaunchConfig>(), 56);
    assert_eq!(size_of::<CUresult>(), 4);
}

#[test]
fn results_are_open_newtypes() {
    assert_eq!(CUresult::CUDA_SUCCESS, cudaError_enum(0));
    assert_eq!(CUresult::CUDA_ERROR_NOT_FOUND.0, 500);
    // A code no header lists is representable, not undefined behaviour.
    let future = cudaError_enum(12_345);
    assert_ne!(future, CUresult::CUDA_ERROR_UNKNOWN);
}

#[test]
fn hand_written_constants_match_the_header() {
    assert_eq!(CU_STREAM_LEGACY as usize, 1);
    assert_eq!(CU_STREAM_PER_THREAD as usize, 2);
    assert!(CU_LAUNCH_PARAM_END.is_null());
    assert_eq!(CU_LAUNCH_PARAM_BUFFER_POINTER as usize, 1);
    assert_eq!(CU_LAUNCH_PARAM_BUFFER_SIZE as usize, 2);
    assert_eq!((CU_DEVICE_CPU, CU_DEVICE_INVALID), (-1, -2));
    assert_eq!(
        CU_STREAM_ATTRIBUTE_PRIORITY,
        CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY
    );
}

#[test]
fn loading_from_a_missing_path_lists_it() {
    // SAFETY: the only candidate does not exist, so nothing is loaded or wrapped.
    let error = unsafe {
        Library::open_first(
            LIBCUDA.name,
            [PathBuf::from("/nonexistent/libcuda.so.1")],
            &ENTRY_POINTS,
        )
        .map(|library| Driver::new(library))
    }
    .unwrap_err();
    match error {
        LoadError::LibraryNotFound { library, tried } => {
            assert_eq!(library, "the CUDA driver (libcuda)");
            assert_eq!(tried.len(), 1);
            assert_eq!(tried[0].candidate, "/nonexistent/libcuda.so.1");
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // libc loads but has none of the driver's symbols: each call fails with its name.
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of the driver's symbols).
    let driver = unsafe {
        Library::open_first("libc", [PathBuf::from("libc.so.6")], &ENTRY_POINTS)
            .map(|library| Driver::new(library))
    }
    .expect("libc.so.6 loads");
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe {
        driver.cuKernelGetParamInfo(
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
    .unwrap_err();
    match &error {
        LoadError::SymbolMissing { symbol, since, .. } => {
            assert_eq!(*symbol, "cuKernelGetParamInfo");
            assert_eq!(since.map(|v| v.to_string()), Some("CUDA 12.4".to_owned()));
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(error.to_string().contains("introduced in CUDA 12.4"));
    assert!(!driver.library().has(0));
}

#[test]
fn api_doc_links_the_reference_of_the_compiled_abi_and_names_the_driver_needed() {
    let reference = if ABI_MAJOR == 12 {
        "https://docs.nvidia.com/cuda/archive/12.9.1/cuda-driver-api/"
    } else {
        "https://docs.nvidia.com/cuda/cuda-driver-api/"
    };
    assert_eq!(
        api_doc!(cuMemAlloc),
        format!(
            "\nCalls [`cuMemAlloc`]({reference}group__CUDA__MEM.html\
             #group__CUDA__MEM_1gb82d2a09844a58dd9e744dc31e8aa467).\n"
        )
    );
    assert_eq!(api_doc!(cuMemAlloc_v2), api_doc!(cuMemAlloc));
    // In CUDA 1.0 and 2.0: no needs line.
    assert!(!api_doc!(cuInit).contains("Needs"));
    // `cuCtxCreate` is `cuCtxCreate_v2` (CUDA 3.2) under the CUDA 12 ABI, `cuCtxCreate_v4`
    // (CUDA 12.5) under the CUDA 13 one.
    assert_eq!(
        api_doc!(cuCtxCreate).ends_with("\n\nNeeds a CUDA 12.5 driver.\n"),
        ABI_MAJOR == 13
    );
    assert!(api_doc!(cuGreenCtxCreate).contains("group__CUDA__GREEN__CONTEXTS.html"));
    assert!(api_doc!(cuGetExportTable).contains("files it under no group"));
}
