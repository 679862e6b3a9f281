//! Changing the nodes of a graph before it is instantiated (`cuGraph*NodeSetParams`): a kernel
//! node's kernel, shape and arguments, a memset's or copy's buffers, a host node's closure, an
//! event node's event. Executables instantiated from then on run the new parameters; those made
//! before are unchanged (change them with `GraphExec::set_*`, or [`GraphExec::update`]).
//!
//! What a new parameter uses is kept alive as the node's first one is: the graph holds it (a
//! user object) for as long as the graph or an executable made from it may run, so what the old
//! parameters used stays alive too until then.
//!
//! [`GraphExec::update`]: super::GraphExec::update

use std::any::Any;
use std::sync::Arc;

use bytemuck::Pod;

use super::build::{function_in, kernel_params};
use super::kernel_node::check_co_residency;
use super::{Graph, KernelNode, Node};
use crate::callback::{self, Shared};
use crate::error::{Error, Result, cu};
use crate::event::Event;
use crate::kernel::Kernel;
use crate::launch::{Keep, KernelArgs, LaunchConfig, check_args};
use crate::memory::copies::linear_description;
use crate::memory::{Buffer, memset_description};
use cuda_sys::{CUDA_HOST_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CUgraphNodeType};

/// A copy node's description of `src` into `dst`, refused unless both have one non-zero size.
pub(super) fn copy_description(dst: &Buffer, src: &Buffer) -> Result<CUDA_MEMCPY3D> {
    if dst.len() != src.len() || dst.is_empty() {
        return Err(Error::invalid_argument(format!(
            "a copy node copies between non-empty buffers of one size, not {} into {} bytes",
            src.len(),
            dst.len()
        )));
    }
    Ok(linear_description(dst.as_raw(), src.as_raw(), dst.len()))
}

/// A memset node's description setting every `T` of `dst` to `value`.
pub(super) fn fill_description<T: Pod>(dst: &Buffer, value: T) -> Result<CUDA_MEMSET_NODE_PARAMS> {
    let count = dst.as_slice::<T>()?.len();
    memset_description(
        dst.as_raw(),
        bytemuck::bytes_of(&value),
        count,
        std::any::type_name::<T>(),
    )
}

/// A host node's description running `f` (kept by what the caller keeps: the returned item),
/// reporting its panics to `graph`'s slot.
pub(super) fn host_description<F: Fn() + Send + Sync + 'static>(
    graph: &Graph,
    f: F,
) -> (CUDA_HOST_NODE_PARAMS, Keep) {
    let shared = Shared::new(f, graph.panics.clone());
    let params = CUDA_HOST_NODE_PARAMS {
        fn_: Some(callback::run_shared::<F>),
        userData: Shared::user_data(&shared),
    };
    let kept: Box<dyn Any + Send> = Box::new(shared);
    (params, kept)
}

impl Graph {
    /// Sets the arguments of a kernel node of this graph (`cuGraphKernelNodeSetParams`), for
    /// the executables instantiated from now on: [`launch`](crate::launch)'s typed tuples,
    /// checked against the kernel's parameters. The graph keeps every `Arc<Buffer>` argument
    /// alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphKernelNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph or a removed one, or arguments
    /// that do not match the kernel's parameters; the driver's error.
    ///
    /// # Safety
    ///
    /// As [`add_kernel`](Self::add_kernel), for the new arguments.
    #[doc(alias = "cuGraphKernelNodeSetParams")]
    pub unsafe fn set_kernel_args<A: KernelArgs>(
        &mut self,
        node: &KernelNode,
        args: A,
    ) -> Result<()> {
        // SAFETY: the caller's promise; the node's own kernel and shape.
        unsafe { self.set_kernel_params(node, &node.config, &node.kernel, node.function, args) }
    }

