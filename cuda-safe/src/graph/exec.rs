//! Executable graphs: instantiated once, launched with one driver call, changed in place.
//!
//! The hot paths allocate nothing and make one driver call each: [`GraphExec::launch`] is one
//! `cuGraphLaunch` (after one relaxed load: a host node's panic to report), and
//! [`GraphExec::set_kernel_args`] lays the arguments out on the stack, checks them against the
//! kernel's parameter list (read once per kernel) and makes one
//! `cuGraphExecKernelNodeSetParams`.

use std::fmt;
use std::sync::Arc;

use super::arena::ArenaUse;
use super::build::kernel_params;
use super::exec_update::Transfer;
use super::{Graph, KernelNode, Node, instantiate};
use crate::callback::PanicSlot;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release};
use crate::launch::{KernelArgs, check_args};
use crate::stream::Stream;
use crate::trace::span;
use cuda_sys::{
    CUgraphExec, CUgraphExecUpdateResult, CUgraphExecUpdateResultInfo, CUgraphInstantiate_flags,
    CUgraphNode, CUresult, Driver,
};

/// How to instantiate a graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InstantiateOptions {
    /// Free what the graph's allocation nodes left allocated at the previous launch when
    /// launching again, instead of refusing the launch
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`).
    pub auto_free_on_launch: bool,
    /// Schedule kernel nodes by their own priority attributes rather than the launch stream's
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY`).
    pub use_node_priority: bool,
    /// Make the executable launchable from the device as well as from the host
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH`): a kernel launches it through
    /// [`GraphExec::device_handle`] once it has been uploaded. Not with
    /// `auto_free_on_launch`; the graph may hold kernel, memcpy, memset and child-graph nodes
    /// only, on one device.
    pub device_launch: bool,
}

crate::setters::setters! {
    impl InstantiateOptions {
        auto_free_on_launch: value bool,
        use_node_priority: value bool,
        device_launch: value bool,
    }
}

impl InstantiateOptions {
    /// The driver's flags for these options.
    pub(super) fn flags(&self) -> u64 {
        let mut flags = 0u64;
        if self.auto_free_on_launch {
            flags |= u64::from(
                CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0,
            );
        }
        if self.use_node_priority {
            flags |= u64::from(
                CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY.0,
            );
        }
        if self.device_launch {
            flags |=
                u64::from(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH.0);
        }
        flags
    }
}

/// An executable graph (a `CUgraphExec`), made by [`Graph::instantiate`].
///
/// It owns the graph it was made from: its nodes name the executable's nodes in
/// [`set_kernel_args`](Self::set_kernel_args) and [`set_node_enabled`](Self::set_node_enabled).
/// What the graph's nodes use (kernels, shared buffers, host closures, events) stays alive
/// while the executable may run it, also after the executable is dropped with replays in
/// flight. Each launch runs after the previous launch of the same executable.
///
/// `Send`, and not `Sync` on purpose: CUDA graph objects are not thread-safe, so two threads
/// must not launch or change one executable at once. Share one behind a `Mutex`, or
/// instantiate one per thread.
#[must_use = "an executable graph is destroyed when dropped"]
pub struct GraphExec {
    pub(super) handle: Owned<ExecHandle>,
    // Dropped after the executable.
    pub(super) graph: Graph,
    /// Instantiated for device launch.
    device_launch: bool,
    /// For a graph captured in arenas: the event each launch records, and the arenas'
    /// generations its addresses belong to.
    arenas: Option<ArenaUse>,
}

/// The owned `CUgraphExec`.
pub(super) struct ExecHandle {
    pub(super) raw: CUgraphExec,
    pub(super) driver: &'static Driver,
    /// What the executable's node updates made the graph keep, handed to the executable before
    /// it is destroyed.
    pub(super) transfer: Transfer,
}

// SAFETY: a CUgraphExec may be used from any thread as long as calls on it are serialized,
// which `GraphExec: !Sync` and `&mut self` for changes ensure; the graph it owns is `Send`.
unsafe impl Send for GraphExec {}

impl Release for ExecHandle {
    const WHAT: &'static str = "executable graph";

    fn release(&mut self) -> Result<()> {
        self.transfer.before_destroy(self.driver, self.raw);
        // SAFETY: the executable is owned by this value and destroyed once (by `Owned`);
        // replays in flight finish first, keeping what they use (user objects).
        unsafe { cu!(self.driver, cuGraphExecDestroy(self.raw)) }
    }
}

impl Graph {
    /// Instantiates the graph with default options (`cuGraphInstantiateWithParams`); the
    /// executable owns the graph.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphInstantiate)]
    #[doc = cuda_sys::api_doc!(cuGraphInstantiateWithParams)]
    /// # Errors
    ///
    /// [`Error::GraphInstantiateRefused`] with the driver's reason (a cycle, a conditional
    /// handle no node uses); the driver's error (a node type a conditional body cannot hold).
    #[doc(alias = "cuGraphInstantiate", alias = "cuGraphInstantiateWithParams")]
    pub fn instantiate(self) -> Result<GraphExec> {
        self.instantiate_with(InstantiateOptions::default())
    }

    /// Instantiates the graph with `options` (`cuGraphInstantiateWithParams`).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphInstantiateWithParams)]
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`], before any driver call, for `device_launch` with
    ///   `auto_free_on_launch`, or for `device_launch` of a graph captured in a
    ///   [`GraphArena`](super::GraphArena) (a launch from the device would pass none of the
    ///   arena's checks);
    /// - [`Error::Unsupported`] for `device_launch` on a device without unified addressing;
    /// - [`Error::GraphInstantiateRefused`] with the driver's reason: as
    ///   [`instantiate`](Self::instantiate), and for `device_launch` a node a device graph
    ///   cannot hold (a host, event or allocation node) or nodes of several contexts;
    /// - the driver's error.
    #[doc(alias = "cuGraphInstantiateWithParams")]
    pub fn instantiate_with(self, options: InstantiateOptions) -> Result<GraphExec> {
        let _span = span!(DEBUG, "graph_instantiate");
        self.check_whole()?;
        if options.device_launch {
            refuse_arenas_for_device_launch(&self)?;
        }
        let arenas = ArenaUse::new(&self.context, &self.arenas)?;
        let raw = {
            let _current = self.context.scoped()?;
            instantiate::instantiate(&self, options)?
        };
        Ok(GraphExec {
            handle: Owned::new(ExecHandle {
                raw,
                driver: self.driver(),
                transfer: Transfer::default(),
            }),
            graph: self,
            device_launch: options.device_launch,
            arenas,
        })
    }
}

