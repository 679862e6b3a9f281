//! Conditional nodes: a body graph run once (*if*), one of two (*if/else*), one of many
//! (*switch*) or again and again (*while*), as a value set on the GPU decides, without
//! returning to the host.
//!
//! The value lives in a [`ConditionalHandle`] of the graph. Kernels set it with the device
//! function `cudaGraphSetConditional(handle, value)` (declare it with
//! [`ConditionalHandle::DEVICE_DECLARATION`]), taking the handle as a kernel argument; it can
//! also start each replay at a default. Bodies are graphs built like any other, explicitly or
//! by capture, and copied into the node. They may hold kernels, copies, memsets, empty nodes,
//! child graphs and other conditional nodes, all in the graph's context; not host, event or
//! memory-allocation nodes.
//!
//! Driver support, checked before any node is added: *if* and *while* need a CUDA 12.4 driver,
//! *if/else* and *switch* a 12.8 one; older drivers give [`Error::Unsupported`]. The node is
//! added through `cuGraphAddNode` under the CUDA 12 ABI and `cuGraphAddNode_v2` under 13
//! (`abi::graph_add_node`); the parameters have one layout in both.

use super::{Graph, Node};
use crate::abi;
use crate::context::Context;
use crate::driver::cuda_driver_version;
use crate::error::{Error, Result, cu};
use crate::launch::KernelArg;
use cuda_sys::{
    CU_GRAPH_COND_ASSIGN_DEFAULT, CUDA_CONDITIONAL_NODE_PARAMS, CUgraph, CUgraphConditionalHandle,
    CUgraphConditionalNodeType, CUgraphNode, CUgraphNodeParams, CUgraphNodeType, CudaVersion,
    Driver,
};

/// The driver that runs *if* and *while* nodes.
const IF_WHILE_SINCE: CudaVersion = CudaVersion(12040);
/// The driver that runs *if/else* and *switch* nodes.
const ELSE_SWITCH_SINCE: CudaVersion = CudaVersion(12080);

/// The value a conditional node of a graph tests, set on the GPU by the graph's kernels
/// (`cudaGraphSetConditional`). Pass it to a kernel as an argument (an `unsigned long long`,
/// or `cudaGraphConditionalHandle` in CUDA C++).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConditionalHandle {
    pub(super) raw: CUgraphConditionalHandle,
    pub(super) graph: u64,
}

impl ConditionalHandle {
    /// The CUDA C++ declaration of `cudaGraphSetConditional`, the device function that sets a
    /// handle's value: put it before the kernels that call it (NVRTC knows the handle type,
    /// `cudaGraphConditionalHandle`, but not the function).
    pub const DEVICE_DECLARATION: &'static str = "extern \"C\" __device__ __cudart_builtin__ \
        void CUDARTAPI cudaGraphSetConditional(cudaGraphConditionalHandle handle, \
        unsigned int value);\n";

    /// The raw handle, as kernels receive it.
    pub fn as_raw(&self) -> CUgraphConditionalHandle {
        self.raw
    }
}

impl KernelArg for ConditionalHandle {
    type Repr = CUgraphConditionalHandle;

    #[inline(always)]
    fn to_repr(&self) -> CUgraphConditionalHandle {
        self.raw
    }
}

/// Refuses `what` when the driver (`have`) is older than `need`.
pub(super) fn require_driver(
    have: CudaVersion,
    need: CudaVersion,
    what: &'static str,
) -> Result<()> {
    if have < need {
        return Err(Error::unsupported(
            what,
            format!("it needs a CUDA {need} driver; this one supports CUDA {have}"),
        ));
    }
    Ok(())
}

/// Refuses a conditional node of `kind` with `bodies` bodies that the kind does not allow or
/// the driver cannot run.
pub(super) fn check_kind(kind: CUgraphConditionalNodeType, bodies: usize) -> Result<u32> {
    let (since, what) = requirement(kind, bodies)?;
    require_driver(cuda_driver_version()?, since, what)?;
    u32::try_from(bodies)
        .map_err(|_| Error::invalid_argument("more than u32::MAX conditional bodies"))
}

