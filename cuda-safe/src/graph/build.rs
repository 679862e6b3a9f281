//! Building a graph explicitly: one `add_*` per node type, each after the dependencies given.
//!
//! Branches split and join through dependencies, as `cuda.core`'s `GraphBuilder.split` and
//! `join` do through streams: nodes that name the same dependency run in parallel, and a node
//! naming several (an empty one, [`Graph::add_empty`], when nothing else is to run there) waits
//! for all of them.

use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

use super::{Graph, KernelNode, Node};
use crate::abi;
use crate::callback::{self, Shared};
use crate::context::Context;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{Result, cu};
use crate::event::Event;
use crate::kernel::Kernel;
use crate::launch::{KernelArgs, LaunchAttributes, LaunchConfig};
use cuda_sys::{CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUfunction, CUgraphNode};

/// `list` as the pointer a driver call takes for an array: null when empty.
pub(super) fn array_ptr<T>(list: &[T]) -> *const T {
    if list.is_empty() {
        std::ptr::null()
    } else {
        list.as_ptr()
    }
}

/// The function `kernel` is in `context` (`cuKernelGetFunction`, with `context` made current):
/// what a kernel node names, resolved once per node.
#[doc = cuda_sys::api_doc!(cuKernelGetFunction)]
#[doc(alias = "cuKernelGetFunction")]
pub(super) fn function_in(kernel: &Kernel, context: &Context) -> Result<CUfunction> {
    let _current = context.scoped()?;
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: a loaded kernel (kept by `kernel`) and a valid out-pointer; `context` is current.
    unsafe {
        cu!(
            kernel.driver(),
            cuKernelGetFunction(&mut function, kernel.as_raw())
        )
    }?;
    Ok(function)
}

