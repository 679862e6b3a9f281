//! CUDA graphs: work recorded once and replayed with one launch, as `cuda.core`'s
//! `GraphBuilder` and `Graph` do.
//!
//! A [`Graph`] is built two ways, which mix:
//!
//! - **by capture** ([`Capture`], [`Graph::capture`]): the work queued on a stream (launches,
//!   copies, fills, and the streams forked into it) is recorded instead of run;
//! - **explicitly** (`Graph::add_*`): nodes and their dependencies, including what capture
//!   cannot express: host closures, event waits, graph memory, child graphs, and conditional
//!   nodes ([`Graph::add_if`], [`Graph::add_while`], ...) whose bodies are graphs built either
//!   way.
//!
//! Kernel nodes take clusters, cooperative launches and launch attributes (priority, memory
//! synchronisation domains, an access-policy window; programmatic dependent launch as an edge,
//! [`Graph::add_kernel_edge`]). Nodes are changed before instantiation (`Graph::set_*`), graphs
//! cloned ([`Graph::try_clone`]) and nodes removed ([`Graph::remove_node`]).
//!
//! [`Graph::instantiate`] turns a graph into a [`GraphExec`], launched with one driver call and
//! updated in place ([`GraphExec::set_kernel_args`], `GraphExec::set_*`, [`GraphExec::update`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use cuda_safe::{Device, Graph, LaunchConfig, ObjectCode};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let kernel = ObjectCode::from_file("scale.cubin")?.get_kernel("scale")?;
//! let x = Arc::new(pool.allocate_zeroed::<f32>(1024, &stream)?);
//!
//! let mut graph = Graph::new(stream.context())?;
//! let fill = graph.add_memset(&[], &x, 1.0f32)?;
//! let config = LaunchConfig::for_num_elements(1024, 256)?;
//! // SAFETY: scale(float* x, float a, size_t n) updates 1024 floats, which `x` holds; the
//! // graph keeps `x` alive (an `Arc<Buffer>` argument).
//! let scale = unsafe { graph.add_kernel(&[fill], &config, &kernel, (&x, 2.0f32, 1024usize))? };
//! let mut exec = graph.instantiate()?;
//! for step in 0..10 {
//!     // SAFETY: as above.
//!     unsafe { exec.set_kernel_args(&scale, (&x, step as f32, 1024usize))? };
//!     exec.launch(&stream)?; // one cuGraphLaunch
//! }
//! stream.sync()?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! # What a graph keeps alive
//!
//! A graph keeps alive what its nodes use and the crate can see: the kernel of a kernel node
//! (a [`Kernel`] clone), every `Arc<Buffer>` of a node (kernel arguments, memsets, copies),
//! host closures and events. They are held by CUDA *user objects* retained by the graph, so the
//! driver itself keeps them for every executable made from the graph, across updates, and
//! until the last replay in flight has finished, even when the graph and executable are
//! dropped first. Then a thread of the crate drops them (the driver's thread must not call
//! CUDA, which freeing a buffer does).
//!
//! What the crate cannot see is the caller's promise, stated where it arises: memory a
//! captured graph replays (its addresses were recorded from plain launches and copies), memory
//! passed to a kernel node by address or by borrowed buffer, and what a kernel does; launching
//! a kernel is `unsafe` already.

mod arena;
mod build;
mod capture;
mod capture_conditional;
mod capture_into;
mod clone;
mod conditional;
mod device;
mod dot;
mod exec;
mod exec_update;
mod ids;
mod instantiate;
mod keep;
mod kernel_node;
mod memcpy3d;
mod memory;
mod refresh;
mod update;

pub use arena::{ArenaUsage, GraphArena, StaticBuffer};
pub use capture::{Capture, CaptureMode, CaptureStatus};
pub use capture_into::{CaptureDependency, RecaptureReport};
pub use conditional::ConditionalHandle;
pub use device::DeviceGraphHandle;
pub use dot::DotFlags;
pub use exec::{GraphExec, InstantiateOptions};
pub use kernel_node::KernelEdge;
pub use memcpy3d::CopyNodeSide;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::callback::PanicSlot;
use crate::context::Context;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release};
use crate::kernel::Kernel;
use crate::launch::{Keep, LaunchConfig};
use crate::memory::Buffer;
use cuda_sys::{
    CUdeviceptr, CUfunction, CUgraph, CUgraphNode, CUgraphNodeType, CUuserObject, Driver,
};

/// The id of the next graph (or capture): node handles carry their graph's id, so a node is
/// never used in another graph.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A node of a [`Graph`]: a copyable handle, valid in the graph that made it (and in the
/// executables made from that graph); every call checks that it belongs there.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Node {
    raw: CUgraphNode,
    graph: u64,
    /// How many nodes at this address were removed from the graph before this one was made:
    /// a handle of a removed node stays refused when the driver reuses its address.
    generation: u32,
}

