//! The generated bindings and the loader's errors.

use std::path::PathBuf;

use super::*;

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    // cuFFT's own numbering: 11 goes with CUDA 12, 12 with CUDA 13.
    assert_eq!(CUFFT_VER_MAJOR, expected - 1);
    assert_eq!(OLDEST_DATED_VERSION, (expected - 1, 0));
}

#[test]
fn the_plans_the_transforms_and_the_extensible_api_are_there() {
    let names: Vec<&str> = ENTRY_POINTS.iter().map(EntryPoint::name).collect();
    for symbol in [
        "cufftCreate",
        "cufftDestroy",
        "cufftPlan1d",
        "cufftPlan2d",
        "cufftPlan3d",
        "cufftPlanMany",
        "cufftMakePlanMany64",
        "cufftGetSizeMany64",
        "cufftSetStream",
        "cufftSetAutoAllocation",
        "cufftSetWorkArea",
        "cufftExecC2C",
        "cufftExecR2C",
        "cufftExecC2R",
        "cufftExecZ2Z",
        "cufftExecD2Z",
        "cufftExecZ2D",
        "cufftGetVersion",
        "cufftGetProperty",
        "cufftXtMakePlanMany",
        "cufftXtGetSizeMany",
        "cufftXtExec",
        "cufftXtExecDescriptor",
        "cufftXtSetGPUs",
    ] {
        assert!(names.contains(&symbol), "{symbol} missing");
    }
    assert!(VERSIONED_NAMES.is_empty(), "{VERSIONED_NAMES:?}");
}

#[test]
fn results_and_transform_types_are_open_newtypes() {
    assert_eq!(cufftResult::CUFFT_SUCCESS, cufftResult_t(0));
    assert_eq!(cufftResult::CUFFT_INVALID_PLAN.0, 1);
    assert_eq!(cufftResult::CUFFT_NOT_SUPPORTED.0, 16);
    assert_ne!(cufftResult_t(99), cufftResult::CUFFT_SUCCESS);
    assert_eq!(cufftType::CUFFT_R2C.0, 0x2a);
    assert_eq!(cufftType::CUFFT_C2R.0, 0x2c);
    assert_eq!(cufftType::CUFFT_C2C.0, 0x29);
    assert_eq!(cufftType::CUFFT_D2Z.0, 0x6a);
    assert_eq!(cufftType::CUFFT_Z2Z.0, 0x69);
    assert_eq!((CUFFT_FORWARD, CUFFT_INVERSE), (-1, 1));
    assert_eq!(cudaDataType::CUDA_C_32F.0, 4);
}

#[test]
fn entry_points_newer_than_the_oldest_header_are_dated() {
    let since = |symbol: &str| {
        ENTRY_POINTS
            .iter()
            .find(|entry| entry.name() == symbol)
            .and_then(EntryPoint::introduced)
    };
    assert_eq!(since("cufftPlanMany"), None);
    assert_eq!(since("cufftXtMakePlanMany"), None);
    if_abi12! {
        assert_eq!(
            since("cufftSetPlanPropertyInt64"),
            Some(Introduced::Library(LibraryVersion::new(11, 2)))
        );
        assert!(api_doc!(cufftSetPlanPropertyInt64).contains("Needs cuFFT 11.2."));
    }
    if_abi13! {
        // Every cuFFT 12 on PyPI declares every function of the pinned header.
        assert!(ENTRY_POINTS.iter().all(|entry| entry.introduced().is_none()));
    }
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of cuFFT's symbols).
    let cufft = unsafe {
        Library::open_first(LIBCUFFT.name, [PathBuf::from("libc.so.6")], &ENTRY_POINTS)
            .map(|library| Cufft::new(library))
    }
    .expect("libc.so.6 loads");
    let mut plan: cufftHandle = 0;
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe { cufft.cufftCreate(&mut plan) }.unwrap_err();
    assert!(
        matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cufftCreate",
                since: None,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn api_doc_links_the_c_domain_entry_of_each_function() {
    let reference = if ABI_MAJOR == 12 {
        "https://docs.nvidia.com/cuda/archive/12.9.1/cufft/index.html"
    } else {
        "https://docs.nvidia.com/cuda/cufft/index.html"
    };
    assert_eq!(
        api_doc!(cufftPlanMany),
        format!("\nCalls [`cufftPlanMany`]({reference}#c.cufftPlanMany).\n")
    );
    assert!(api_doc!(cufftXtExec).contains("#c.cufftXtExec)"));
}
