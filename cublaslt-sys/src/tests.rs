//! The generated bindings, the loader's search and its errors.

use std::path::PathBuf;

use super::*;

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    assert_eq!(OLDEST_DATED_VERSION, (expected, 0));
}

#[test]
fn the_matmul_entry_points_are_there() {
    let names: Vec<&str> = ENTRY_POINTS.iter().map(EntryPoint::name).collect();
    for symbol in [
        "cublasLtCreate",
        "cublasLtDestroy",
        "cublasLtGetVersion",
        "cublasLtMatmul",
        "cublasLtMatmulDescCreate",
        "cublasLtMatmulDescSetAttribute",
        "cublasLtMatrixLayoutCreate",
        "cublasLtMatrixLayoutSetAttribute",
        "cublasLtMatmulPreferenceCreate",
        "cublasLtMatmulPreferenceSetAttribute",
        "cublasLtMatmulAlgoGetHeuristic",
    ] {
        assert!(names.contains(&symbol), "{symbol} missing");
    }
    assert!(VERSIONED_NAMES.is_empty());
}

#[test]
fn attributes_and_epilogues_are_open_newtypes() {
    assert_eq!(cublasStatus_t::CUBLAS_STATUS_SUCCESS.0, 0);
    assert_eq!(cublasOperation_t::CUBLAS_OP_T.0, 1);
    assert_eq!(cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT.0, 1);
    assert_eq!(cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU.0, 2);
    assert_eq!(cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS.0, 4);
    assert_eq!(cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU.0, 32);
    assert_eq!(cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS.0, 36);
    assert_eq!(cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_AUX_BIAS.0, 164);
    assert_eq!(cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_AUX_BIAS.0, 134);
    assert_eq!(
        cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA.0,
        3
    );
    assert_eq!(cudaDataType_t::CUDA_R_8F_E5M2.0, 29);
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of cuBLASLt's symbols).
    let lt = unsafe {
        Library::open_first("libc", [PathBuf::from("libc.so.6")], &ENTRY_POINTS)
            .map(|library| CublasLt::new(library))
    }
    .expect("libc.so.6 loads");
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe { lt.cublasLtGetVersion() }.unwrap_err();
    assert!(
        matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cublasLtGetVersion",
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn api_doc_links_the_section_of_each_function() {
    let reference = if ABI_MAJOR == 12 {
        "https://docs.nvidia.com/cuda/archive/12.9.1/cublas/index.html"
    } else {
        "https://docs.nvidia.com/cuda/cublas/index.html"
    };
    assert_eq!(
        api_doc!(cublasLtMatmul),
        format!("\nCalls [`cublasLtMatmul`]({reference}#cublasltmatmul).\n")
    );
}
