//! Changing the nodes of an executable in place (`cuGraphExec*NodeSetParams`): a memset's or
//! copy's buffers, a host node's closure, an event node's event, for the launches from then on.
//! The graph it was made from is unchanged.
//!
//! What a new parameter uses must outlive every launch that may use it, including launches
//! still in flight when the executable is dropped (`cuGraphExecDestroy` does not wait). Only
//! user objects the executable itself holds do that, and an executable takes its graph's
//! references when it is instantiated or updated (`cuGraphExecUpdate` replaces its references
//! with the update graph's, keeping the old ones until the launches in flight finish). So an
//! update here makes the executable's graph keep what it uses (a user object, as for a new
//! node), and the executable's release, before destroying it, updates it from that graph once:
//! it then holds every reference, and the driver drops them after its last launch. Should that
//! update be refused, the release waits for the context to finish its work instead.
//!
//! An executable instantiated for device launch must be uploaded again
//! ([`GraphExec::upload`]) before a kernel launches it with the new parameters.

use std::sync::Arc;

use bytemuck::Pod;

use super::update::{copy_description, fill_description, host_description};
use super::{Graph, GraphExec, Node};
use crate::context::Context;
use crate::error::{Result, cu};
use crate::event::Event;
use crate::memory::Buffer;
use cuda_sys::{
    CUDA_MEMCPY3D, CUgraph, CUgraphExec, CUgraphExecUpdateResultInfo, CUgraphNode, CUgraphNodeType,
    Driver,
};

/// Whether an executable's updates made its graph keep something the executable does not
/// hold yet, and what hands it over ([`before_destroy`](Self::before_destroy)).
#[derive(Default)]
pub(super) struct Transfer {
    /// The graph that keeps it, and its context, once an update kept something.
    pending: Option<(CUgraph, Context)>,
}

impl Transfer {
    /// Notes that `graph` (the executable's own) now keeps what an update of the executable
    /// uses.
    pub(super) fn arm(&mut self, graph: &Graph) {
        if self.pending.is_none() {
            self.pending = Some((graph.as_raw(), graph.context.clone()));
        }
    }

    /// Before `exec` is destroyed: makes it hold its graph's references (one
    /// `cuGraphExecUpdate` from the graph), so that what its updates use outlives its launches
    /// in flight; if the driver refuses, waits for the context's work instead. Nothing when no
    /// update kept anything.
    pub(super) fn before_destroy(&self, driver: &'static Driver, exec: CUgraphExec) {
        let Some((graph, context)) = &self.pending else {
            return;
        };
        let updated = context.scoped().and_then(|_current| {
            let mut info = CUgraphExecUpdateResultInfo::default();
            // SAFETY: a live executable and the live graph it was made from (unchanged since,
            // so of the same topology); valid out-pointer.
            unsafe { cu!(driver, cuGraphExecUpdate_v2(exec, *graph, &mut info)) }
        });
        let Err(refused) = updated else {
            return;
        };
        let waited = context.scoped().and_then(|_current| {
            // SAFETY: no precondition; the context is current.
            unsafe { cu!(driver, cuCtxSynchronize()) }
        });
        match waited {
            Ok(()) => log::debug!(
                "cuda-safe: handing an executable graph's updated parameters over failed \
                 ({refused}); waited for its context instead"
            ),
            Err(error) => log::error!(
                "cuda-safe: an executable graph's updated parameters may be dropped while a \
                 launch uses them: handing them over failed ({refused}) and waiting for the \
                 context failed ({error})"
            ),
        }
    }
}

impl GraphExec {
    /// The raw handle of `node`, a live node of this executable's graph of type `expected`
    /// (`what` names it: "a memset").
    pub(super) fn raw_node_of(
        &self,
        node: Node,
        expected: CUgraphNodeType,
        what: &'static str,
    ) -> Result<CUgraphNode> {
        let raw = self.graph.check_live(node)?;
        self.graph.expect_type(raw, expected, what)?;
        Ok(raw)
    }

