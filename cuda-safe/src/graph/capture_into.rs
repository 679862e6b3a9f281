//! Capturing into a graph that exists: after chosen nodes of it, with the kind of each edge
//! (`cuStreamBeginCaptureToGraph`, CUDA 12.3), or again over its own nodes, changing their
//! parameters (`cuStreamBeginRecaptureToGraph`, CUDA 13.3), as cuda.core's P1 #2359 and
//! cuda-api-wrappers #794/#795 ask.
//!
//! ```no_run
//! use cuda_safe::{CaptureMode, Device, Graph, LaunchConfig, ObjectCode, launch};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let kernel = ObjectCode::from_file("step.cubin")?.get_kernel("step")?;
//! let x = std::sync::Arc::new(pool.allocate_zeroed::<f32>(1024, &stream)?);
//! let mut graph = Graph::new(stream.context())?;
//! let fill = graph.add_memset(&[], &x, 1.0f32)?;
//! let config = LaunchConfig::for_num_elements(1024, 256)?;
//! // SAFETY: step(float*, size_t) updates 1024 floats of `x`, which the graph keeps.
//! let ends = unsafe {
//!     graph.capture_into(&stream, CaptureMode::ThreadLocal, &[fill.into()], |capture| {
//!         capture.launch(&config, &kernel, (&x, 1024usize))?;
//!         Ok(())
//!     })?
//! };
//! assert_eq!(ends.len(), 1); // the captured launch, to name as a dependency
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use super::capture::{Capture, CaptureMode, Recording};
use super::conditional::require_driver;
use super::{Graph, KernelEdge, KernelNode, Node};
use crate::abi::{self, RecaptureLog};
use crate::driver::cuda_driver_version;
use crate::error::{Error, Result, cu};
use crate::handle::Owned;
use crate::stream::Stream;
use cuda_sys::{CUgraphEdgeData, CudaVersion};

/// The driver that first has `cuStreamBeginCaptureToGraph`.
const CAPTURE_INTO_SINCE: CudaVersion = CudaVersion(12030);
/// The driver that first has `cuStreamBeginRecaptureToGraph`.
const RECAPTURE_SINCE: CudaVersion = CudaVersion(13030);

/// A node of a graph that a capture into the graph starts after ([`Graph::capture_into`]),
/// and how the first captured work depends on it: fully (`edge: None`, the default), or by a
/// programmatic or launch-order edge between kernel nodes ([`KernelEdge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureDependency {
    /// The node.
    pub node: Node,
    /// The kind of edge from it (`None`: a full dependency).
    pub edge: Option<KernelEdge>,
}

impl From<Node> for CaptureDependency {
    fn from(node: Node) -> Self {
        Self { node, edge: None }
    }
}

impl From<&KernelNode> for CaptureDependency {
    fn from(node: &KernelNode) -> Self {
        node.node().into()
    }
}

/// What a re-capture ([`Graph::recapture`]) changed: the nodes whose parameters differ from
/// the graph's before, and among them those an executable cannot take by an update (it must
/// be instantiated again).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecaptureReport {
    changed: Vec<Node>,
    not_updatable: Vec<Node>,
}

impl RecaptureReport {
    /// Every node whose parameters changed.
    pub fn changed(&self) -> &[Node] {
        &self.changed
    }

    /// The changed nodes an executable cannot take by an update.
    pub fn not_updatable(&self) -> &[Node] {
        &self.not_updatable
    }

    /// Whether the re-capture recorded exactly what the graph held.
    pub fn is_unchanged(&self) -> bool {
        self.changed.is_empty()
    }
}

impl Graph {
    /// Captures what `record` queues on `stream` into this graph, after the nodes `after`
    /// (`cuStreamBeginCaptureToGraph`); returns the nodes the captured work ends on (the
    /// stream's dependencies at the end: its last nodes, or `after`'s when nothing was
    /// captured), to name as dependencies of what follows. Launches recorded with
    /// [`Capture::launch`] give nodes of this graph; what they keep, this graph keeps.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCaptureToGraph)]
    #[doc = cuda_sys::api_doc!(cuStreamEndCapture)]
    /// # Errors
    ///
    /// Before anything is captured: [`Error::InvalidArgument`] for a node of another graph, a
    /// stream of another context or a graph with a defect; [`Error::Unsupported`] before a
    /// CUDA 12.3 driver; the driver's error (a capturing stream, an edge it refuses). After:
    /// `record`'s error or the driver's; what was captured stays in the graph, which then
    /// refuses to be instantiated.
    ///
    /// # Safety
    ///
    /// As [`Capture::begin`].
    #[doc(alias = "cuStreamBeginCaptureToGraph", alias = "cuStreamEndCapture")]
    pub unsafe fn capture_into(
        &mut self,
        stream: &Stream,
        mode: CaptureMode,
        after: &[CaptureDependency],
        record: impl FnOnce(&mut Capture) -> Result<()>,
    ) -> Result<Vec<Node>> {
        require_driver(
            cuda_driver_version()?,
            CAPTURE_INTO_SINCE,
            "capture into an existing graph",
        )?;
        self.check_capture_stream(stream)?;
        let nodes: Vec<_> = after
            .iter()
            .map(|dependency| self.raw_node(dependency.node))
            .collect::<Result<_>>()?;
        let edges: Vec<CUgraphEdgeData> = after
            .iter()
            .map(|dependency| dependency.edge.map(KernelEdge::data).unwrap_or_default())
            .collect();
        let with_edges = after.iter().any(|dependency| dependency.edge.is_some());
        // SAFETY: a valid stream and this live graph; `nodes` are nodes of it, `edges` one
        // description per node (or none: default edges).
        unsafe {
            cu!(
                stream.driver(),
                cuStreamBeginCaptureToGraph(
                    stream.as_raw(),
                    self.as_raw(),
                    super::build::array_ptr(&nodes),
                    if with_edges {
                        edges.as_ptr()
                    } else {
                        std::ptr::null()
                    },
                    nodes.len(),
                    mode.to_raw(),
                )
            )
        }?;
        self.record_into(stream, mode, record, "a capture into the graph failed")
    }

