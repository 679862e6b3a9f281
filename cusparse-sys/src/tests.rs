//! The generated bindings and the loader's errors.

use std::path::PathBuf;

use super::*;

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    // cuSPARSE 12 under both: 12.0 to 12.5 with CUDA 12, 12.6 on with CUDA 13.
    assert_eq!(CUSPARSE_VER_MAJOR, 12);
    let (oldest, minors) = if expected == 12 {
        ((12, 0), 0..=5)
    } else {
        ((12, 6), 6..=u32::MAX)
    };
    assert_eq!(OLDEST_DATED_VERSION, oldest);
    assert!(minors.contains(&CUSPARSE_VER_MINOR), "{CUSPARSE_VER_MINOR}");
}

#[test]
fn the_generic_api_is_there() {
    let names: Vec<&str> = ENTRY_POINTS.iter().map(EntryPoint::name).collect();
    for symbol in [
        "cusparseCreate",
        "cusparseDestroy",
        "cusparseSetStream",
        "cusparseGetProperty",
        "cusparseCreateCsr",
        "cusparseCreateCoo",
        "cusparseCreateBlockedEll",
        "cusparseCreateDnVec",
        "cusparseCreateDnMat",
        "cusparseDestroySpMat",
        "cusparseSpMV_bufferSize",
        "cusparseSpMV",
        "cusparseSpMM_bufferSize",
        "cusparseSpMM",
        "cusparseSDDMM_bufferSize",
        "cusparseSDDMM",
        "cusparseSpGEMM_createDescr",
        "cusparseSpGEMM_workEstimation",
        "cusparseSpGEMM_compute",
        "cusparseSpGEMM_copy",
        "cusparseDenseToSparse_bufferSize",
        "cusparseSparseToDense",
    ] {
        assert!(names.contains(&symbol), "{symbol} missing");
    }
    assert!(VERSIONED_NAMES.is_empty(), "{VERSIONED_NAMES:?}");
}

#[test]
fn statuses_and_enums_are_open_newtypes() {
    assert_eq!(
        cusparseStatus_t::CUSPARSE_STATUS_SUCCESS,
        cusparseStatus_t(0)
    );
    assert_eq!(cusparseStatus_t::CUSPARSE_STATUS_NOT_SUPPORTED.0, 10);
    assert_ne!(
        cusparseStatus_t(99),
        cusparseStatus_t::CUSPARSE_STATUS_SUCCESS
    );
    assert_eq!(cusparseFormat_t::CUSPARSE_FORMAT_CSR.0, 1);
    assert_eq!(cusparseIndexType_t::CUSPARSE_INDEX_32I.0, 2);
    assert_eq!(cusparseIndexType_t::CUSPARSE_INDEX_64I.0, 3);
    assert_eq!(cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT.0, 0);
    assert_eq!(cudaDataType::CUDA_R_32F.0, 0);
}

#[test]
fn entry_points_newer_than_the_oldest_header_are_dated() {
    let since = |symbol: &str| {
        ENTRY_POINTS
            .iter()
            .find(|entry| entry.name() == symbol)
            .and_then(EntryPoint::introduced)
    };
    assert_eq!(since("cusparseSpMV"), None);
    if_abi12! {
        assert_eq!(
            since("cusparseSpMV_preprocess"),
            Some(Introduced::Library(LibraryVersion::new(12, 3)))
        );
        assert!(api_doc!(cusparseCreateBsr).contains("Needs cuSPARSE 12.1."));
    }
    if_abi13! {
        assert_eq!(since("cusparseSpMV_preprocess"), None);
        assert_eq!(
            since("cusparseSpGEAM"),
            Some(Introduced::Library(LibraryVersion::new(12, 8)))
        );
    }
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of cuSPARSE's symbols).
    let cusparse = unsafe {
        Library::open_first(
            LIBCUSPARSE.name,
            [PathBuf::from("libc.so.6")],
            &ENTRY_POINTS,
        )
        .map(|library| Cusparse::new(library))
    }
    .expect("libc.so.6 loads");
    let mut handle: cusparseHandle_t = std::ptr::null_mut();
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe { cusparse.cusparseCreate(&mut handle) }.unwrap_err();
    assert!(
        matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cusparseCreate",
                since: None,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn api_doc_links_the_section_of_each_function() {
    let reference = if ABI_MAJOR == 12 {
        "https://docs.nvidia.com/cuda/archive/12.9.1/cusparse/index.html"
    } else {
        "https://docs.nvidia.com/cuda/cusparse/index.html"
    };
    assert_eq!(
        api_doc!(cusparseSpMV),
        format!("\nCalls [`cusparseSpMV`]({reference}#cusparsespmv).\n")
    );
    assert!(api_doc!(cusparseDbsrsv2_solve).contains("#cusparse-t-bsrsv2-solve)"));
}