impl GraphExec {
    /// The raw `CUgraphExec`, valid while this executable lives.
    pub fn as_raw(&self) -> CUgraphExec {
        self.handle.raw
    }

    /// The graph it was made from (to list its nodes, or write it as DOT).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Whether it was instantiated for device launch ([`InstantiateOptions::device_launch`]).
    pub(super) fn device_launch(&self) -> bool {
        self.device_launch
    }

    /// Where the panics of the graph's host nodes are kept until reported: a completion of a
    /// launch reports them when the launch has finished.
    pub fn panic_slot(&self) -> &Arc<PanicSlot> {
        &self.graph.panics
    }

    /// Launches the graph on `stream` (`cuGraphLaunch`): it runs after the stream's queued
    /// work and this executable's previous launches. A graph captured in a
    /// [`GraphArena`](super::GraphArena) also records an event after the launch
    /// (`cuEventRecord`), by which the arena knows whether it may still run.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphLaunch)]
    /// # Errors
    ///
    /// Nothing is launched when:
    /// - [`Error::CallbackPanicked`]: a host node of the graph panicked since the last report
    ///   (the report clears it; launch again to run);
    /// - [`Error::InvalidArgument`]: an arena the graph was captured in was reset since;
    /// - [`Error::Cuda`]: the driver refuses (a stream of another context; an allocation node's
    ///   memory still unfreed from the previous launch).
    ///
    /// When the launch was made but its event could not be recorded, the driver's error,
    /// after waiting for `stream`.
    #[doc(alias = "cuGraphLaunch")]
    #[inline]
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.graph.panics.check()?;
        // Held until the event is recorded: no arena resets meanwhile.
        let _launching = match &self.arenas {
            Some(arenas) => Some(arenas.check()?),
            None => None,
        };
        // SAFETY: a valid executable and stream; what the nodes use is alive (kept by the
        // graph, or the caller's promise where the graph was built).
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphLaunch(self.handle.raw, stream.as_raw())
            )
        }?;
        match &self.arenas {
            Some(arenas) => arenas.launched(stream),
            None => Ok(()),
        }
    }

    /// Uploads the executable's work to the device ahead of its first launch, ordered on
    /// `stream` (`cuGraphUpload`), so that launch costs no setup.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphUpload)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuGraphUpload")]
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        // SAFETY: a valid executable and stream.
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphUpload(self.handle.raw, stream.as_raw())
            )
        }
    }

    /// Updates the executable to run `graph`'s parameters (`cuGraphExecUpdate`), without
    /// instantiating again: `graph` must have the same topology and node types (built the same
    /// way, with other buffers, scalars or launch shapes). Launches in flight finish as they
    /// were. The executable keeps alive what `graph` keeps, reports its host nodes' panics,
    /// and still names its nodes by those of the graph it was made from.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecUpdate)]
    /// # Errors
    ///
    /// [`Error::GraphUpdateRefused`] with the driver's reason when the graphs differ in a way
    /// an update cannot apply (the executable is unchanged); [`Error::InvalidArgument`],
    /// before any driver call, for an executable instantiated for device launch and a graph
    /// captured in a [`GraphArena`](super::GraphArena); the driver's error.
    #[doc(alias = "cuGraphExecUpdate")]
    pub fn update(&mut self, graph: &Graph) -> Result<()> {
        if self.device_launch {
            refuse_arenas_for_device_launch(graph)?;
        }
        let Self {
            handle,
            graph: own,
            arenas,
            ..
        } = self;
        update_from(handle, own, arenas, graph)
    }

    /// Updates the executable from its own graph, after that graph was re-captured.
    pub(super) fn update_from_own_graph(&mut self) -> Result<()> {
        if self.device_launch {
            refuse_arenas_for_device_launch(&self.graph)?;
        }
        let Self {
            handle,
            graph,
            arenas,
            ..
        } = self;
        update_from(handle, graph, arenas, graph)
    }

    /// Sets the arguments of a kernel node for the next launches
    /// (`cuGraphExecKernelNodeSetParams`); the graph it was made from is unchanged. The
    /// arguments are [`launch`](crate::launch)'s typed tuples, checked against the kernel's
    /// parameter list when the driver reports it. Nothing is allocated.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecKernelNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph or arguments that do not match
    /// the kernel's parameters; the driver's error.
    ///
    /// # Safety
    ///
    /// As [`launch`](crate::launch), for every launch from now on: the arguments have the types
    /// the kernel expects and its accesses stay inside memory that stays allocated while this
    /// executable may run with these arguments (until they are set again and the launches
    /// before have finished). Buffers passed here, `Arc<Buffer>` included, are not kept alive
    /// by the executable.
    #[doc(alias = "cuGraphExecKernelNodeSetParams")]
    #[inline]
    pub unsafe fn set_kernel_args<A: KernelArgs>(
        &mut self,
        node: &KernelNode,
        args: A,
    ) -> Result<()> {
        let raw = self.graph.check_live(node.node)?;
        let (exec, driver, context) = (self.handle.raw, self.handle.driver, &self.graph.context);
        args.with_params(|pointers, sizes, names| {
            check_args(&node.kernel, context, sizes, names)?;
            let params = kernel_params(node.function, &node.config, pointers);
            // SAFETY: the description and the values it points to live on this stack frame
            // (the driver copies them); a kernel node of the graph this executable was made
            // from; what the kernel does with the arguments is the caller's promise.
            unsafe {
                cu!(
                    driver,
                    cuGraphExecKernelNodeSetParams_v2(exec, raw, &params)
                )
            }
        })
    }

    /// Turns a kernel, copy or memset node off (it does nothing, its dependents still wait for
    /// its dependencies) or back on, for the next launches (`cuGraphNodeSetEnabled`).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphNodeSetEnabled)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph; the driver's error (another
    /// node type).
    #[doc(alias = "cuGraphNodeSetEnabled")]
    pub fn set_node_enabled(&mut self, node: Node, enabled: bool) -> Result<()> {
        let raw = self.graph.raw_node(node)?;
        // SAFETY: a node of the graph this executable was made from.
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphNodeSetEnabled(self.handle.raw, raw, u32::from(enabled))
            )
        }
    }

    /// Whether a kernel, copy or memset node is on (`cuGraphNodeGetEnabled`).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphNodeGetEnabled)]
    /// # Errors
    ///
    /// As [`set_node_enabled`](Self::set_node_enabled).
    #[doc(alias = "cuGraphNodeGetEnabled")]
    pub fn is_node_enabled(&self, node: Node) -> Result<bool> {
        let raw = self.graph.raw_node(node)?;
        let mut enabled = 0u32;
        // SAFETY: a node of the graph this executable was made from; valid out-pointer.
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphNodeGetEnabled(self.handle.raw, raw, &mut enabled)
            )
        }?;
        Ok(enabled != 0)
    }

    /// Destroys the executable, then its graph, returning the first driver error (dropping
    /// does the same and only logs). Replays in flight finish, with what they use.
    #[doc = cuda_sys::api_doc!(cuGraphExecDestroy)]
    #[doc(alias = "cuGraphExecDestroy")]
    pub fn close(self) -> Result<()> {
        let Self { handle, graph, .. } = self;
        let exec = handle.close();
        let graph = graph.close();
        exec.and(graph)
    }
}