// SAFETY: a node handle is only an identifier here; every use goes through its graph (or the
// graph's executable), which serializes access.
unsafe impl Send for Node {}
// SAFETY: as above.
unsafe impl Sync for Node {}

impl Node {
    /// The raw `CUgraphNode`, valid while its graph lives.
    pub fn as_raw(&self) -> CUgraphNode {
        self.raw
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("raw", &self.raw)
            .field("graph", &self.graph)
            .finish()
    }
}

/// A kernel node and what it runs: the kernel (kept loaded) and the launch shape. Its
/// arguments are changed in an executable with [`GraphExec::set_kernel_args`], checked
/// against the kernel's parameters as [`launch`](crate::launch) checks them.
#[derive(Debug, Clone)]
pub struct KernelNode {
    node: Node,
    kernel: Kernel,
    config: LaunchConfig,
    /// The kernel's function in the graph's context, resolved when the node was named.
    function: CUfunction,
}

// SAFETY: the function handle is immutable and valid while `kernel` keeps its code loaded;
// the driver accepts it from any thread.
unsafe impl Send for KernelNode {}
// SAFETY: as above; nothing in the node changes after it is made.
unsafe impl Sync for KernelNode {}

impl KernelNode {
    /// The node, to name it as a dependency.
    pub fn node(&self) -> Node {
        self.node
    }

    /// The kernel it runs.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Its grid, block and shared memory.
    pub fn config(&self) -> &LaunchConfig {
        &self.config
    }
}

impl From<&KernelNode> for Node {
    fn from(node: &KernelNode) -> Self {
        node.node
    }
}

/// Memory allocated by a graph's allocation node ([`Graph::add_mem_alloc`]): valid for the
/// graph's nodes that run after that node and before the node that frees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphAllocation {
    node: Node,
    ptr: CUdeviceptr,
    size: usize,
}

impl GraphAllocation {
    /// The allocation node, to name it as a dependency.
    pub fn node(&self) -> Node {
        self.node
    }

    /// The device address (fixed for the graph's life, valid only while it runs, between the
    /// allocation and its free).
    pub fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.size
    }

    /// Whether it holds no byte (never: a graph allocation has at least one).
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
}

/// A CUDA graph being built (a `CUgraph`): nodes and the dependencies between them.
///
/// Made by [`Graph::new`] (empty, built explicitly) or by capture ([`Capture::end`]), turned
/// into an executable by [`instantiate`](Self::instantiate), which takes the graph along (the
/// executable names its nodes by those of the graph). A graph is `Send` but not `Sync`: CUDA
/// graphs are not thread-safe, and every change takes `&mut self`.
#[must_use = "a graph is destroyed when dropped"]
pub struct Graph {
    handle: Owned<GraphHandle>,
    id: u64,
    context: Context,
    /// Panics of this graph's host nodes (and of its children's), for the next launch.
    panics: Arc<PanicSlot>,
    /// The user objects this graph holds a reference to (its own and its children's), which a
    /// graph taking this one as a child or conditional body retains too.
    retained: Vec<CUuserObject>,
    /// The shared buffers a user object of this graph holds (by address), so that updates
    /// naming them again keep nothing more.
    kept_buffers: HashSet<usize>,
    /// For each node address, how many nodes there were removed ([`Graph::remove_node`]): a
    /// handle made before the last removal is refused, one made after names the live node.
    removals: HashMap<CUgraphNode, u32>,
    /// The graph this one was cloned from ([`Graph::try_clone`]), by id.
    cloned_from: Option<u64>,
    /// Why the graph may no longer run: a kernel node whose launch attributes could not be
    /// written and that could not be removed again (it would run without its cluster shape or
    /// cooperation). Instantiating, cloning or adopting the graph is refused with it.
    defect: Option<String>,
    /// The arenas its work was captured in ([`GraphArena`]), with their generations then.
    arenas: Vec<arena::Binding>,
}

/// The owned `CUgraph`.
struct GraphHandle {
    raw: CUgraph,
    driver: &'static Driver,
}

// SAFETY: a CUgraph may be used from any thread as long as calls on it are serialized, which
// `&mut self` (for changes) and `Graph: !Sync` ensure; the user-object handles are identifiers
// the driver accepts from any thread.
unsafe impl Send for Graph {}

impl Release for GraphHandle {
    const WHAT: &'static str = "graph";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the graph is owned by this value and destroyed once (by `Owned`); what its
        // nodes use is held by user objects, which the driver releases after the last replay.
        unsafe { cu!(self.driver, cuGraphDestroy(self.raw)) }
    }
}

