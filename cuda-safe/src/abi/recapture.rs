//! Re-capturing a graph (`cuStreamBeginRecaptureToGraph`, CUDA 13.3): in the CUDA 13 bindings
//! only, with the callback through which the driver reports each node whose parameters
//! changed.

use std::sync::{Mutex, PoisonError};

use crate::error::{Error, Result};
use cuda_sys::{CUgraph, CUgraphNode, CUstream, CUstreamCaptureMode, Driver, if_abi13};

/// What the driver said of the nodes whose parameters a re-capture changed, by address: the
/// node and whether an executable can take the change by an update. Filled by the driver's
/// callback while the capture lasts.
#[derive(Debug, Default)]
pub(crate) struct RecaptureLog {
    nodes: Mutex<Vec<(usize, bool)>>,
}

impl RecaptureLog {
    /// The nodes reported so far, each with whether an update can apply its change.
    pub(crate) fn take(&self) -> Vec<(CUgraphNode, bool)> {
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        nodes
            .drain(..)
            .map(|(node, updatable)| (node as CUgraphNode, updatable))
            .collect()
    }
}

if_abi13! {
    use crate::error::cu;
    use cuda_sys::{CUgraphNodeParams, CUgraphRecaptureStatus, CUresult};

    impl RecaptureLog {
        /// Notes that `node` changed, and whether an update can apply the change.
        fn note(&self, node: CUgraphNode, updatable: bool) {
            let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
            nodes.push((node as usize, updatable));
        }
    }

    /// The driver's callback for a node whose parameters changed: noted in the log `data`
    /// points at; the capture goes on unless the driver reports an error for the node.
    ///
    /// # Safety
    ///
    /// `data` is the [`RecaptureLog`] given to [`begin_recapture`], still alive.
    unsafe extern "C" fn note_change(
        data: *mut std::ffi::c_void,
        node: CUgraphNode,
        _original: *const CUgraphNodeParams,
        _recaptured: *const CUgraphNodeParams,
        status: CUgraphRecaptureStatus,
    ) -> CUresult {
        // SAFETY: the caller's promise: the log outlives the capture that calls back.
        let log = unsafe { &*data.cast::<RecaptureLog>() };
        match status {
            CUgraphRecaptureStatus::CU_GRAPH_RECAPTURE_ELIGIBLE_FOR_UPDATE => {
                log.note(node, true);
                CUresult::CUDA_SUCCESS
            }
            CUgraphRecaptureStatus::CU_GRAPH_RECAPTURE_INELIGIBLE_FOR_UPDATE => {
                log.note(node, false);
                CUresult::CUDA_SUCCESS
            }
            _ => CUresult::CUDA_ERROR_GRAPH_RECAPTURE_FAILURE,
        }
    }
}

/// Begins re-capturing `stream` into `graph` (`cuStreamBeginRecaptureToGraph`), each changed
/// node noted in `log`; [`Error::Unsupported`] under the CUDA 12 ABI, whose bindings lack it.
///
/// # Safety
///
/// `stream` and `graph` must be valid, and `log` must outlive the capture (until
/// `cuStreamEndCapture` on `stream` has returned).
pub(crate) unsafe fn begin_recapture(
    driver: &'static Driver,
    stream: CUstream,
    mode: CUstreamCaptureMode,
    graph: CUgraph,
    log: &RecaptureLog,
) -> Result<()> {
    let _ = (driver, stream, mode, graph, log);
    if_abi13! {
        let data = std::ptr::from_ref(log).cast_mut().cast();
        // SAFETY: the caller's promise; the callback only notes into `log`, behind its lock.
        unsafe {
            cu!(
                driver,
                cuStreamBeginRecaptureToGraph(stream, mode, graph, Some(note_change), data)
            )
        }?;
        return Ok(());
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported(
        "re-capture into a graph",
        "cuStreamBeginRecaptureToGraph is in the CUDA 13 bindings only (it needs a CUDA 13.3 \
         driver); build with the cuda-13 feature",
    ))
}
