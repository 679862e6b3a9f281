//! Graphs: adding nodes and edges (`cuGraphAddNode`/`_v2`, `cuGraphAddDependencies`/`_v2`),
//! reading and setting a stream's capture (`cuStreamGetCaptureInfo_v2`/`_v3`,
//! `cuStreamUpdateCaptureDependencies`/`_v2`), and the driver's graph, executable and node ids
//! (CUDA 13 ABI only).

use crate::error::{Error, Result, cu};
use cuda_sys::{
    CUgraph, CUgraphExec, CUgraphNode, CUgraphNodeParams, CUstream, CUstreamCaptureStatus,
    CUstreamUpdateCaptureDependencies_flags, Driver, if_abi12, if_abi13,
};

/// `list` as the pointer a driver call takes for an array: null when empty.
pub(super) fn array_ptr<T>(list: &[T]) -> *const T {
    if list.is_empty() {
        std::ptr::null()
    } else {
        list.as_ptr()
    }
}

/// Adds a node described by `params` to `graph`, after `dependencies`: `cuGraphAddNode` (CUDA
/// 12.2) under 12, `cuGraphAddNode_v2` (12.3, which adds per-edge data; none is given) under
/// 13, whose header names only that one.
///
/// # Safety
///
/// `graph` and every dependency must be valid (the dependencies nodes of `graph`), and
/// `params` a node description valid for its type.
pub(crate) unsafe fn graph_add_node(
    driver: &'static Driver,
    graph: CUgraph,
    dependencies: &[CUgraphNode],
    params: &mut CUgraphNodeParams,
) -> Result<CUgraphNode> {
    let mut node: CUgraphNode = std::ptr::null_mut();
    let (deps, count) = (array_ptr(dependencies), dependencies.len());
    let _ = (driver, graph, deps, count, &params);
    if_abi12! {
        // SAFETY: valid out-pointer; the rest is the caller's promise.
        unsafe { cu!(driver, cuGraphAddNode(&mut node, graph, deps, count, params)) }?;
    }
    if_abi13! {
        // SAFETY: as above; no edge data (null) means default edges.
        unsafe {
            cu!(
                driver,
                cuGraphAddNode_v2(&mut node, graph, deps, std::ptr::null(), count, params)
            )
        }?;
    }
    Ok(node)
}

/// Adds the edge `from -> to` to `graph`: `cuGraphAddDependencies` under 12,
/// `cuGraphAddDependencies_v2` (12.3, with per-edge data; none is given) under 13.
///
/// # Safety
///
/// `graph` must be valid and both nodes belong to it.
pub(crate) unsafe fn graph_add_dependency(
    driver: &'static Driver,
    graph: CUgraph,
    from: CUgraphNode,
    to: CUgraphNode,
) -> Result<()> {
    let _ = (driver, graph, from, to);
    if_abi12! {
        // SAFETY: one valid node on each side; the rest is the caller's promise.
        unsafe { cu!(driver, cuGraphAddDependencies(graph, &from, &to, 1)) }?;
    }
    if_abi13! {
        // SAFETY: as above; no edge data.
        unsafe { cu!(driver, cuGraphAddDependencies_v2(graph, &from, &to, std::ptr::null(), 1)) }?;
    }
    Ok(())
}

/// What `cuStreamGetCaptureInfo` says of a stream.
pub(crate) struct CaptureInfo {
    /// Whether the stream captures.
    pub(crate) status: CUstreamCaptureStatus,
    /// The capture's id, unique in the process (0 when not capturing).
    pub(crate) id: u64,
    /// The graph being captured into (null when not capturing).
    pub(crate) graph: CUgraph,
    /// The nodes the stream's next captured work will depend on (the driver's array, valid
    /// until the stream's next call).
    dependencies: *const CUgraphNode,
    count: usize,
}

impl CaptureInfo {
    /// The nodes the stream's next captured work will depend on.
    ///
    /// # Safety
    ///
    /// No call may have been made on the stream since the query.
    pub(crate) unsafe fn dependencies(&self) -> &[CUgraphNode] {
        if self.dependencies.is_null() || self.count == 0 {
            return &[];
        }
        // SAFETY: the driver's array of `count` nodes, valid until the stream's next call.
        unsafe { std::slice::from_raw_parts(self.dependencies, self.count) }
    }
}