impl Graph {
    /// An empty graph whose nodes run in `context`.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphCreate)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuGraphCreate")]
    pub fn new(context: &Context) -> Result<Self> {
        let driver = context.driver();
        let mut raw: CUgraph = std::ptr::null_mut();
        // SAFETY: valid out-pointer; flags must be 0.
        unsafe { cu!(driver, cuGraphCreate(&mut raw, 0)) }?;
        Ok(Self::from_parts(
            raw,
            next_id(),
            context.clone(),
            Vec::new(),
        ))
    }

    /// Takes ownership of `raw` (from `cuGraphCreate` or a capture's end).
    fn from_parts(raw: CUgraph, id: u64, context: Context, retained: Vec<CUuserObject>) -> Self {
        let driver = context.driver();
        Self {
            handle: Owned::new(GraphHandle { raw, driver }),
            id,
            context,
            panics: Arc::default(),
            retained,
            kept_buffers: HashSet::new(),
            removals: HashMap::new(),
            cloned_from: None,
            defect: None,
            arenas: Vec::new(),
        }
    }

    /// The raw `CUgraph`, valid while this graph lives.
    pub fn as_raw(&self) -> CUgraph {
        self.handle.raw
    }

    /// The context the graph's nodes run in.
    pub fn context(&self) -> &Context {
        &self.context
    }

    #[inline]
    fn driver(&self) -> &'static Driver {
        self.handle.driver
    }

    /// Every node of the graph (not those inside child graphs or conditional bodies), in the
    /// driver's order.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphGetNodes)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuGraphGetNodes")]
    pub fn nodes(&self) -> Result<Vec<Node>> {
        let mut count = 0usize;
        // SAFETY: a null array asks for the count only.
        unsafe {
            cu!(
                self.driver(),
                cuGraphGetNodes(self.as_raw(), std::ptr::null_mut(), &mut count)
            )
        }?;
        if count == 0 {
            // An empty graph: the driver refuses a count of 0 with an array.
            return Ok(Vec::new());
        }
        let mut raw = vec![std::ptr::null_mut(); count];
        // SAFETY: `raw` has room for `count` nodes; the driver writes at most that many and
        // says how many it wrote.
        unsafe {
            cu!(
                self.driver(),
                cuGraphGetNodes(self.as_raw(), raw.as_mut_ptr(), &mut count)
            )
        }?;
        raw.truncate(count);
        Ok(raw.into_iter().map(|node| self.node(node)).collect())
    }

    /// Names `node` (a kernel node of this graph, captured or added) as running `kernel` with
    /// `config`, so its arguments can be changed in an executable
    /// ([`GraphExec::set_kernel_args`]) with the kernel's parameter checks.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphNodeGetType)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph, a removed node or one that is
    /// not a kernel node; the driver's error.
    #[doc(alias = "cuGraphNodeGetType")]
    pub fn kernel_node(
        &self,
        node: Node,
        kernel: &Kernel,
        config: &LaunchConfig,
    ) -> Result<KernelNode> {
        let raw = self.raw_node(node)?;
        let function = build::function_in(kernel, &self.context)?;
        self.expect_type(raw, CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL, "a kernel")?;
        Ok(KernelNode {
            node,
            kernel: kernel.clone(),
            config: *config,
            function,
        })
    }

    /// Destroys the graph now, returning the driver's error (dropping does the same and only
    /// logs). What its nodes use stays alive until no executable can run it.
    #[doc = cuda_sys::api_doc!(cuGraphDestroy)]
    #[doc(alias = "cuGraphDestroy")]
    pub fn close(self) -> Result<()> {
        self.handle.close()
    }

    /// A handle for `raw`, a live node of this graph (one just added, whose address may be
    /// that of a node removed before, or one the driver listed).
    fn node(&self, raw: CUgraphNode) -> Node {
        Node {
            raw,
            graph: self.id,
            generation: self.removals.get(&raw).copied().unwrap_or(0),
        }
    }

    /// The raw handle of `node`, refused unless it is a node of this graph, not removed.
    fn raw_node(&self, node: Node) -> Result<CUgraphNode> {
        self.check_live(node)
    }

    /// The raw handle of `node`, refused for a node of another graph or one removed from this
    /// graph ([`Graph::remove_node`]), even where the driver gave its address to a new node.
    #[inline]
    fn check_live(&self, node: Node) -> Result<CUgraphNode> {
        let raw = owned_node(self.id, node)?;
        if !self.removals.is_empty()
            && self.removals.get(&raw).copied().unwrap_or(0) != node.generation
        {
            return Err(Error::invalid_argument(format!(
                "node {raw:?} was removed from the graph"
            )));
        }
        Ok(raw)
    }

    /// The type of `raw`, a node of this graph.
    fn node_type(&self, raw: CUgraphNode) -> Result<CUgraphNodeType> {
        let mut kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: a live node of this live graph; valid out-pointer.
        unsafe { cu!(self.driver(), cuGraphNodeGetType(raw, &mut kind)) }?;
        Ok(kind)
    }

    /// Refuses `raw` unless it is a node of type `expected` (`what` names it: "a memset").
    fn expect_type(
        &self,
        raw: CUgraphNode,
        expected: CUgraphNodeType,
        what: &'static str,
    ) -> Result<()> {
        let kind = self.node_type(raw)?;
        if kind != expected {
            return Err(Error::invalid_argument(format!(
                "node {raw:?} is not {what} node (its type is {})",
                kind.0
            )));
        }
        Ok(())
    }

    /// The raw handles of `dependencies`, all of which must be nodes of this graph.
    fn raw_nodes(&self, dependencies: &[Node]) -> Result<Vec<CUgraphNode>> {
        dependencies
            .iter()
            .map(|&node| self.raw_node(node))
            .collect()
    }

    /// Makes the graph keep `items` alive for as long as it, or an executable made from it,
    /// may run (one user object, retained by the graph).
    fn keep(&mut self, items: Vec<Keep>) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        let object = keep::retain(self.driver(), self.as_raw(), items)?;
        self.retained.push(object);
        Ok(())
    }

    /// Makes the graph keep `buffers` alive, as [`keep`](Self::keep) does, skipping those a
    /// user object of this graph holds already (a node updated back and forth between two
    /// buffers keeps each once).
    fn keep_buffers(&mut self, buffers: &[&Arc<Buffer>], mut items: Vec<Keep>) -> Result<()> {
        let mut added = Vec::new();
        for buffer in buffers {
            let address = Arc::as_ptr(buffer) as usize;
            if !self.kept_buffers.contains(&address) && !added.contains(&address) {
                added.push(address);
                items.push(Box::new(Arc::clone(buffer)));
            }
        }
        self.keep(items)?;
        self.kept_buffers.extend(added);
        Ok(())
    }

    /// Refuses a graph with a defect (a node it could neither complete nor remove).
    fn check_whole(&self) -> Result<()> {
        match &self.defect {
            Some(defect) => Err(Error::invalid_argument(format!(
                "the graph can no longer run: {defect}"
            ))),
            None => Ok(()),
        }
    }

    /// Makes this graph keep alive what `other` keeps (it is becoming a child or body of this
    /// one) and report its host nodes' panics.
    fn adopt(&mut self, other: &Graph) -> Result<()> {
        other.check_whole()?;
        for &object in &other.retained {
            // SAFETY: `other` holds a reference to `object`, so it is alive; this graph takes a
            // new reference of its own.
            unsafe {
                cu!(
                    self.driver(),
                    cuGraphRetainUserObject(self.as_raw(), object, 1, 0)
                )
            }?;
            self.retained.push(object);
        }
        other.panics.report_to(&self.panics);
        self.arenas.extend(other.arenas.iter().cloned());
        Ok(())
    }
}

