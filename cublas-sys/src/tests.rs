//! The generated bindings, the loader's search and its errors.

use std::path::PathBuf;

use super::*;

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    assert_eq!(CUBLAS_VER_MAJOR, expected);
    assert_eq!(OLDEST_DATED_VERSION, (expected, 0));
}

#[test]
fn the_v2_macros_name_the_exports_the_methods_resolve() {
    let names: Vec<&str> = ENTRY_POINTS.iter().map(EntryPoint::name).collect();
    for (api, export) in [
        ("cublasCreate", "cublasCreate_v2"),
        ("cublasSetStream", "cublasSetStream_v2"),
        ("cublasSetWorkspace", "cublasSetWorkspace_v2"),
        ("cublasSetPointerMode", "cublasSetPointerMode_v2"),
        ("cublasSgemv", "cublasSgemv_v2"),
    ] {
        assert!(VERSIONED_NAMES.contains(&(api, export)), "{api}");
        assert!(names.contains(&export), "{export} missing");
    }
    for symbol in [
        "cublasGemmEx",
        "cublasGemmBatchedEx",
        "cublasGemmStridedBatchedEx",
        "cublasAxpyEx",
        "cublasDotEx",
        "cublasNrm2Ex",
        "cublasScalEx",
        "cublasSetMathMode",
        "cublasGetStatusName",
        "cublasGetStatusString",
    ] {
        assert!(names.contains(&symbol), "{symbol} missing");
    }
}

#[test]
fn statuses_and_enums_are_open_newtypes() {
    assert_eq!(cublasStatus_t::CUBLAS_STATUS_SUCCESS, cublasStatus_t(0));
    assert_eq!(cublasStatus_t::CUBLAS_STATUS_INVALID_VALUE.0, 7);
    assert_eq!(cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED.0, 15);
    assert_eq!(cublasOperation_t::CUBLAS_OP_T.0, 1);
    assert_eq!(cudaDataType_t::CUDA_R_16BF.0, 14);
    assert_eq!(cudaDataType_t::CUDA_R_8F_E4M3.0, 28);
    assert_eq!(cublasComputeType_t::CUBLAS_COMPUTE_32F.0, 68);
    assert_eq!(cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32.0, 77);
    assert_eq!(cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT.0, -1);
    assert_eq!(cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE.0, 1);
}

#[test]
fn entry_points_newer_than_the_oldest_header_are_dated() {
    let since = |symbol: &str| {
        ENTRY_POINTS
            .iter()
            .find(|entry| entry.name() == symbol)
            .and_then(EntryPoint::introduced)
    };
    assert_eq!(since("cublasCreate_v2"), None);
    assert_eq!(since("cublasGemmEx"), None);
    if_abi12! {
        assert_eq!(
            since("cublasGemmGroupedBatchedEx"),
            Some(Introduced::Library(LibraryVersion::new(12, 5)))
        );
        assert!(api_doc!(cublasGemmGroupedBatchedEx).contains("Needs cuBLAS 12.5."));
    }
    if_abi13! {
        assert_eq!(
            since("cublasSetEmulationSpecialValuesSupport"),
            Some(Introduced::Library(LibraryVersion::new(13, 1)))
        );
    }
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of cuBLAS's symbols).
    let cublas = unsafe {
        Library::open_first(LIBCUBLAS.name, [PathBuf::from("libc.so.6")], &ENTRY_POINTS)
            .map(|library| Cublas::new(library))
    }
    .expect("libc.so.6 loads");
    let mut handle: cublasHandle_t = std::ptr::null_mut();
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe { cublas.cublasCreate_v2(&mut handle) }.unwrap_err();
    assert!(
        matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cublasCreate_v2",
                since: None,
                ..
            }
        ),
        "{error:?}"
    );
    if_abi12! {
        let mut strategy = cublasEmulationStrategy_t(0);
        // SAFETY: as above.
        let error = unsafe { cublas.cublasGetEmulationStrategy(handle, &mut strategy) }
            .unwrap_err();
        assert!(
            error.to_string().contains("introduced in cuBLAS 12.9; update cuBLAS"),
            "{error}"
        );
    }
}

#[test]
fn api_doc_links_the_section_of_each_function() {
    let reference = if ABI_MAJOR == 12 {
        "https://docs.nvidia.com/cuda/archive/12.9.1/cublas/index.html"
    } else {
        "https://docs.nvidia.com/cuda/cublas/index.html"
    };
    assert_eq!(
        api_doc!(cublasGemmEx),
        format!("\nCalls [`cublasGemmEx`]({reference}#cublasgemmex).\n")
    );
    assert_eq!(api_doc!(cublasSgemm), api_doc!(cublasSgemm_v2));
    assert!(api_doc!(cublasSgemm).contains("#cublas-t-gemm"));
}