/// Refuses a graph captured in an arena for device launch: a launch from the device would
/// check no arena's generation and record no event, so a reset could free its memory under it.
fn refuse_arenas_for_device_launch(graph: &Graph) -> Result<()> {
    if graph.arenas.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "a graph captured in a graph arena cannot be instantiated for device launch: launches          from the device pass none of the arena's checks (a reset could free memory they use)",
    ))
}

/// Updates the executable `handle` (made from `own`, with `arenas`) to run `graph`'s
/// parameters, as [`GraphExec::update`] says.
fn update_from(
    handle: &ExecHandle,
    own: &Graph,
    arenas: &mut Option<ArenaUse>,
    graph: &Graph,
) -> Result<()> {
    let fresh = match arenas {
        Some(_) => None,
        None => ArenaUse::new(&own.context, &graph.arenas)?,
    };
    let mut info = CUgraphExecUpdateResultInfo::default();
    let updated = {
        let _current = own.context.scoped()?;
        // SAFETY: a valid executable, graph and out-pointer.
        unsafe {
            cu!(
                handle.driver,
                cuGraphExecUpdate_v2(handle.raw, graph.as_raw(), &mut info)
            )
        }
    };
    match updated {
        Ok(()) => {
            graph.panics.report_to(&own.panics);
            // The executable replays `graph`'s addresses now: its launches answer to
            // `graph`'s arenas.
            match arenas {
                Some(arenas) => arenas.rebind(&graph.arenas),
                None => *arenas = fresh,
            }
            Ok(())
        }
        Err(error) if error.cuda_code() == Some(CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) => {
            let position = |raw: CUgraphNode| position_of(graph, raw);
            Err(refusal(
                info.result,
                position(info.errorNode),
                position(info.errorFromNode),
            ))
        }
        Err(error) => Err(error),
    }
}

