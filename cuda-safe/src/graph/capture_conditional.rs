//! Conditional nodes inside a stream capture, their bodies recorded by capture too.
//!
//! The node goes into the capture's graph after the stream's current work (its dependencies,
//! read with `cuStreamGetCaptureInfo`), and the stream's later work after the node
//! (`cuStreamUpdateCaptureDependencies`). Each body is the graph the driver made for it in the
//! node, recorded by capturing a second stream into it (`cuStreamBeginCaptureToGraph`) while a
//! closure queues the body's work there, as NVIDIA's samples build loops under capture.
//!
//! The driver removes no node from a graph while it is captured into, so a body that fails
//! (its closure's error, or the driver's) leaves its node there: the capture is then
//! discarded when it ends ([`Capture::end`] says why). Refusals before the node is added (a
//! handle of another graph, a kind the driver lacks, an invalidated capture) leave the
//! capture as it was.
//!
//! ```no_run
//! use cuda_safe::{CaptureMode, ConditionalHandle, Device, Graph, LaunchConfig, ObjectCode};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let body_stream = device.create_stream(Default::default())?;
//! let code = ObjectCode::from_file("loop.cubin")?; // step(int* n, handle): counts down
//! let step = code.get_kernel("step")?;
//! let pool = device.default_memory_resource()?;
//! let n = std::sync::Arc::new(pool.allocate_zeroed::<i32>(1, &stream)?);
//! // SAFETY: step updates the one int of `n`, which the graph keeps alive.
//! let graph = unsafe {
//!     Graph::capture(&stream, CaptureMode::ThreadLocal, |capture| {
//!         let again = capture.conditional_handle(Some(1))?;
//!         capture.add_while(&again, &body_stream, |body| {
//!             body.launch(&LaunchConfig::new(1, 1), &step, (&n, again))?;
//!             Ok(())
//!         })?;
//!         Ok(())
//!     })?
//! };
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use super::Node;
use super::capture::{Capture, Recording};
use super::conditional::{
    ConditionalHandle, body_graphs, check_kind, conditional_params, create_handle,
};
use crate::abi;
use crate::error::{Error, Result, cu};
use crate::handle::Owned;
use crate::stream::Stream;
use cuda_sys::{CUgraph, CUgraphConditionalNodeType, CUgraphNode, CUstreamCaptureStatus};

/// The body of a conditional node: what a closure records on the body stream.
type Body<'a> = dyn FnMut(usize, &mut Capture) -> Result<()> + 'a;

impl Capture {
    /// The capture's graph and the nodes its next work will depend on, refused unless the
    /// capture is active.
    fn graph_and_dependencies(&self) -> Result<(CUgraph, Vec<CUgraphNode>)> {
        let stream = &self.inner.stream;
        // SAFETY: a valid stream.
        let info = unsafe { abi::stream_capture_info(stream.driver(), stream.as_raw()) }?;
        if info.status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE {
            return Err(Error::invalid_argument(format!(
                "the capture is not active (status {}): an operation invalidated it",
                info.status.0
            )));
        }
        // SAFETY: no call was made on the stream since the query.
        let dependencies = unsafe { info.dependencies() }.to_vec();
        Ok((info.graph, dependencies))
    }

    /// A new condition for the conditional nodes of this capture's graph
    /// (`cuGraphConditionalHandleCreate`), as
    /// [`Graph::conditional_handle`](super::Graph::conditional_handle) makes one for a graph;
    /// each handle must be used by one conditional node of the graph.
    ///
    #[doc = cuda_sys::api_doc!(cuGraphConditionalHandleCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the capture was invalidated; [`Error::Unsupported`] on a
    /// driver older than CUDA 12.4; the driver's error.
    #[doc(alias = "cuGraphConditionalHandleCreate")]
    pub fn conditional_handle(&mut self, default: Option<u32>) -> Result<ConditionalHandle> {
        let (graph, _) = self.graph_and_dependencies()?;
        let stream = &self.inner.stream;
        // SAFETY: the capture's graph, valid while the capture lasts.
        let raw = unsafe { create_handle(stream.driver(), graph, stream.context(), default) }?;
        Ok(ConditionalHandle {
            raw,
            graph: self.inner.id,
        })
    }