    /// Makes a kernel node of this graph run `kernel` with `config` and `args`
    /// (`cuGraphKernelNodeSetParams`), for the executables instantiated from now on, and
    /// updates `node` to name them. The graph keeps `kernel` loaded and every `Arc<Buffer>`
    /// argument alive. The node's cluster shape and cooperation stay what they were: `config`
    /// must have the same (copies of `node` made before keep the old kernel and shape).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphKernelNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph or a removed one, a `config`
    /// with another cluster shape or cooperation than the node's, or outside the device's
    /// limits, arguments that do not match `kernel`'s parameters, or a cooperative grid larger
    /// than can be resident; the driver's error.
    ///
    /// # Safety
    ///
    /// As [`add_kernel`](Self::add_kernel), for the new kernel and arguments.
    #[doc(alias = "cuGraphKernelNodeSetParams")]
    pub unsafe fn set_kernel<A: KernelArgs>(
        &mut self,
        node: &mut KernelNode,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: A,
    ) -> Result<()> {
        self.raw_node(node.node)?;
        if config.cluster != node.config.cluster || config.cooperative != node.config.cooperative {
            return Err(Error::invalid_argument(format!(
                "a kernel node keeps its cluster shape and cooperation ({:?}, cooperative: {}); \
                 the new configuration has {:?}, cooperative: {}",
                node.config.cluster, node.config.cooperative, config.cluster, config.cooperative
            )));
        }
        config.validate_in(&self.context)?;
        check_co_residency(kernel, config, &self.context)?;
        let function = function_in(kernel, &self.context)?;
        self.keep(vec![Box::new(kernel.clone())])?;
        // SAFETY: the caller's promise; `function` is `kernel`'s in the graph's context.
        unsafe { self.set_kernel_params(node, config, kernel, function, args) }?;
        node.kernel = kernel.clone();
        node.config = *config;
        node.function = function;
        Ok(())
    }

    /// One `cuGraphKernelNodeSetParams` of `node` with `function` (of `kernel`), `config` and
    /// `args`, checked against `kernel`'s parameters; keeps the arguments' buffers.
    ///
    /// # Safety
    ///
    /// As [`set_kernel`](Self::set_kernel).
    unsafe fn set_kernel_params<A: KernelArgs>(
        &mut self,
        node: &KernelNode,
        config: &LaunchConfig,
        kernel: &Kernel,
        function: cuda_sys::CUfunction,
        args: A,
    ) -> Result<()> {
        let raw = self.raw_node(node.node)?;
        let context = &self.context;
        args.with_params(|_, sizes, names| check_args(kernel, context, sizes, names))?;
        let mut keep: Vec<Keep> = Vec::new();
        args.keep_alive(&mut keep);
        self.keep(keep)?;
        let driver = self.driver();
        args.with_params(|pointers, _, _| {
            let params = kernel_params(function, config, pointers);
            // SAFETY: the description and the values it points to live on this stack frame
            // (the driver copies them); a live kernel node of this graph; the kernel and the
            // shared buffers are kept by the graph.
            unsafe { cu!(driver, cuGraphKernelNodeSetParams_v2(raw, &params)) }
        })
    }

    /// Makes a memset node of this graph set every element of `dst` to `value`
    /// (`cuGraphMemsetNodeSetParams`), for the executables instantiated from now on; the graph
    /// keeps `dst` alive. `value` as for [`add_memset`](Self::add_memset).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphMemsetNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph, a removed one or one that is
    /// not a memset node, and as [`add_memset`](Self::add_memset); the driver's error.
    #[doc(alias = "cuGraphMemsetNodeSetParams")]
    pub fn set_memset<T: Pod>(&mut self, node: Node, dst: &Arc<Buffer>, value: T) -> Result<()> {
        let raw = self.raw_node(node)?;
        self.expect_type(raw, CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMSET, "a memset")?;
        let params = fill_description(dst, value)?;
        self.keep_buffers(&[dst], Vec::new())?;
        // SAFETY: a live memset node of this graph; a description of `dst`, which the graph
        // keeps alive.
        unsafe { cu!(self.driver(), cuGraphMemsetNodeSetParams(raw, &params)) }
    }