/// A new conditional handle of `graph`, whose nodes run in `context`, starting each replay at
/// `default` when given (`cuGraphConditionalHandleCreate`).
///
/// # Safety
///
/// `graph` must be valid (a graph, or a capture's graph while the capture lasts).
pub(super) unsafe fn create_handle(
    driver: &'static Driver,
    graph: CUgraph,
    context: &Context,
    default: Option<u32>,
) -> Result<CUgraphConditionalHandle> {
    require_driver(cuda_driver_version()?, IF_WHILE_SINCE, "conditional nodes")?;
    let flags = if default.is_some() {
        CU_GRAPH_COND_ASSIGN_DEFAULT
    } else {
        0
    };
    let mut raw: CUgraphConditionalHandle = 0;
    // SAFETY: valid out-pointer and context; the graph is the caller's promise.
    unsafe {
        cu!(
            driver,
            cuGraphConditionalHandleCreate(
                &mut raw,
                graph,
                context.as_raw(),
                default.unwrap_or(0),
                flags,
            )
        )
    }?;
    Ok(raw)
}

/// The description of a conditional node of `kind` testing `handle`, with `size` bodies, in
/// `context`; the driver fills its body graphs in ([`body_graphs`]).
pub(super) fn conditional_params(
    handle: CUgraphConditionalHandle,
    kind: CUgraphConditionalNodeType,
    size: u32,
    context: &Context,
) -> CUgraphNodeParams {
    let mut params = CUgraphNodeParams {
        type_: CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL,
        ..Default::default()
    };
    params.__bindgen_anon_1.conditional = CUDA_CONDITIONAL_NODE_PARAMS {
        handle,
        type_: kind,
        size,
        phGraph_out: std::ptr::null_mut(),
        ctx: context.as_raw(),
    };
    params
}

/// The body graphs the driver made for a conditional node added with `params`, one per body
/// (owned by the node).
pub(super) fn body_graphs(params: &CUgraphNodeParams) -> Result<&[CUgraph]> {
    // SAFETY: the conditional variant is the one `conditional_params` wrote, and the driver
    // filled its output array.
    let conditional = unsafe { params.__bindgen_anon_1.conditional };
    if conditional.phGraph_out.is_null() {
        return Err(Error::unexpected(
            "cuGraphAddNode",
            "a conditional node without body graphs",
        ));
    }
    // SAFETY: the driver's array of one body graph per body, owned by the node, which lives
    // while `params` is used (the caller's node).
    Ok(unsafe { std::slice::from_raw_parts(conditional.phGraph_out, conditional.size as usize) })
}

/// What a conditional node of `kind` with `bodies` bodies needs: the driver version, and a
/// number of bodies the kind allows.
fn requirement(
    kind: CUgraphConditionalNodeType,
    bodies: usize,
) -> Result<(CudaVersion, &'static str)> {
    match (kind, bodies) {
        (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF, 1) => {
            Ok((IF_WHILE_SINCE, "conditional if nodes"))
        }
        (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF, 2) => {
            Ok((ELSE_SWITCH_SINCE, "conditional if/else nodes"))
        }
        (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE, 1) => {
            Ok((IF_WHILE_SINCE, "conditional while nodes"))
        }
        (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH, 1..) => {
            Ok((ELSE_SWITCH_SINCE, "conditional switch nodes"))
        }
        (_, count) => Err(Error::invalid_argument(format!(
            "a conditional node of type {} cannot have {count} bodies",
            kind.0
        ))),
    }
}