    /// Records an *if* node after the work captured so far: the body `then` records on
    /// `body_stream` runs when `handle`'s value is not 0 (CUDA 12.4 drivers). The capture's
    /// later work runs after the node.
    ///
    /// `body_stream`, a stream of the capture's context that is not capturing, records the
    /// body while `then` runs and is idle again after; `then` queues the body's work on its
    /// capture's [`stream`](Self::stream) (launches through [`launch`](Self::launch) keep their
    /// kernels and shared buffers alive for the whole graph). The body is recorded under the
    /// promise [`begin`](Self::begin) made for this capture.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCaptureToGraph)]
    #[doc = cuda_sys::api_doc!(cuStreamUpdateCaptureDependencies)]
    /// # Errors
    ///
    /// Before the node is added, the capture unchanged: [`Error::InvalidArgument`] for a
    /// handle of another graph, an invalidated capture or a `body_stream` of another context;
    /// [`Error::Unsupported`] on an older driver. After: the body's error, or the driver's (a
    /// body holding work conditional bodies cannot hold, a capturing `body_stream`); the node
    /// stays, and the capture is discarded at its end.
    #[doc(
        alias = "cuStreamBeginCaptureToGraph",
        alias = "cuStreamUpdateCaptureDependencies"
    )]
    pub fn add_if(
        &mut self,
        handle: &ConditionalHandle,
        body_stream: &Stream,
        mut then: impl FnMut(&mut Capture) -> Result<()>,
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF;
        self.add_conditional(handle, kind, body_stream, 1, &mut |_, body| then(body))
    }

    /// Records an *if/else* node after the work captured so far: `then`'s body runs when
    /// `handle`'s value is not 0, `otherwise`'s when it is (CUDA 12.8 drivers). Both are
    /// recorded on `body_stream`, one after the other, as [`add_if`](Self::add_if) records.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCaptureToGraph)]
    #[doc = cuda_sys::api_doc!(cuStreamUpdateCaptureDependencies)]
    /// # Errors
    ///
    /// As [`add_if`](Self::add_if), with [`Error::Unsupported`] before CUDA 12.8.
    #[doc(
        alias = "cuStreamBeginCaptureToGraph",
        alias = "cuStreamUpdateCaptureDependencies"
    )]
    pub fn add_if_else(
        &mut self,
        handle: &ConditionalHandle,
        body_stream: &Stream,
        mut then: impl FnMut(&mut Capture) -> Result<()>,
        mut otherwise: impl FnMut(&mut Capture) -> Result<()>,
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF;
        self.add_conditional(handle, kind, body_stream, 2, &mut |index, body| {
            if index == 0 {
                then(body)
            } else {
                otherwise(body)
            }
        })
    }

    /// Records a *while* node after the work captured so far: the body `body` records on
    /// `body_stream` runs again and again while `handle`'s value is not 0, tested before each
    /// run (CUDA 12.4 drivers); a kernel of the body usually sets the value. As
    /// [`add_if`](Self::add_if) records.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCaptureToGraph)]
    #[doc = cuda_sys::api_doc!(cuStreamUpdateCaptureDependencies)]
    /// # Errors
    ///
    /// As [`add_if`](Self::add_if).
    #[doc(
        alias = "cuStreamBeginCaptureToGraph",
        alias = "cuStreamUpdateCaptureDependencies"
    )]
    pub fn add_while(
        &mut self,
        handle: &ConditionalHandle,
        body_stream: &Stream,
        mut body: impl FnMut(&mut Capture) -> Result<()>,
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE;
        self.add_conditional(handle, kind, body_stream, 1, &mut |_, capture| {
            body(capture)
        })
    }

    /// Records a *switch* node after the work captured so far, with `cases` bodies: the body
    /// `case(n, ..)` records runs when `handle`'s value is `n`, none when it is `cases` or more
    /// (CUDA 12.8 drivers). The cases are recorded on `body_stream` in order, as
    /// [`add_if`](Self::add_if) records.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCaptureToGraph)]
    #[doc = cuda_sys::api_doc!(cuStreamUpdateCaptureDependencies)]
    /// # Errors
    ///
    /// As [`add_if_else`](Self::add_if_else); [`Error::InvalidArgument`] for no case.
    #[doc(
        alias = "cuStreamBeginCaptureToGraph",
        alias = "cuStreamUpdateCaptureDependencies"
    )]
    pub fn add_switch(
        &mut self,
        handle: &ConditionalHandle,
        body_stream: &Stream,
        cases: usize,
        mut case: impl FnMut(usize, &mut Capture) -> Result<()>,
    ) -> Result<Node> {
        let kind = CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH;
        self.add_conditional(handle, kind, body_stream, cases, &mut case)
    }

    /// Adds a conditional node of `kind` with `bodies` bodies to the capture's graph after its
    /// current dependencies, records each body on `body_stream`, then makes the node the
    /// stream's one dependency.
    fn add_conditional(
        &mut self,
        handle: &ConditionalHandle,
        kind: CUgraphConditionalNodeType,
        body_stream: &Stream,
        bodies: usize,
        record: &mut Body<'_>,
    ) -> Result<Node> {
        if handle.graph != self.inner.id {
            return Err(Error::invalid_argument(
                "the conditional handle belongs to another graph; make it with this capture's \
                 conditional_handle",
            ));
        }
        let size = check_kind(kind, bodies)?;
        if !body_stream.context().same_as(self.inner.stream.context()) {
            return Err(Error::invalid_argument(
                "a conditional body is recorded on a stream of the capture's context",
            ));
        }
        let (graph, dependencies) = self.graph_and_dependencies()?;
        let driver = self.inner.stream.driver();
        let mut params = conditional_params(handle.raw, kind, size, self.inner.stream.context());
        // SAFETY: a conditional node's description with a handle of the capture's graph;
        // dependencies the capture reported, nodes of that graph.
        let node = unsafe { abi::graph_add_node(driver, graph, &dependencies, &mut params) }?;
        let recorded = body_graphs(&params).and_then(|targets| {
            let keeper = self.inner.keeper.unwrap_or(graph);
            for (index, &target) in targets.iter().enumerate() {
                self.record_body(body_stream, target, keeper, index, record)?;
            }
            let mut after = [node];
            // SAFETY: the stream captures into `graph`, which holds `node`.
            unsafe { abi::set_capture_dependencies(driver, self.inner.stream.as_raw(), &mut after) }
        });
        if let Err(error) = recorded {
            // The node cannot be removed while the graph is captured into.
            self.inner.broken = true;
            return Err(error);
        }
        // A capture's graph is new: no node of it was removed.
        Ok(Node {
            raw: node,
            graph: self.inner.id,
            generation: 0,
        })
    }

    /// Records body `index` into `target` by capturing `stream` into it while `record` runs;
    /// what the body's launches keep is retained by `keeper` and listed with this capture's.
    fn record_body(
        &mut self,
        stream: &Stream,
        target: CUgraph,
        keeper: CUgraph,
        index: usize,
        record: &mut Body<'_>,
    ) -> Result<()> {
        // SAFETY: a valid stream and the body graph of a node of the capture's graph; no
        // dependencies (the body starts empty); the capture's mode.
        unsafe {
            cu!(
                stream.driver(),
                cuStreamBeginCaptureToGraph(
                    stream.as_raw(),
                    target,
                    std::ptr::null(),
                    std::ptr::null(),
                    0,
                    self.inner.mode.to_raw(),
                )
            )
        }?;
        let mut body = Capture {
            inner: Owned::new(Recording {
                stream: stream.clone(),
                id: super::next_id(),
                mode: self.inner.mode,
                retained: Vec::new(),
                keeper: Some(keeper),
                broken: false,
                arenas: Vec::new(),
            }),
        };
        let outcome = body
            .inherit_arenas(self)
            .and_then(|()| record(index, &mut body));
        // Ends the body's capture either way; the body graph stays with its node.
        let recording = body.inner.into_unreleased();
        let ended = recording.finish().map(drop);
        // The outer capture stays bound to the arenas, and binds its graph to them.
        recording.unbind_arenas();
        self.inner.retained.extend(recording.retained);
        let nested = if recording.broken {
            Err(Error::invalid_argument(
                "a conditional node inside the body failed, and stays in it",
            ))
        } else {
            Ok(())
        };
        outcome.and(ended).and(nested)?;
        fill_empty(stream.driver(), target)
    }
}

/// Gives an empty body graph one empty node, as [`Graph::add_if`](super::Graph::add_if) and the
/// others give an empty body (a body that records nothing).
fn fill_empty(driver: &'static cuda_sys::Driver, body: CUgraph) -> Result<()> {
    let mut count = 0usize;
    // SAFETY: a body graph of a live node; a null array asks for the count only.
    unsafe {
        cu!(
            driver,
            cuGraphGetNodes(body, std::ptr::null_mut(), &mut count)
        )
    }?;
    if count > 0 {
        return Ok(());
    }
    let mut node: CUgraphNode = std::ptr::null_mut();
    // SAFETY: as above; no dependencies; valid out-pointer.
    unsafe {
        cu!(
            driver,
            cuGraphAddEmptyNode(&mut node, body, std::ptr::null(), 0)
        )
    }
}