/// The driver's description of a launch of `function` with `config`, reading its arguments
/// through `pointers` (which must outlive the call it is passed to).
#[inline(always)]
pub(super) fn kernel_params(
    function: CUfunction,
    config: &LaunchConfig,
    pointers: &mut [*mut c_void],
) -> CUDA_KERNEL_NODE_PARAMS {
    CUDA_KERNEL_NODE_PARAMS {
        func: function,
        gridDimX: config.grid.x,
        gridDimY: config.grid.y,
        gridDimZ: config.grid.z,
        blockDimX: config.block.x,
        blockDimY: config.block.y,
        blockDimZ: config.block.z,
        sharedMemBytes: config.shared_mem,
        kernelParams: if pointers.is_empty() {
            std::ptr::null_mut()
        } else {
            pointers.as_mut_ptr()
        },
        extra: std::ptr::null_mut(),
        // Unused when `func` is set.
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

impl Graph {
    /// Adds a kernel node, after `dependencies`, that launches `kernel` with `config` and
    /// `args` (`cuGraphAddKernelNode`), the same typed arguments [`launch`](crate::launch)
    /// takes, checked against the kernel's parameter list when the driver reports it (as
    /// [`launch`](crate::launch) says, also when it failed partway).
    ///
    /// The graph keeps the kernel loaded and every `Arc<Buffer>` argument alive; the
    /// arguments' values are copied now. A cluster shape or a cooperative launch in `config`
    /// is written onto the node as its attribute (`cuGraphKernelNodeSetAttribute`); launch
    /// attributes beyond those go through [`add_kernel_with`](Self::add_kernel_with).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddKernelNode)]
    /// # Errors
    ///
    /// Before anything is added: [`Error::InvalidArgument`] for a dependency of another graph
    /// or a removed one, a `config` outside the device's limits (a cluster of more than 16
    /// blocks or one that does not divide the grid among them), arguments that do not match
    /// the kernel's parameters, or a cooperative grid larger than the blocks that can be
    /// resident at once; [`Error::Unsupported`] for clusters before compute capability 9.0 or
    /// a cooperative launch on a device without them. The driver's error.
    ///
    /// # Safety
    ///
    /// As for [`launch`](crate::launch), at every replay: the arguments have the types the
    /// kernel expects, and its accesses stay inside the memory it is given, which nothing
    /// writes concurrently. Memory passed by address or as a borrowed buffer (`&Buffer`, a
    /// slice) must stay allocated for as long as this graph, or an executable made from it,
    /// may run; pass `Arc<Buffer>` to have the graph keep it.
    #[doc(alias = "cuGraphAddKernelNode")]
    pub unsafe fn add_kernel<A: KernelArgs>(
        &mut self,
        dependencies: &[Node],
        config: &LaunchConfig,
        kernel: &Kernel,
        args: A,
    ) -> Result<KernelNode> {
        // SAFETY: the caller's promise.
        unsafe {
            self.add_kernel_with(
                dependencies,
                config,
                &LaunchAttributes::default(),
                kernel,
                args,
            )
        }
    }

    /// Adds a host node, after `dependencies`, that runs `f` on a driver thread at every
    /// replay (`cuGraphAddHostNode`); the graph keeps `f` alive.
    ///
    /// `f` runs under `catch_unwind`: a panic never reaches the driver, and the executable's
    /// next [`launch`](super::GraphExec::launch) reports it as [`Error::CallbackPanicked`].
    /// `f` must not call CUDA (debug builds refuse the crate's calls from there; see
    /// [`Stream::launch_host_func`](crate::Stream::launch_host_func)). Conditional bodies
    /// cannot hold host nodes.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddHostNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph; the driver's error.
    #[doc(alias = "cuGraphAddHostNode")]
    pub fn add_host<F: Fn() + Send + Sync + 'static>(
        &mut self,
        dependencies: &[Node],
        f: F,
    ) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        let shared = Shared::new(f, self.panics.clone());
        let params = CUDA_HOST_NODE_PARAMS {
            fn_: Some(callback::run_shared::<F>),
            userData: Shared::user_data(&shared),
        };
        let kept: Box<dyn Any + Send> = Box::new(shared);
        self.keep(vec![kept])?;
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: the trampoline matches the closure's type, and the user data stays alive
        // while the graph or an executable may run it (the graph keeps the `Arc`).
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddHostNode(
                    &mut node,
                    self.as_raw(),
                    array_ptr(&deps),
                    deps.len(),
                    &params
                )
            )
        }?;
        Ok(self.node(node))
    }

    /// Adds a node, after `dependencies`, that records `event` at every replay
    /// (`cuGraphAddEventRecordNode`): work waiting on the event (on a stream or in another
    /// graph) waits for this node's dependencies. The graph keeps the event alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddEventRecordNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph; the driver's error.
    #[doc(alias = "cuGraphAddEventRecordNode")]
    pub fn add_event_record(&mut self, dependencies: &[Node], event: &Arc<Event>) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        self.keep(vec![Box::new(Arc::clone(event))])?;
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: a valid event, kept alive by the graph; dependencies of this graph.
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddEventRecordNode(
                    &mut node,
                    self.as_raw(),
                    array_ptr(&deps),
                    deps.len(),
                    event.as_raw(),
                )
            )
        }?;
        Ok(self.node(node))
    }

    /// Adds a node, after `dependencies`, that waits for `event`'s last record at every replay
    /// (`cuGraphAddEventWaitNode`); the graph keeps the event alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddEventWaitNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph; the driver's error.
    #[doc(alias = "cuGraphAddEventWaitNode")]
    pub fn add_event_wait(&mut self, dependencies: &[Node], event: &Arc<Event>) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        self.keep(vec![Box::new(Arc::clone(event))])?;
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: as in `add_event_record`.
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddEventWaitNode(
                    &mut node,
                    self.as_raw(),
                    array_ptr(&deps),
                    deps.len(),
                    event.as_raw(),
                )
            )
        }?;
        Ok(self.node(node))
    }

    /// Adds a node, after `dependencies`, that runs a copy of `child` (taken now: later changes
    /// to `child` do not reach it) (`cuGraphAddChildGraphNode`). This graph keeps alive what
    /// `child` keeps, and reports its host nodes' panics.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddChildGraphNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph; the driver's error (a
    /// child cannot hold graph allocations).
    #[doc(alias = "cuGraphAddChildGraphNode")]
    pub fn add_child(&mut self, dependencies: &[Node], child: &Graph) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        self.adopt(child)?;
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: both graphs are valid; the driver copies `child`; dependencies of this graph.
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddChildGraphNode(
                    &mut node,
                    self.as_raw(),
                    array_ptr(&deps),
                    deps.len(),
                    child.as_raw(),
                )
            )
        }?;
        Ok(self.node(node))
    }

    /// Adds a node that does nothing, after `dependencies`: a join point for branches, or a
    /// single dependency standing for many (`cuGraphAddEmptyNode`).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddEmptyNode)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a dependency of another graph; the driver's error.
    #[doc(alias = "cuGraphAddEmptyNode")]
    pub fn add_empty(&mut self, dependencies: &[Node]) -> Result<Node> {
        let deps = self.raw_nodes(dependencies)?;
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: dependencies of this graph; valid out-pointer.
        unsafe {
            cu!(
                self.driver(),
                cuGraphAddEmptyNode(&mut node, self.as_raw(), array_ptr(&deps), deps.len())
            )
        }?;
        Ok(self.node(node))
    }

    /// Makes `to` wait for `from`, both nodes of this graph (`cuGraphAddDependencies`).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphAddDependencies)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph; the driver's error (an edge
    /// that exists already, or one that would close a cycle at instantiation).
    #[doc(alias = "cuGraphAddDependencies")]
    pub fn add_dependency(&mut self, from: Node, to: Node) -> Result<()> {
        let (from, to) = (self.raw_node(from)?, self.raw_node(to)?);
        // SAFETY: two nodes of this live graph.
        unsafe { abi::graph_add_dependency(self.driver(), self.as_raw(), from, to) }
    }
}