/// A stream's capture status, capture id, graph and current dependencies:
/// `cuStreamGetCaptureInfo_v2` (11.3) under 12, `cuStreamGetCaptureInfo_v3` (12.3, which adds
/// edge data) under 13. The edge data is asked for (a query without it fails as lossy when a
/// dependency has a programmatic edge) and not kept: what the crate adds after the
/// dependencies depends on each of them fully.
///
/// # Safety
///
/// `stream` must be valid.
pub(crate) unsafe fn stream_capture_info(
    driver: &'static Driver,
    stream: CUstream,
) -> Result<CaptureInfo> {
    let mut info = CaptureInfo {
        status: CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE,
        id: 0,
        graph: std::ptr::null_mut(),
        dependencies: std::ptr::null(),
        count: 0,
    };
    let _ = (driver, stream);
    if_abi12! {
        // SAFETY: every out-pointer is valid; the stream is the caller's promise.
        unsafe {
            cu!(
                driver,
                cuStreamGetCaptureInfo_v2(
                    stream,
                    &mut info.status,
                    &mut info.id,
                    &mut info.graph,
                    &mut info.dependencies,
                    &mut info.count,
                )
            )
        }?;
    }
    if_abi13! {
        let mut edges: *const cuda_sys::CUgraphEdgeData = std::ptr::null();
        // SAFETY: as above; the driver's edge data array is only pointed at (and not read).
        unsafe {
            cu!(
                driver,
                cuStreamGetCaptureInfo_v3(
                    stream,
                    &mut info.status,
                    &mut info.id,
                    &mut info.graph,
                    &mut info.dependencies,
                    &mut edges,
                    &mut info.count,
                )
            )
        }?;
    }
    Ok(info)
}

/// Makes `nodes` the dependencies of the next work captured on `stream` (replacing the
/// current ones): `cuStreamUpdateCaptureDependencies` (11.3) under 12,
/// `cuStreamUpdateCaptureDependencies_v2` (12.3, with edge data; none is given) under 13.
///
/// # Safety
///
/// `stream` must be capturing, and every node a node of its capture graph.
pub(crate) unsafe fn set_capture_dependencies(
    driver: &'static Driver,
    stream: CUstream,
    nodes: &mut [CUgraphNode],
) -> Result<()> {
    let flags = CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES.0;
    let (list, count) = (nodes.as_mut_ptr(), nodes.len());
    let _ = (driver, stream, list, count, flags);
    if_abi12! {
        // SAFETY: `count` nodes at `list`; the rest is the caller's promise.
        unsafe { cu!(driver, cuStreamUpdateCaptureDependencies(stream, list, count, flags)) }?;
    }
    if_abi13! {
        // SAFETY: as above; no edge data (null) means default edges.
        unsafe {
            cu!(
                driver,
                cuStreamUpdateCaptureDependencies_v2(stream, list, std::ptr::null(), count, flags)
            )
        }?;
    }
    Ok(())
}

/// Why the CUDA 12 ABI has no graph ids.
const NO_IDS: &str = "cuGraphGetId, cuGraphExecGetId, cuGraphNodeGetLocalId and \
    cuGraphNodeGetToolsId are in the CUDA 13 bindings only (they need a CUDA 13.1 driver); build \
    with the cuda-13 feature";

/// The driver's id of `graph`, unique in the process (`cuGraphGetId`, 13 ABI, CUDA 13.1
/// drivers); [`Error::Unsupported`] under 12.
///
/// # Safety
///
/// `graph` must be valid.
pub(crate) unsafe fn graph_id(driver: &'static Driver, graph: CUgraph) -> Result<u32> {
    let _ = (driver, graph);
    if_abi13! {
        let mut id = 0;
        // SAFETY: a valid graph (the caller's promise) and out-pointer.
        unsafe { cu!(driver, cuGraphGetId(graph, &mut id)) }?;
        return Ok(id);
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported("graph ids", NO_IDS))
}

/// The driver's id of `exec`, unique in the process (`cuGraphExecGetId`); as [`graph_id`].
///
/// # Safety
///
/// `exec` must be valid.
pub(crate) unsafe fn exec_id(driver: &'static Driver, exec: CUgraphExec) -> Result<u32> {
    let _ = (driver, exec);
    if_abi13! {
        let mut id = 0;
        // SAFETY: a valid executable (the caller's promise) and out-pointer.
        unsafe { cu!(driver, cuGraphExecGetId(exec, &mut id)) }?;
        return Ok(id);
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported("executable graph ids", NO_IDS))
}

/// The id of `node` within its graph (`cuGraphNodeGetLocalId`); as [`graph_id`].
///
/// # Safety
///
/// `node` must be a live node.
pub(crate) unsafe fn node_local_id(driver: &'static Driver, node: CUgraphNode) -> Result<u32> {
    let _ = (driver, node);
    if_abi13! {
        let mut id = 0;
        // SAFETY: a live node (the caller's promise) and out-pointer.
        unsafe { cu!(driver, cuGraphNodeGetLocalId(node, &mut id)) }?;
        return Ok(id);
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported("graph node ids", NO_IDS))
}

/// The id tools (CUPTI, Nsight) give `node`, unique in the process
/// (`cuGraphNodeGetToolsId`); as [`graph_id`].
///
/// # Safety
///
/// `node` must be a live node.
pub(crate) unsafe fn node_tools_id(driver: &'static Driver, node: CUgraphNode) -> Result<u64> {
    let _ = (driver, node);
    if_abi13! {
        let mut id = 0;
        // SAFETY: a live node (the caller's promise) and out-pointer.
        unsafe { cu!(driver, cuGraphNodeGetToolsId(node, &mut id)) }?;
        return Ok(id);
    }
    #[allow(unreachable_code)]
    Err(Error::unsupported("graph node tools ids", NO_IDS))
}
