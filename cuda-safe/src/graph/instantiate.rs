//! Instantiation: the options checked first, then one `cuGraphInstantiateWithParams`, whose
//! reason for a refusal (`CUgraphInstantiateResult`) becomes [`Error::GraphInstantiateRefused`].

use super::Graph;
use super::exec::InstantiateOptions;
use crate::error::{Error, Result, cu};
use cuda_sys::{
    CUDA_GRAPH_INSTANTIATE_PARAMS, CUdevice_attribute, CUgraphExec, CUgraphInstantiateResult,
};

impl InstantiateOptions {
    /// Refuses what the driver documents it refuses, before any call: device launch with
    /// auto-free on launch.
    pub(super) fn check(&self) -> Result<()> {
        if self.device_launch && self.auto_free_on_launch {
            return Err(Error::invalid_argument(
                "a graph instantiated for device launch cannot free its allocations on launch: \
                 device_launch and auto_free_on_launch exclude each other",
            ));
        }
        Ok(())
    }
}

/// Instantiates `graph` with `options` (checked first; device launch needs a device with
/// unified addressing), in the current context, and returns the new executable.
pub(super) fn instantiate(graph: &Graph, options: InstantiateOptions) -> Result<CUgraphExec> {
    options.check()?;
    if options.device_launch
        && graph
            .context
            .device()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)?
            == 0
    {
        return Err(Error::unsupported(
            "graphs instantiated for device launch",
            "the device has no unified addressing",
        ));
    }
    let driver = graph.driver();
    let mut raw: CUgraphExec = std::ptr::null_mut();
    let mut params = CUDA_GRAPH_INSTANTIATE_PARAMS {
        flags: options.flags(),
        hUploadStream: std::ptr::null_mut(),
        hErrNode_out: std::ptr::null_mut(),
        result_out: CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_SUCCESS,
    };
    // SAFETY: a valid graph, out-pointer and parameters (no upload stream: the flags never ask
    // for an upload); the driver writes the executable and the result.
    let called = unsafe {
        cu!(
            driver,
            cuGraphInstantiateWithParams(&mut raw, graph.as_raw(), &mut params)
        )
    };
    let made = called.is_ok() && !raw.is_null();
    let outcome = outcome(called, params.result_out);
    if outcome.is_err() && made {
        // A refusal with an executable made anyway (the call succeeded): not kept.
        // SAFETY: the executable was just made by this call, nothing else has it.
        if let Err(error) = unsafe { cu!(driver, cuGraphExecDestroy(raw)) } {
            log::warn!("cuda-safe: destroying a refused executable graph failed: {error}");
        }
    }
    outcome.map(|()| raw)
}

/// What the call's result and the driver's reason together say.
fn outcome(called: Result<()>, reason: CUgraphInstantiateResult) -> Result<()> {
    use CUgraphInstantiateResult as Reason;
    match (called, reason) {
        (Ok(()), Reason::CUDA_GRAPH_INSTANTIATE_SUCCESS) => Ok(()),
        // CUDA_GRAPH_INSTANTIATE_ERROR: "described in the return value of the function".
        (
            Err(error),
            Reason::CUDA_GRAPH_INSTANTIATE_SUCCESS | Reason::CUDA_GRAPH_INSTANTIATE_ERROR,
        ) => Err(error),
        (Ok(()), Reason::CUDA_GRAPH_INSTANTIATE_ERROR) => Err(Error::unexpected(
            "cuGraphInstantiateWithParams",
            "it succeeded, with CUDA_GRAPH_INSTANTIATE_ERROR as the result",
        )),
        (_, reason) => Err(refusal(reason)),
    }
}

/// [`Error::GraphInstantiateRefused`] for the driver's reason.
fn refusal(reason: CUgraphInstantiateResult) -> Error {
    use CUgraphInstantiateResult as Reason;
    let detail = match reason {
        Reason::CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE => {
            "the graph's structure is invalid (a cycle, for one)"
        }
        Reason::CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED => {
            "a node does what a graph instantiated for device launch cannot (device graphs hold \
             kernel, memcpy, memset and child-graph nodes only, all on one device)"
        }
        Reason::CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED => {
            "the nodes belong to several contexts, which a graph instantiated for device launch \
             cannot have"
        }
        Reason::CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED => {
            "a conditional handle of the graph is used by no conditional node"
        }
        _ => "the driver gave a reason it did not document",
    };
    Error::GraphInstantiateRefused { reason, detail }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CUgraphInstantiateResult as Reason;
    use cuda_sys::CUresult;

    #[test]
    fn device_launch_and_auto_free_exclude_each_other() {
        let both = InstantiateOptions {
            device_launch: true,
            auto_free_on_launch: true,
            ..Default::default()
        };
        let error = both.check().unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        assert!(error.to_string().contains("auto_free_on_launch"), "{error}");
        for fine in [
            InstantiateOptions::default(),
            InstantiateOptions {
                device_launch: true,
                use_node_priority: true,
                ..Default::default()
            },
            InstantiateOptions {
                auto_free_on_launch: true,
                ..Default::default()
            },
        ] {
            assert!(fine.check().is_ok(), "{fine:?}");
        }
    }

    #[test]
    fn the_reason_decides_over_the_code() {
        let failed = || Err(Error::unexpected("test", "a driver error"));
        assert!(outcome(Ok(()), Reason::CUDA_GRAPH_INSTANTIATE_SUCCESS).is_ok());
        for reason in [
            Reason::CUDA_GRAPH_INSTANTIATE_SUCCESS,
            Reason::CUDA_GRAPH_INSTANTIATE_ERROR,
        ] {
            let error = outcome(failed(), reason).unwrap_err();
            assert!(error.to_string().contains("a driver error"), "{error}");
        }
        let odd = outcome(Ok(()), Reason::CUDA_GRAPH_INSTANTIATE_ERROR).unwrap_err();
        assert!(matches!(odd, Error::UnexpectedAnswer { .. }), "{odd}");
        let error = Error::Cuda {
            api: "cuGraphInstantiateWithParams",
            code: CUresult::CUDA_ERROR_INVALID_VALUE,
            name: "CUDA_ERROR_INVALID_VALUE",
            message: "invalid argument",
        };
        for called in [Ok(()), Err(error)] {
            let refused = outcome(
                called,
                Reason::CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED,
            );
            assert!(
                matches!(
                    refused,
                    Err(Error::GraphInstantiateRefused {
                        reason: Reason::CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED,
                        ..
                    })
                ),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn refusals_carry_the_drivers_reason() {
        for (reason, words) in [
            (Reason::CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE, "a cycle"),
            (
                Reason::CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED,
                "kernel, memcpy, memset and child-graph nodes only",
            ),
            (
                Reason::CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED,
                "several contexts",
            ),
            (
                Reason::CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED,
                "no conditional node",
            ),
            (CUgraphInstantiateResult(99), "did not document"),
        ] {
            let error = refusal(reason);
            assert!(error.to_string().contains(words), "{error}");
            assert!(
                error
                    .to_string()
                    .starts_with("cuGraphInstantiateWithParams refused"),
                "{error}"
            );
            match error {
                Error::GraphInstantiateRefused { reason: kept, .. } => assert_eq!(kept, reason),
                other => panic!("unexpected {other:?}"),
            }
        }
    }
}