    /// Makes a copy node of this graph copy `src` into `dst`, the same size
    /// (`cuGraphMemcpyNodeSetParams`), for the executables instantiated from now on; the graph
    /// keeps both alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphMemcpyNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph, a removed one or one that is
    /// not a copy node, or buffers that are empty or differ in size; the driver's error.
    #[doc(alias = "cuGraphMemcpyNodeSetParams")]
    pub fn set_memcpy(&mut self, node: Node, dst: &Arc<Buffer>, src: &Arc<Buffer>) -> Result<()> {
        let raw = self.raw_node(node)?;
        self.expect_type(raw, CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY, "a copy")?;
        let params = copy_description(dst, src)?;
        self.keep_buffers(&[dst, src], Vec::new())?;
        // SAFETY: a live copy node of this graph; a 1-D copy between buffers the graph keeps.
        unsafe { cu!(self.driver(), cuGraphMemcpyNodeSetParams(raw, &params)) }
    }

    /// Makes a host node of this graph run `f` instead (`cuGraphHostNodeSetParams`), for the
    /// executables instantiated from now on; the graph keeps `f` alive (and the closure it
    /// ran before, for the executables made before). `f` as for [`add_host`](Self::add_host).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphHostNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph, a removed one or one that is
    /// not a host node; the driver's error.
    #[doc(alias = "cuGraphHostNodeSetParams")]
    pub fn set_host<F: Fn() + Send + Sync + 'static>(&mut self, node: Node, f: F) -> Result<()> {
        let raw = self.raw_node(node)?;
        self.expect_type(raw, CUgraphNodeType::CU_GRAPH_NODE_TYPE_HOST, "a host")?;
        let (params, kept) = host_description(self, f);
        self.keep(vec![kept])?;
        // SAFETY: a live host node of this graph; the trampoline matches the closure's type,
        // and its data stays alive while the graph or an executable may run it.
        unsafe { cu!(self.driver(), cuGraphHostNodeSetParams(raw, &params)) }
    }

    /// Makes an event-record node of this graph record `event` instead
    /// (`cuGraphEventRecordNodeSetEvent`), for the executables instantiated from now on; the
    /// graph keeps the event alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphEventRecordNodeSetEvent)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph, a removed one or one that is
    /// not an event-record node; the driver's error.
    #[doc(alias = "cuGraphEventRecordNodeSetEvent")]
    pub fn set_event_record(&mut self, node: Node, event: &Arc<Event>) -> Result<()> {
        let raw = self.raw_node(node)?;
        let kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_EVENT_RECORD;
        self.expect_type(raw, kind, "an event-record")?;
        self.keep(vec![Box::new(Arc::clone(event))])?;
        // SAFETY: a live event-record node of this graph; an event the graph keeps alive.
        unsafe {
            cu!(
                self.driver(),
                cuGraphEventRecordNodeSetEvent(raw, event.as_raw())
            )
        }
    }

    /// Makes an event-wait node of this graph wait for `event` instead
    /// (`cuGraphEventWaitNodeSetEvent`), for the executables instantiated from now on; the
    /// graph keeps the event alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphEventWaitNodeSetEvent)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a node of another graph, a removed one or one that is
    /// not an event-wait node; the driver's error.
    #[doc(alias = "cuGraphEventWaitNodeSetEvent")]
    pub fn set_event_wait(&mut self, node: Node, event: &Arc<Event>) -> Result<()> {
        let raw = self.raw_node(node)?;
        let kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_WAIT_EVENT;
        self.expect_type(raw, kind, "an event-wait")?;
        self.keep(vec![Box::new(Arc::clone(event))])?;
        // SAFETY: a live event-wait node of this graph; an event the graph keeps alive.
        unsafe {
            cu!(
                self.driver(),
                cuGraphEventWaitNodeSetEvent(raw, event.as_raw())
            )
        }
    }
}
