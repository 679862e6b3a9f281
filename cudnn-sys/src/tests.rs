//! The generated bindings and the loader's errors.

use std::path::PathBuf;

use super::*;

#[test]
fn header_major_matches_the_features() {
    let expected = if cfg!(feature = "cuda-13") { 13 } else { 12 };
    assert_eq!(HEADER_CUDA_VERSION / 1000, expected);
    assert_eq!(ABI_MAJOR, expected);
    // cuDNN's own numbering, the same under both ABIs.
    assert_eq!(CUDNN_MAJOR, 9);
    assert_eq!(
        CUDNN_VERSION,
        CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL
    );
    // The history goes back to cuDNN 9.0 under CUDA 12, to the first `-cu13` wheel under 13.
    let oldest = if expected == 12 { (9, 0) } else { (9, 12) };
    assert_eq!(OLDEST_DATED_VERSION, oldest);
}

#[test]
fn the_graph_api_and_the_legacy_operations_are_there() {
    let names: Vec<&str> = ENTRY_POINTS.iter().map(EntryPoint::name).collect();
    for symbol in [
        "cudnnGetVersion",
        "cudnnGetErrorString",
        "cudnnCreate",
        "cudnnDestroy",
        "cudnnSetStream",
        "cudnnBackendCreateDescriptor",
        "cudnnBackendDestroyDescriptor",
        "cudnnBackendInitialize",
        "cudnnBackendFinalize",
        "cudnnBackendSetAttribute",
        "cudnnBackendGetAttribute",
        "cudnnBackendExecute",
        "cudnnBackendPopulateCudaGraph",
        "cudnnCreateTensorDescriptor",
        "cudnnSetTensorNdDescriptor",
        "cudnnConvolutionForward",
        "cudnnConvolutionBackwardData",
        "cudnnConvolutionBackwardFilter",
        "cudnnSoftmaxForward",
        "cudnnMultiHeadAttnForward",
    ] {
        assert!(names.contains(&symbol), "{symbol} missing");
    }
    assert!(VERSIONED_NAMES.is_empty(), "{VERSIONED_NAMES:?}");
}

#[test]
fn statuses_and_enums_are_open_newtypes() {
    assert_eq!(cudnnStatus_t::CUDNN_STATUS_SUCCESS, cudnnStatus_t(0));
    assert_eq!(cudnnStatus_t::CUDNN_STATUS_BAD_PARAM.0, 2000);
    assert_eq!(cudnnStatus_t::CUDNN_STATUS_NOT_SUPPORTED.0, 3000);
    assert_ne!(cudnnStatus_t(4242), cudnnStatus_t::CUDNN_STATUS_SUCCESS);
    assert_eq!(cudnnDataType_t::CUDNN_DATA_HALF.0, 2);
    assert_eq!(cudnnDataType_t::CUDNN_DATA_BFLOAT16.0, 9);
    assert_eq!(
        cudnnBackendDescriptorType_t::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR.0,
        19
    );
    assert_eq!(
        cudnnBackendAttributeName_t::CUDNN_ATTR_OPERATIONGRAPH_HANDLE.0,
        800
    );
    assert_eq!(cudnnBackendAttributeType_t::CUDNN_TYPE_HANDLE.0, 0);
    assert_eq!(cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A.0, 3);
}

#[test]
fn entry_points_newer_than_the_oldest_header_are_dated() {
    let since = |symbol: &str| {
        ENTRY_POINTS
            .iter()
            .find(|entry| entry.name() == symbol)
            .and_then(EntryPoint::introduced)
    };
    assert_eq!(since("cudnnCreate"), None);
    assert_eq!(since("cudnnBackendExecute"), None);
    // `@since cuDNN 9.22.0` in the header, and the first wheel declaring it.
    assert_eq!(
        since("cudnnCausalConv1dForward"),
        Some(Introduced::Library(LibraryVersion::new(9, 22)))
    );
    assert!(api_doc!(cudnnCausalConv1dForward).contains("Needs cuDNN 9.22."));
    if_abi12! {
        // The native CUDA graph API came with cuDNN 9.5, before the first `-cu13` wheel.
        assert_eq!(
            since("cudnnBackendPopulateCudaGraph"),
            Some(Introduced::Library(LibraryVersion::new(9, 5)))
        );
    }
    if_abi13! {
        assert_eq!(since("cudnnBackendPopulateCudaGraph"), None);
    }
}

#[test]
fn a_library_without_the_symbol_gives_the_typed_error() {
    // SAFETY: libc's initialisers have run already in this process; only lookups happen, and
    // none of its functions is called (it has none of cuDNN's symbols).
    let cudnn = unsafe {
        Library::open_first(LIBCUDNN.name, [PathBuf::from("libc.so.6")], &ENTRY_POINTS)
            .map(|library| Cudnn::new(library))
    }
    .expect("libc.so.6 loads");
    let mut handle: cudnnHandle_t = std::ptr::null_mut();
    // SAFETY: the call never reaches C: the symbol is missing.
    let error = unsafe { cudnn.cudnnCreate(&mut handle) }.unwrap_err();
    assert!(
        matches!(
            error,
            LoadError::SymbolMissing {
                symbol: "cudnnCreate",
                since: None,
                ..
            }
        ),
        "{error:?}"
    );
    // SAFETY: as above.
    let error = unsafe { cudnn.cudnnSubquadraticOpsVersionCheck() }.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("introduced in cuDNN 9.22; update cuDNN"),
        "{error}"
    );
}

#[test]
fn api_doc_links_the_page_of_each_functions_library() {
    let reference = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/";
    assert_eq!(
        api_doc!(cudnnBackendExecute),
        format!(
            "\nCalls [`cudnnBackendExecute`]({reference}cudnn-graph-library.html\
             #cudnnbackendexecute).\n"
        )
    );
    assert!(
        api_doc!(cudnnSetTensorNdDescriptor)
            .contains("cudnn-ops-library.html#cudnnsettensornddescriptor")
    );
    assert!(
        api_doc!(cudnnConvolutionForward)
            .contains("cudnn-cnn-library.html#cudnnconvolutionforward")
    );
    assert!(
        api_doc!(cudnnMultiHeadAttnForward)
            .contains("cudnn-adv-library.html#cudnnmultiheadattnforward")
    );
    assert!(api_doc!(cudnnCausalConv1dForward).contains(&format!("{reference}overview.html")));
}