/// The raw handle of `node`, refused unless it belongs to the graph numbered `graph`.
fn owned_node(graph: u64, node: Node) -> Result<CUgraphNode> {
    if node.graph != graph {
        return Err(Error::invalid_argument(format!(
            "node {:?} belongs to another graph (#{}) than this one (#{graph})",
            node.raw, node.graph
        )));
    }
    Ok(node.raw)
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("raw", &self.handle.raw)
            .field("id", &self.id)
            .field("device", &self.context.device().ordinal())
            .field("retained", &self.retained.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_refused_by_other_graphs() {
        let node = Node {
            raw: std::ptr::null_mut(),
            graph: 7,
            generation: 0,
        };
        assert!(owned_node(7, node).is_ok());
        let error = owned_node(8, node).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        assert!(error.to_string().contains("another graph"), "{error}");
    }

    #[test]
    fn ids_are_unique() {
        let (a, b) = (next_id(), next_id());
        assert_ne!(a, b);
    }

    #[test]
    fn graphs_and_their_executables_are_send_but_not_sync() {
        fn send<T: Send>() {}
        send::<Graph>();
        send::<GraphExec>();
        send::<Node>();
        send::<KernelNode>();
        // `Sync` is refused on purpose: CUDA graph objects are not thread-safe. A type that
        // were `Sync` would make this call ambiguous (two impls of `Ambiguous`).
        trait Ambiguous<A> {
            fn which() -> u8;
        }
        impl<T: ?Sized> Ambiguous<()> for T {
            fn which() -> u8 {
                0
            }
        }
        struct IsSync;
        impl<T: ?Sized + Sync> Ambiguous<IsSync> for T {
            fn which() -> u8 {
                1
            }
        }
        assert_eq!(<Graph as Ambiguous<_>>::which(), 0);
        assert_eq!(<GraphExec as Ambiguous<_>>::which(), 0);
    }
}