    /// Makes a memset node set every element of `dst` to `value` from the next launch on
    /// (`cuGraphExecMemsetNodeSetParams`); the executable keeps `dst` alive for as long as a
    /// launch may use it. `value` as for [`Graph::add_memset`]; the driver allows only a
    /// memset of the same element size and of memory on the same device.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecMemsetNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a node of another graph,
    /// a removed one or one that is not a memset node, and as [`Graph::add_memset`]; the
    /// driver's error (an update it cannot apply).
    #[doc(alias = "cuGraphExecMemsetNodeSetParams")]
    pub fn set_memset<T: Pod>(&mut self, node: Node, dst: &Arc<Buffer>, value: T) -> Result<()> {
        let raw = self.raw_node_of(node, CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMSET, "a memset")?;
        let params = fill_description(dst, value)?;
        self.graph.keep_buffers(&[dst], Vec::new())?;
        self.handle.transfer.arm(&self.graph);
        // SAFETY: a live memset node of the graph this executable was made from; a
        // description of `dst`, which the executable keeps alive (see the module).
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphExecMemsetNodeSetParams(
                    self.handle.raw,
                    raw,
                    &params,
                    self.graph.context.as_raw()
                )
            )
        }
    }

    /// Makes a copy node copy `src` into `dst`, the same size, from the next launch on
    /// (`cuGraphExecMemcpyNodeSetParams`); the executable keeps both alive for as long as a
    /// launch may use them. The driver allows only memory of the same kind on the same
    /// devices as the node's.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecMemcpyNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a node of another graph,
    /// a removed one or one that is not a copy node, or buffers that are empty or differ in
    /// size; the driver's error (an update it cannot apply).
    #[doc(alias = "cuGraphExecMemcpyNodeSetParams")]
    pub fn set_memcpy(&mut self, node: Node, dst: &Arc<Buffer>, src: &Arc<Buffer>) -> Result<()> {
        let raw = self.raw_node_of(node, CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY, "a copy")?;
        let params = copy_description(dst, src)?;
        self.graph.keep_buffers(&[dst, src], Vec::new())?;
        // SAFETY: a 1-D copy between the buffers just kept alive.
        unsafe { self.set_copy_params(raw, &params) }
    }

    /// Sets copy node `raw`'s parameters in the executable to `params`
    /// (`cuGraphExecMemcpyNodeSetParams`), the keeps' transfer armed first.
    ///
    /// # Safety
    ///
    /// `raw` is a live copy node of the graph this executable was made from
    /// ([`raw_node_of`](Self::raw_node_of)), and the graph keeps alive the memory on both
    /// sides of `params`.
    pub(super) unsafe fn set_copy_params(
        &mut self,
        raw: CUgraphNode,
        params: &CUDA_MEMCPY3D,
    ) -> Result<()> {
        self.handle.transfer.arm(&self.graph);
        // SAFETY: the caller's promise: a live copy node, both sides kept alive.
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphExecMemcpyNodeSetParams(
                    self.handle.raw,
                    raw,
                    params,
                    self.graph.context.as_raw()
                )
            )
        }
    }

    /// Makes a host node run `f` from the next launch on (`cuGraphExecHostNodeSetParams`); the
    /// executable keeps `f` alive for as long as a launch may run it (every closure set is
    /// kept until the executable is dropped). `f` as for [`Graph::add_host`]: its panics are
    /// reported by the next [`launch`](Self::launch).
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecHostNodeSetParams)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a node of another graph,
    /// a removed one or one that is not a host node; the driver's error.
    #[doc(alias = "cuGraphExecHostNodeSetParams")]
    pub fn set_host<F: Fn() + Send + Sync + 'static>(&mut self, node: Node, f: F) -> Result<()> {
        let raw = self.raw_node_of(node, CUgraphNodeType::CU_GRAPH_NODE_TYPE_HOST, "a host")?;
        let (params, kept) = host_description(&self.graph, f);
        self.graph.keep(vec![kept])?;
        self.handle.transfer.arm(&self.graph);
        // SAFETY: a live host node of the graph this executable was made from; the trampoline
        // matches the closure's type, and its data stays alive while a launch may run it.
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphExecHostNodeSetParams(self.handle.raw, raw, &params)
            )
        }
    }

    /// Makes an event-record node record `event` from the next launch on
    /// (`cuGraphExecEventRecordNodeSetEvent`); the executable keeps the event alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecEventRecordNodeSetEvent)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a node of another graph,
    /// a removed one or one that is not an event-record node; the driver's error.
    #[doc(alias = "cuGraphExecEventRecordNodeSetEvent")]
    pub fn set_event_record(&mut self, node: Node, event: &Arc<Event>) -> Result<()> {
        let kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_EVENT_RECORD;
        let raw = self.raw_node_of(node, kind, "an event-record")?;
        self.graph.keep(vec![Box::new(Arc::clone(event))])?;
        self.handle.transfer.arm(&self.graph);
        // SAFETY: a live event-record node of the graph this executable was made from; an
        // event the executable keeps alive.
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphExecEventRecordNodeSetEvent(self.handle.raw, raw, event.as_raw())
            )
        }
    }

    /// Makes an event-wait node wait for `event` from the next launch on
    /// (`cuGraphExecEventWaitNodeSetEvent`); the executable keeps the event alive.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecEventWaitNodeSetEvent)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a node of another graph,
    /// a removed one or one that is not an event-wait node; the driver's error.
    #[doc(alias = "cuGraphExecEventWaitNodeSetEvent")]
    pub fn set_event_wait(&mut self, node: Node, event: &Arc<Event>) -> Result<()> {
        let kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_WAIT_EVENT;
        let raw = self.raw_node_of(node, kind, "an event-wait")?;
        self.graph.keep(vec![Box::new(Arc::clone(event))])?;
        self.handle.transfer.arm(&self.graph);
        // SAFETY: a live event-wait node of the graph this executable was made from; an event
        // the executable keeps alive.
        unsafe {
            cu!(
                self.handle.driver,
                cuGraphExecEventWaitNodeSetEvent(self.handle.raw, raw, event.as_raw())
            )
        }
    }
}