/// Where `raw`, a node the driver named, stands in `graph`'s [`Graph::nodes`]; `None` for a
/// null node or when the nodes cannot be listed.
fn position_of(graph: &Graph, raw: CUgraphNode) -> Option<usize> {
    if raw.is_null() {
        return None;
    }
    let nodes = graph.nodes().ok()?;
    nodes.iter().position(|node| node.as_raw() == raw)
}

/// [`Error::GraphUpdateRefused`] for the driver's reason and the nodes it named (their
/// positions in the update's graph).
fn refusal(
    reason: CUgraphExecUpdateResult,
    node: Option<usize>,
    from_node: Option<usize>,
) -> Error {
    use CUgraphExecUpdateResult as Reason;
    let detail = match reason {
        Reason::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => {
            "the graphs' topologies differ (nodes or edges were added or removed)"
        }
        Reason::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => "a node's type changed",
        Reason::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => "a kernel node's function changed",
        Reason::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => {
            "a node's parameters changed in a way an update cannot apply (a copy's or \
             memset's memory moved to another context or shape)"
        }
        Reason::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => {
            "a node of the graph cannot be updated (its type does not support updates)"
        }
        Reason::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => {
            "a kernel node's function changed in a way an update cannot apply"
        }
        Reason::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => {
            "a node's attributes changed in a way an update cannot apply"
        }
        _ => "the driver gave no reason it knows",
    };
    Error::GraphUpdateRefused {
        reason,
        detail,
        node,
        from_node,
    }
}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec")
            .field("raw", &self.handle.raw)
            .field("graph", &self.graph)
            .field("device_launch", &self.device_launch)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_map_to_the_drivers_flags() {
        assert_eq!(InstantiateOptions::default().flags(), 0);
        let both = InstantiateOptions {
            auto_free_on_launch: true,
            use_node_priority: true,
            ..Default::default()
        };
        assert_eq!(both.flags(), 1 | 8);
        let device = InstantiateOptions {
            device_launch: true,
            use_node_priority: true,
            ..Default::default()
        };
        assert_eq!(device.flags(), 4 | 8);
    }

    #[test]
    fn refusals_carry_the_drivers_reason() {
        use CUgraphExecUpdateResult as Reason;
        for (reason, words) in [
            (
                Reason::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
                "topologies differ",
            ),
            (
                Reason::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED,
                "type changed",
            ),
            (
                Reason::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED,
                "function changed",
            ),
            (
                Reason::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED,
                "parameters changed",
            ),
            (
                Reason::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED,
                "cannot be updated",
            ),
            (
                Reason::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE,
                "function changed in a way",
            ),
            (
                Reason::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED,
                "attributes changed",
            ),
            (CUgraphExecUpdateResult(99), "no reason it knows"),
        ] {
            match refusal(reason, Some(2), None) {
                Error::GraphUpdateRefused {
                    reason: kept,
                    detail,
                    node,
                    from_node,
                } => {
                    assert_eq!((kept, node, from_node), (reason, Some(2), None));
                    assert!(detail.contains(words), "{detail}");
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }
}
