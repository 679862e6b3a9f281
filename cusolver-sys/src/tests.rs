//! The generated bindings and the loader's errors.

use std::path::PathBuf;

use super::*;

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    // cuSOLVER's own numbering: 11 goes with CUDA 12, 12 with CUDA 13.
    assert_eq!(CUSOLVER_VER_MAJOR, expected - 1);
    let oldest = if expected == 12 { (11, 4) } else { (12, 0) };
    assert_eq!(OLDEST_DATED_VERSION, oldest);
}

#[test]
fn the_dense_routines_and_the_64_bit_api_are_there() {
    let names: Vec<&str> = ENTRY_POINTS.iter().map(EntryPoint::name).collect();
    for symbol in [
        "cusolverGetVersion",
        "cusolverGetProperty",
        "cusolverDnCreate",
        "cusolverDnDestroy",
        "cusolverDnSetStream",
        "cusolverDnCreateParams",
        "cusolverDnSgetrf_bufferSize",
        "cusolverDnDgetrf",
        "cusolverDnDgetrs",
        "cusolverDnDpotrf",
        "cusolverDnDpotrs",
        "cusolverDnDgeqrf",
        "cusolverDnDormqr",
        "cusolverDnDsyevd",
        "cusolverDnDgesvd",
        "cusolverDnDgesvdjBatched",
        "cusolverDnXgetrf_bufferSize",
        "cusolverDnXgetrf",
        "cusolverDnXgetrs",
        "cusolverDnXpotrf",
        "cusolverDnXgeqrf",
        "cusolverDnXsyevd",
        "cusolverDnXgesvd",
    ] {
        assert!(names.contains(&symbol), "{symbol} missing");
    }
    assert!(VERSIONED_NAMES.is_empty(), "{VERSIONED_NAMES:?}");
}

#[test]
fn statuses_and_enums_are_open_newtypes() {
    assert_eq!(
        cusolverStatus_t::CUSOLVER_STATUS_SUCCESS,
        cusolverStatus_t(0)
    );
    assert_eq!(cusolverStatus_t::CUSOLVER_STATUS_INVALID_VALUE.0, 3);
    assert_ne!(
        cusolverStatus_t(99),
        cusolverStatus_t::CUSOLVER_STATUS_SUCCESS
    );
    assert_eq!(cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR.0, 1);
    // cuBLAS's enums, with cuBLAS's values.
    assert_eq!(cublasFillMode_t::CUBLAS_FILL_MODE_LOWER.0, 0);
    assert_eq!(cublasFillMode_t::CUBLAS_FILL_MODE_UPPER.0, 1);
    assert_eq!(cublasOperation_t::CUBLAS_OP_T.0, 1);
    assert_eq!(cublasSideMode_t::CUBLAS_SIDE_RIGHT.0, 1);
    assert_eq!(cudaDataType::CUDA_R_64F.0, 1);
}

#[test]
fn entry_points_newer_than_the_oldest_header_are_dated() {
    let since = |symbol: &str| {
        ENTRY_POINTS
            .iter()
            .find(|entry| entry.name() == symbol)
            .and_then(EntryPoint::introduced)
    };
    assert_eq!(since("cusolverDnXgetrf"), None);
    if_abi12! {
        assert_eq!(
            since("cusolverDnXgeev"),
            Some(Introduced::Library(LibraryVersion::new(11, 7)))
        );
        assert!(api_doc!(cusolverDnSetDeterministicMode).contains("Needs cuSOLVER 11.5."));
    }
    if_abi13! {
        assert_eq!(since("cusolverDnXgeev"), None);
        assert_eq!(
            since("cusolverDnXsytrf"),
            Some(Introduced::Library(LibraryVersion::new(12, 3)))
        );
    }
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of cuSOLVER's symbols).
    let cusolver = unsafe {
        Library::open_first(
            LIBCUSOLVER.name,
            [PathBuf::from("libc.so.6")],
            &ENTRY_POINTS,
        )
        .map(|library| Cusolver::new(library))
    }
    .expect("libc.so.6 loads");
    let mut handle: cusolverDnHandle_t = std::ptr::null_mut();
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe { cusolver.cusolverDnCreate(&mut handle) }.unwrap_err();
    assert!(
        matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cusolverDnCreate",
                since: None,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn api_doc_links_the_section_of_each_routine() {
    let reference = if ABI_MAJOR == 12 {
        "https://docs.nvidia.com/cuda/archive/12.9.1/cusolver/index.html"
    } else {
        "https://docs.nvidia.com/cuda/cusolver/index.html"
    };
    assert_eq!(
        api_doc!(cusolverDnXgetrf),
        format!("\nCalls [`cusolverDnXgetrf`]({reference}#cusolverdnxgetrf).\n")
    );
    assert_eq!(
        api_doc!(cusolverDnDgetrf_bufferSize),
        format!("\nCalls [`cusolverDnDgetrf_bufferSize`]({reference}#cusolverdn-t-getrf).\n")
    );
    assert!(api_doc!(cusolverDnZZgesv).contains("#cusolverdn-t1-t2-gesv)"));
}
