use super::*;
use std::path::PathBuf;

#[test]
fn cuda_error_names_the_api_and_code_without_a_driver() {
    let error = Error::cuda("cuMemAlloc_v2", CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    assert_eq!(error.cuda_code(), Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    assert!(
        error.to_string().starts_with("cuMemAlloc_v2 failed: "),
        "{error}"
    );
}

#[test]
fn check_maps_success_codes_and_load_errors() {
    assert!(check("cuInit", Ok(CUresult::CUDA_SUCCESS)).is_ok());
    let error = check("cuInit", Ok(CUresult::CUDA_ERROR_NO_DEVICE)).unwrap_err();
    assert_eq!(error.cuda_code(), Some(CUresult::CUDA_ERROR_NO_DEVICE));
    let missing = LoadError::SymbolMissing {
        library: "the CUDA driver (libcuda)",
        path: PathBuf::from("libcuda.so.1"),
        symbol: "cuDevSmResourceSplit",
        since: Some(Introduced::Cuda(CudaVersion(13010))),
    };
    let error = check("cuDevSmResourceSplit", Err(missing)).unwrap_err();
    assert!(error.is_symbol_missing());
    assert_eq!(error.missing_since(), Some(CudaVersion(13010)));
    assert!(
        error.to_string().contains("introduced in CUDA 13.1"),
        "{error}"
    );
}

#[test]
fn nvrtc_error_shows_the_log() {
    let error = Error::Nvrtc {
        api: "nvrtcCompileProgram",
        code: nvrtc_sys::nvrtcResult::NVRTC_ERROR_COMPILATION,
        message: "NVRTC_ERROR_COMPILATION",
        log: Some("k.cu(1): error: expected a \";\"\n".into()),
    };
    let text = error.to_string();
    assert!(text.contains("nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION\nk.cu(1)"));
}

#[test]
fn unknown_codes_are_kept() {
    let error = check_nvml(
        "nvmlDeviceGetPowerUsage",
        Ok(nvml_sys::nvmlReturn_enum(12_345)),
    );
    match error.unwrap_err() {
        Error::Nvml { code, .. } => assert_eq!(code.0, 12_345),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn predicates_cover_every_library_and_wrapped_causes() {
    let oom = Error::cuda("cuMemAlloc_v2", CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    assert!(oom.is_out_of_memory() && !oom.is_not_supported() && !oom.is_no_device());
    let wrapped = Error::LaunchOrdering {
        source: Box::new(oom.clone()),
    };
    assert!(wrapped.is_out_of_memory());
    assert!(std::error::Error::source(&wrapped).is_some());
    assert!(Error::nvml("nvmlDeviceGetName", nvmlReturn_t::NVML_ERROR_MEMORY).is_out_of_memory());

    for unsupported in [
        Error::unsupported("workqueues", "needs CUDA 13.1"),
        Error::cuda("cuGreenCtxCreate", CUresult::CUDA_ERROR_NOT_SUPPORTED),
        Error::cuda(
            "cuLibraryLoadData",
            CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        ),
        Error::nvml(
            "nvmlDeviceGetFanSpeed",
            nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED,
        ),
        Error::Load(LoadError::SymbolMissing {
            library: "the CUDA driver (libcuda)",
            path: PathBuf::from("libcuda.so.1"),
            symbol: "cuDevSmResourceSplit",
            since: Some(Introduced::Cuda(CudaVersion(13010))),
        }),
    ] {
        assert!(unsupported.is_not_supported(), "{unsupported}");
        assert!(!unsupported.is_out_of_memory(), "{unsupported}");
    }

    let no_driver = Error::Load(LoadError::LibraryNotFound {
        library: cuda_sys::LIBCUDA.name,
        tried: Vec::new(),
    });
    assert!(no_driver.is_no_device());
    assert!(Error::cuda("cuInit", CUresult::CUDA_ERROR_NO_DEVICE).is_no_device());
    let no_nvrtc = Error::Load(LoadError::LibraryNotFound {
        library: nvrtc_sys::LIBNVRTC.name,
        tried: Vec::new(),
    });
    assert!(
        !no_nvrtc.is_no_device(),
        "a missing NVRTC still leaves the GPU usable"
    );
    assert!(!Error::invalid_argument("bad").is_no_device());
}

#[test]
fn impossible_answers_name_the_call() {
    let error = Error::unexpected("cuKernelGetName", "a null name");
    assert_eq!(
        error.to_string(),
        "cuKernelGetName gave an impossible answer: a null name"
    );
    let mismatch = Error::NvrtcVersionMismatch {
        assumed: "12.9".into(),
        loaded: "13.0".into(),
    };
    assert!(mismatch.to_string().contains("assumes NVRTC 12.9"));
}

#[test]
fn the_macros_name_the_function_called() {
    struct Fake;
    impl Fake {
        #[allow(non_snake_case)]
        fn cuStreamQuery(&self, answer: CUresult) -> Result<CUresult, LoadError> {
            Ok(answer)
        }
    }
    let error = cu!(Fake, cuStreamQuery(CUresult::CUDA_ERROR_LAUNCH_FAILED)).unwrap_err();
    assert!(matches!(
        error,
        Error::Cuda {
            api: "cuStreamQuery",
            ..
        }
    ));
    assert!(!cu_ready!(Fake, cuStreamQuery(CUresult::CUDA_ERROR_NOT_READY)).unwrap());
    assert!(cu_ready!(Fake, cuStreamQuery(CUresult::CUDA_SUCCESS)).unwrap());
}

#[test]
fn capture_errors_are_explained_and_recognised() {
    let error = Error::cuda(
        "cuStreamSynchronize",
        CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    );
    assert!(error.is_capture_error());
    assert!(
        error.to_string().contains("not allowed while the stream"),
        "{error}"
    );
    let ended = Error::cuda(
        "cuStreamEndCapture",
        CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    );
    assert!(ended.to_string().contains("can be used again"), "{ended}");
    for code in 900..=908 {
        assert!(
            Error::cuda("cuStreamEndCapture", CUresult(code)).is_capture_error(),
            "{code}"
        );
    }
    let plain = Error::cuda("cuMemAlloc_v2", CUresult::CUDA_ERROR_OUT_OF_MEMORY);
    assert!(!plain.is_capture_error());
    assert!(!plain.to_string().contains("; "), "{plain}");
}

#[test]
fn callback_panics_and_refused_updates_say_what_happened() {
    let one = Error::CallbackPanicked {
        message: "index out of bounds".into(),
        count: 1,
    };
    assert_eq!(
        one.to_string(),
        "a host callback panicked: index out of bounds"
    );
    let three = Error::CallbackPanicked {
        message: "boom".into(),
        count: 3,
    };
    assert!(three.to_string().ends_with("boom (and 2 more)"), "{three}");
    let refused = Error::GraphUpdateRefused {
        reason: CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
        detail: "the graphs' topologies differ",
        node: Some(3),
        from_node: Some(1),
    };
    assert!(
        refused.to_string().ends_with(
            "topologies differ (the edge from node 1 to node 3 of the new graph's nodes())"
        ),
        "{refused}"
    );
    let node_only = Error::GraphUpdateRefused {
        reason: CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED,
        detail: "a node's type changed",
        node: Some(0),
        from_node: None,
    };
    assert!(
        node_only
            .to_string()
            .ends_with("changed (node 0 of the new graph's nodes())"),
        "{node_only}"
    );
}

#[test]
fn errors_are_send_sync_and_small() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Error>();
    assert!(size_of::<Error>() <= 64, "{}", size_of::<Error>());
}

#[test]
fn debug_is_the_line_then_the_causes_it_does_not_say() {
    let plain = Error::invalid_argument("a 5-byte copy into 4 bytes");
    assert_eq!(format!("{plain:?}"), plain.to_string());
    let ordered = Error::LaunchOrdering {
        source: Box::new(Error::invalid_argument("the stream is gone")),
    };
    let debug = format!("{ordered:?}");
    assert!(debug.starts_with(&ordered.to_string()), "{debug}");
    assert!(
        debug.ends_with("\n\nCaused by:\n    invalid argument: the stream is gone"),
        "{debug}"
    );
    assert_eq!(debug.lines().next(), Some(ordered.to_string().as_str()));
}

#[test]
fn an_annex_error_keeps_its_type_and_answers_the_predicates() {
    #[derive(Debug, thiserror::Error)]
    #[error("cufftPlan1d failed: CUFFT_ALLOC_FAILED")]
    struct Annex;
    impl LibraryFailure for Annex {
        fn library(&self) -> &'static str {
            "cuFFT"
        }
        fn is_out_of_memory(&self) -> bool {
            true
        }
    }
    let error = Error::from_library(Annex);
    assert_eq!(error.to_string(), "cufftPlan1d failed: CUFFT_ALLOC_FAILED");
    assert!(error.is_out_of_memory() && !error.is_not_supported() && !error.is_no_device());
    assert!(error.library_error::<Annex>().is_some());
    assert!(error.library_error::<LoadErrorless>().is_none());
    match &error {
        Error::Library(inner) => assert_eq!(inner.library(), "cuFFT"),
        other => panic!("unexpected {other:?}"),
    }
    let wrapped = Error::LaunchOrdering {
        source: Box::new(error.clone()),
    };
    assert!(wrapped.is_out_of_memory(), "a wrapped cause still answers");
    assert_eq!(error.clone().to_string(), error.to_string());
}

/// Another annex error type, which an `Annex` error is not.
#[derive(Debug, thiserror::Error)]
#[error("other")]
struct LoadErrorless;

impl LibraryFailure for LoadErrorless {
    fn library(&self) -> &'static str {
        "other"
    }
}

#[test]
fn a_kernel_fault_poisons_the_context_and_a_failed_call_does_not() {
    for code in [700, 702, 710, 714, 715, 716, 717, 718, 719, 214, 226, 911] {
        let error = Error::cuda("cuStreamSynchronize", CUresult(code));
        assert!(error.is_context_poisoned(), "{code}: {error}");
        let wrapped = Error::LaunchOrdering {
            source: Box::new(error),
        };
        assert!(
            wrapped.is_context_poisoned(),
            "{code}: a wrapped cause still answers"
        );
    }
    for code in [1, 2, 98, 201, 400, 600, 701, 801, 900, 12_345] {
        let error = Error::cuda("cuLaunchKernel", CUresult(code));
        assert!(!error.is_context_poisoned(), "{code}: {error}");
    }
    assert!(!Error::invalid_argument("too long").is_context_poisoned());
}