impl Graph {
    /// A new condition for this graph's conditional nodes (`cuGraphConditionalHandleCreate`).
    /// With `default`, every replay starts with that value; without, a kernel must set it
    /// before the node tests it (it keeps what was last set). Each handle must be used by one
    /// conditional node of this graph, or instantiation fails.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphConditionalHandleCreate)]
    /// # Errors
    ///
    /// [`Error::Unsupported`] on a driver older than CUDA 12.4; the driver's error.
    #[doc(alias = "cuGraphConditionalHandleCreate")]
    pub fn conditional_handle(&mut self, default: Option<u32>) -> Result<ConditionalHandle> {
        // SAFETY: a valid graph.
        let raw = unsafe { create_handle(self.driver(), self.as_raw(), &self.context, default) }?;
        Ok(ConditionalHandle {
            raw,
            graph: self.id,
        })
    }

    /// Adds an *if* node after `dependencies`: a copy of `then` runs when `handle`'s value is
    /// not 0 (CUDA 12.4 drivers). This graph keeps alive what `then` keeps.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency or a handle of another graph;
    /// [`Error::Unsupported`] on an older driver; the driver's error (a body holding a node
    /// type conditional bodies cannot hold, a handle already used).
    #[doc(alias = "cuGraphAddNode")]
    pub fn add_if(
        &mut self,
        dependencies: &[Node],
        handle: &ConditionalHandle,
        then: &Graph,
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF;
        self.add_conditional(dependencies, handle, kind, &[then])
    }

    /// Adds an *if/else* node after `dependencies`: a copy of `then` runs when `handle`'s value
    /// is not 0, of `otherwise` when it is (CUDA 12.8 drivers).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddNode)]
    /// # Errors
    ///
    /// As [`add_if`](Self::add_if), with [`Error::Unsupported`] before CUDA 12.8.
    #[doc(alias = "cuGraphAddNode")]
    pub fn add_if_else(
        &mut self,
        dependencies: &[Node],
        handle: &ConditionalHandle,
        then: &Graph,
        otherwise: &Graph,
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF;
        self.add_conditional(dependencies, handle, kind, &[then, otherwise])
    }

    /// Adds a *while* node after `dependencies`: a copy of `body` runs again and again while
    /// `handle`'s value is not 0, tested before each run (CUDA 12.4 drivers). A kernel of
    /// `body` usually sets the value; give the handle a default of 1 to enter the loop.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddNode)]
    /// # Errors
    ///
    /// As [`add_if`](Self::add_if).
    #[doc(alias = "cuGraphAddNode")]
    pub fn add_while(
        &mut self,
        dependencies: &[Node],
        handle: &ConditionalHandle,
        body: &Graph,
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE;
        self.add_conditional(dependencies, handle, kind, &[body])
    }

    /// Adds a *switch* node after `dependencies`: a copy of `cases[n]` runs when `handle`'s
    /// value is `n`, none when it is `cases.len()` or more (CUDA 12.8 drivers).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddNode)]
    /// # Errors
    ///
    /// As [`add_if_else`](Self::add_if_else); [`Error::InvalidArgument`] for no case.
    #[doc(alias = "cuGraphAddNode")]
    pub fn add_switch(
        &mut self,
        dependencies: &[Node],
        handle: &ConditionalHandle,
        cases: &[&Graph],
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH;
        self.add_conditional(dependencies, handle, kind, cases)
    }