    /// Records `record`'s work again over this graph's nodes (`cuStreamBeginRecaptureToGraph`):
    /// the same work, queued in the same order, with other parameters (buffers, scalars,
    /// launch shapes). The nodes keep their handles; the driver gives up what the graph kept
    /// (its user objects), and the graph keeps what the new launches keep. The report lists
    /// the nodes whose parameters changed.
    ///
    /// Calls [`cuStreamBeginRecaptureToGraph`][recapture] (in the CUDA 13 bindings only).
    /// Needs a CUDA 13.3 driver.
    ///
    /// [recapture]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html#group__CUDA__STREAM_1g34e9dd281a5f5744a484addabfebbb64
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] under the CUDA 12 ABI or before a CUDA 13.3 driver, and
    /// [`Error::InvalidArgument`] for a stream of another context or a graph with a defect,
    /// the graph unchanged; `record`'s error or the driver's (work of another topology than
    /// the graph's, an allocation's size changed): the driver leaves the graph undefined, so
    /// it refuses to be instantiated from then on.
    ///
    /// # Safety
    ///
    /// As [`Capture::begin`].
    #[doc(alias = "cuStreamBeginRecaptureToGraph")]
    pub unsafe fn recapture(
        &mut self,
        stream: &Stream,
        mode: CaptureMode,
        record: impl FnOnce(&mut Capture) -> Result<()>,
    ) -> Result<RecaptureReport> {
        require_driver(
            cuda_driver_version()?,
            RECAPTURE_SINCE,
            "re-capture into a graph",
        )?;
        self.check_capture_stream(stream)?;
        let log = RecaptureLog::default();
        // SAFETY: a valid stream and this live graph; `log` outlives the capture, which
        // `record_into` ends before returning.
        unsafe {
            abi::begin_recapture(
                stream.driver(),
                stream.as_raw(),
                mode.to_raw(),
                self.as_raw(),
                &log,
            )
        }?;
        // The driver released the graph's user objects: what it kept is no longer its own.
        self.retained.clear();
        self.kept_buffers.clear();
        self.arenas.clear();
        self.record_into(
            stream,
            mode,
            record,
            "a re-capture failed, leaving it undefined",
        )?;
        let mut report = RecaptureReport::default();
        for (raw, updatable) in log.take() {
            let node = self.node(raw);
            report.changed.push(node);
            if !updatable {
                report.not_updatable.push(node);
            }
        }
        Ok(report)
    }

    /// Refuses a graph with a defect, or a stream of another context than the graph's.
    fn check_capture_stream(&self, stream: &Stream) -> Result<()> {
        self.check_whole()?;
        if !stream.context().same_as(&self.context) {
            return Err(Error::invalid_argument(
                "a capture into a graph records on a stream of the graph's context",
            ));
        }
        Ok(())
    }

    /// Runs `record` on `stream`, which captures into this graph now, and ends the capture:
    /// the nodes the stream depends on at the end. On failure the graph gets a defect
    /// (`failure` says which).
    fn record_into(
        &mut self,
        stream: &Stream,
        mode: CaptureMode,
        record: impl FnOnce(&mut Capture) -> Result<()>,
        failure: &'static str,
    ) -> Result<Vec<Node>> {
        let mut capture = Capture {
            inner: Owned::new(Recording {
                stream: stream.clone(),
                id: self.id,
                mode,
                retained: Vec::new(),
                keeper: Some(self.as_raw()),
                broken: false,
                arenas: Vec::new(),
            }),
        };
        let outcome = record(&mut capture).and_then(|()| {
            // SAFETY: a valid stream.
            let info = unsafe { abi::stream_capture_info(stream.driver(), stream.as_raw()) }?;
            // SAFETY: no call was made on the stream since the query.
            Ok(unsafe { info.dependencies() }.to_vec())
        });
        let recording = capture.inner.into_unreleased();
        let ended = recording.finish();
        self.retained.extend(recording.retained.iter().copied());
        let broken = if recording.broken {
            Err(Error::invalid_argument(
                "a conditional node's body failed, and its node stays in the graph",
            ))
        } else {
            Ok(())
        };
        // Bound before the arenas let go of the capture: no reset lands in between. A graph
        // whose new nodes could not be bound must not launch: it gets a defect.
        let bound = outcome.and_then(|ends| {
            ended.and(broken)?;
            self.bind_arenas(&recording.arenas)?;
            Ok(ends)
        });
        recording.unbind_arenas();
        match bound {
            Ok(ends) => Ok(ends.into_iter().map(|raw| self.node(raw)).collect()),
            Err(error) => {
                self.defect = Some(format!("{failure}: {error}"));
                Err(error)
            }
        }
    }
}