    /// Adds a conditional node of `kind` with a copy of each of `bodies` as its body graphs.
    fn add_conditional(
        &mut self,
        dependencies: &[Node],
        handle: &ConditionalHandle,
        kind: CUgraphConditionalNodeType,
        bodies: &[&Graph],
    ) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        if handle.graph != self.id {
            return Err(Error::invalid_argument(
                "the conditional handle belongs to another graph; make it with this graph's \
                 conditional_handle",
            ));
        }
        let size = check_kind(kind, bodies.len())?;
        for body in bodies {
            self.adopt(body)?;
        }
        let mut params = conditional_params(handle.raw, kind, size, &self.context);
        // SAFETY: a conditional node's description with a handle of this graph; dependencies
        // of this graph.
        let node =
            unsafe { abi::graph_add_node(self.driver(), self.as_raw(), &deps, &mut params) }?;
        if let Err(error) = body_graphs(&params).and_then(|out| self.fill_bodies(out, bodies)) {
            // SAFETY: the node was just added to this graph and nothing refers to it.
            let _ = unsafe { cu!(self.driver(), cuGraphDestroyNode(node)) };
            return Err(error);
        }
        Ok(self.node(node))
    }

    /// Copies each of `bodies` into the body graph the driver made for it (`targets[i]`), as
    /// one child node; an empty body gets one empty node.
    fn fill_bodies(&self, targets: &[CUgraph], bodies: &[&Graph]) -> Result<()> {
        for (&target, body) in targets.iter().zip(bodies) {
            let mut child: CUgraphNode = std::ptr::null_mut();
            if body.nodes()?.is_empty() {
                // SAFETY: the node's body graph; valid out-pointer.
                unsafe {
                    cu!(
                        self.driver(),
                        cuGraphAddEmptyNode(&mut child, target, std::ptr::null(), 0)
                    )
                }?;
                continue;
            }
            // SAFETY: the node's body graph and the caller's body are valid; the driver copies
            // the body.
            unsafe {
                cu!(
                    self.driver(),
                    cuGraphAddChildGraphNode(
                        &mut child,
                        target,
                        std::ptr::null(),
                        0,
                        body.as_raw()
                    )
                )
            }?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_needs_its_driver_and_a_number_of_bodies() {
        use CUgraphConditionalNodeType as Kind;
        assert_eq!(
            requirement(Kind::CU_GRAPH_COND_TYPE_IF, 1).unwrap().0,
            CudaVersion(12040)
        );
        assert_eq!(
            requirement(Kind::CU_GRAPH_COND_TYPE_IF, 2).unwrap().0,
            CudaVersion(12080)
        );
        assert_eq!(
            requirement(Kind::CU_GRAPH_COND_TYPE_WHILE, 1).unwrap().0,
            CudaVersion(12040)
        );
        assert_eq!(
            requirement(Kind::CU_GRAPH_COND_TYPE_SWITCH, 5).unwrap().0,
            CudaVersion(12080)
        );
        for (kind, count) in [
            (Kind::CU_GRAPH_COND_TYPE_IF, 0),
            (Kind::CU_GRAPH_COND_TYPE_IF, 3),
            (Kind::CU_GRAPH_COND_TYPE_WHILE, 2),
            (Kind::CU_GRAPH_COND_TYPE_SWITCH, 0),
        ] {
            let error = requirement(kind, count).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        }
    }

    #[test]
    fn older_drivers_get_a_typed_unsupported_error() {
        let error =
            require_driver(CudaVersion(12030), IF_WHILE_SINCE, "conditional nodes").unwrap_err();
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        assert!(error.is_not_supported());
        assert!(error.to_string().contains("CUDA 12.4 driver"), "{error}");
        assert!(error.to_string().contains("supports CUDA 12.3"), "{error}");
        assert!(require_driver(CudaVersion(12040), IF_WHILE_SINCE, "if").is_ok());
        assert!(require_driver(CudaVersion(12060), ELSE_SWITCH_SINCE, "switch").is_err());
        assert!(require_driver(CudaVersion(13000), ELSE_SWITCH_SINCE, "switch").is_ok());
    }

    #[test]
    fn handles_pass_their_raw_value_to_kernels() {
        let handle = ConditionalHandle { raw: 42, graph: 1 };
        assert_eq!(handle.to_repr(), 42u64);
        assert_eq!(handle.as_raw(), 42);
        assert!(ConditionalHandle::DEVICE_DECLARATION.contains("cudaGraphSetConditional"));
    }
}
