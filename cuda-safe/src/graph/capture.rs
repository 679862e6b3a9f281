//! Building a graph by stream capture: the work queued on a stream between
//! [`Capture::begin`] and [`Capture::end`] is recorded into a graph instead of run, including
//! the work of other streams forked into the capture ([`Capture::fork`]) and joined back
//! ([`Capture::join`]), as `cuda.core`'s `GraphBuilder` records.
//!
//! ```no_run
//! use cuda_safe::{launch, CaptureMode, Device, Graph, LaunchConfig, ObjectCode};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let kernel = ObjectCode::from_file("step.cubin")?.get_kernel("step")?;
//! let mut x = pool.allocate_zeroed::<f32>(1024, &stream)?;
//! let config = LaunchConfig::for_num_elements(1024, 256)?;
//! // SAFETY: `x` outlives the graph and its executable (dropped at the end of this scope, in
//! // reverse order); step(float*, size_t) updates 1024 floats, which `x` holds.
//! let graph = unsafe {
//!     Graph::capture(&stream, CaptureMode::ThreadLocal, |capture| {
//!         for _ in 0..100 {
//!             launch(capture.stream(), &config, &kernel, (&mut x, 1024usize))?;
//!         }
//!         Ok(())
//!     })?
//! };
//! let exec = graph.instantiate()?;
//! exec.launch(&stream)?; // 100 kernels, one call
//! stream.sync()?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::fmt;

use super::arena::ArenaCapture;
use super::build::function_in;
use super::kernel_node::write_attributes;
use super::{Graph, KernelNode, Node, keep, next_id};
use crate::abi;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release};
use crate::kernel::Kernel;
use crate::launch::{Keep, KernelArgs, LaunchAttributes, LaunchConfig, launch_captured};
use crate::ordering::wait_for;
use crate::stream::Stream;
use cuda_sys::{CUgraph, CUresult, CUstreamCaptureMode, CUstreamCaptureStatus, CUuserObject};

/// Which calls a capture forbids while it lasts: the "potentially unsafe" ones (a synchronous
/// allocation, a synchronization that could touch the capture) made from other threads too,
/// or only from this one, or none. Work on the capturing stream itself is always recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaptureMode {
    /// Forbidden from every thread of the process (`CU_STREAM_CAPTURE_MODE_GLOBAL`).
    Global,
    /// Forbidden from the thread that began the capture (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`).
    ThreadLocal,
    /// Not forbidden; the caller makes sure they do not touch the capture
    /// (`CU_STREAM_CAPTURE_MODE_RELAXED`).
    Relaxed,
}

impl CaptureMode {
    pub(super) fn to_raw(self) -> CUstreamCaptureMode {
        match self {
            Self::Global => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            Self::ThreadLocal => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            Self::Relaxed => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

/// Whether a stream is being captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaptureStatus {
    /// Not capturing: work queued there runs.
    Idle,
    /// Capturing, in the capture with this id (unique in the process; forked streams share it).
    Active {
        /// The capture's id.
        id: u64,
    },
    /// Capturing, but an operation not allowed during capture invalidated it: ending it gives
    /// an error and no graph.
    Invalidated {
        /// The capture's id.
        id: u64,
    },
}

impl CaptureStatus {
    fn from_raw(status: CUstreamCaptureStatus, id: u64) -> Result<Self> {
        match status {
            CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(Self::Idle),
            CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => Ok(Self::Active { id }),
            CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_INVALIDATED => {
                Ok(Self::Invalidated { id })
            }
            other => Err(Error::unexpected(
                "cuStreamGetCaptureInfo",
                format!("an unknown capture status {}", other.0),
            )),
        }
    }
}

/// A stream capture under way: ended by [`end`](Self::end), which gives the graph, or by drop,
/// which discards it. Not `Send`: a global or thread-local capture ends on the thread that
/// began it.
#[must_use = "a capture is discarded when dropped; `end` it to get the graph"]
pub struct Capture {
    pub(super) inner: Owned<Recording>,
}

/// A capture's state; its release ends the capture and discards the graph.
pub(super) struct Recording {
    pub(super) stream: Stream,
    pub(super) id: u64,
    pub(super) mode: CaptureMode,
    /// User objects retained by the graph being captured (kernels and buffers of
    /// [`Capture::launch`]).
    pub(super) retained: Vec<CUuserObject>,
    /// For the capture of a conditional node's body: the graph of the capture the node is
    /// in (the outermost one), which keeps what the body uses. The body graph belongs to its
    /// node, so ending or discarding this capture never destroys it.
    pub(super) keeper: Option<CUgraph>,
    /// Set when a conditional node was added and its body failed: the driver removes no node
    /// from a graph under capture, so the capture is discarded at its end.
    pub(super) broken: bool,
    /// The arenas the capture allocates from ([`Capture::use_arena`]), each with the driver's
    /// id of this capture, under which it was let allocate, and its generation then; unbound
    /// once the capture is over and its graph bound ([`Recording::unbind_arenas`]).
    pub(super) arenas: Vec<ArenaCapture>,
}

impl Capture {
    /// Begins capturing `stream` in `mode` (`cuStreamBeginCapture`): work queued on it from now
    /// on is recorded, not run.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCapture)]
    /// # Errors
    ///
    /// The driver's error (the stream is capturing already, or is the legacy default stream).
    ///
    /// # Safety
    ///
    /// A captured graph replays the raw addresses its launches, copies and fills used; the
    /// crate cannot see them. Until the graph and every executable made from it are dropped
    /// (or their replays have finished):
    /// - every memory the captured work touches stays allocated: do not drop (or free) its
    ///   buffers, and do not allocate or free buffers on the capturing stream while capturing
    ///   (that would record graph allocations the buffers do not own);
    /// - each kernel's code stays loaded (keep a [`Kernel`] clone, or use
    ///   [`Capture::launch`], which keeps it).
    ///
    /// No other thread may queue work on `stream` while the capture lasts.
    #[doc(alias = "cuStreamBeginCapture")]
    pub unsafe fn begin(stream: &Stream, mode: CaptureMode) -> Result<Self> {
        // SAFETY: a valid stream; what the capture records is the caller's promise.
        unsafe {
            cu!(
                stream.driver(),
                cuStreamBeginCapture_v2(stream.as_raw(), mode.to_raw())
            )
        }?;
        Ok(Self {
            inner: Owned::new(Recording {
                stream: stream.clone(),
                id: next_id(),
                mode,
                retained: Vec::new(),
                keeper: None,
                broken: false,
                arenas: Vec::new(),
            }),
        })
    }

    /// Whether `stream` is being captured, and by which capture
    /// (`cuStreamGetCaptureInfo`).
    ///
    #[doc = cuda_sys::api_doc!(cuStreamGetCaptureInfo)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuStreamGetCaptureInfo")]
    pub fn status_of(stream: &Stream) -> Result<CaptureStatus> {
        // SAFETY: a valid stream.
        let info = unsafe { abi::stream_capture_info(stream.driver(), stream.as_raw()) }?;
        CaptureStatus::from_raw(info.status, info.id)
    }

    /// The capturing stream: queue the work to record here.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Whether the capture is still active or was invalidated.
    ///
    /// # Errors
    ///
    /// The driver's error.
    pub fn status(&self) -> Result<CaptureStatus> {
        Self::status_of(&self.inner.stream)
    }

    /// Forks `branch` into the capture: it waits for the work recorded so far, and the work
    /// queued on it from now on is recorded too, in parallel with the capturing stream's. Join
    /// it back ([`join`](Self::join)) before ending.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamWaitEvent)]
    /// # Errors
    ///
    /// The driver's error (a legacy or capturing `branch`).
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn fork(&self, branch: &Stream) -> Result<()> {
        wait_for(branch, &self.inner.stream)
    }

    /// Joins `branch` back: the capturing stream's later work waits for what was recorded on
    /// `branch`.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamWaitEvent)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn join(&self, branch: &Stream) -> Result<()> {
        wait_for(&self.inner.stream, branch)
    }

    /// Records a launch of `kernel` on the capturing stream, as [`launch`](crate::launch)
    /// does, and returns its node, whose arguments an executable can then change
    /// ([`GraphExec::set_kernel_args`](super::GraphExec::set_kernel_args)). The graph keeps the
    /// kernel loaded and every `Arc<Buffer>` argument alive. A cluster shape or a cooperative
    /// launch is written onto the node too (`cuGraphKernelNodeSetAttribute`), so the node keeps
    /// them whatever the capture recorded.
    ///
    /// Unlike [`launch`](crate::launch), buffers of other streams are not ordered with their
    /// streams here: a capture runs nothing, and may not depend on work outside it (the driver
    /// refuses a wait for another stream's event); each replay runs in the graph's order, on
    /// the stream it is launched on. So a conditional body's capture
    /// ([`add_while`](Self::add_while), ...) takes the buffers of the capture's stream.
    ///
    #[doc = cuda_sys::api_doc!(cuLaunchKernel)]
    #[doc = cuda_sys::api_doc!(cuLaunchKernelEx)]
    /// # Errors
    ///
    /// As [`launch`](crate::launch); [`Error::UnexpectedAnswer`] if the capture does not show
    /// the launch as its one last node.
    ///
    /// # Safety
    ///
    /// As [`launch`](crate::launch), at every replay, and as [`begin`](Self::begin) for the
    /// memory used.
    #[doc(alias = "cuLaunchKernel", alias = "cuLaunchKernelEx")]
    pub unsafe fn launch<A: KernelArgs>(
        &mut self,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: A,
    ) -> Result<KernelNode> {
        let mut keep: Vec<Keep> = vec![Box::new(kernel.clone())];
        args.keep_alive(&mut keep);
        // SAFETY: the caller's promise, as for `launch`.
        unsafe { launch_captured(&self.inner.stream, config, None, kernel, &args) }?;
        self.launched(config, &LaunchAttributes::default(), kernel, keep)
    }

    /// Records a launch of `kernel` with launch `attributes` on the capturing stream, as
    /// [`launch_with`](crate::launch_with) does, and returns its node, as
    /// [`launch`](Self::launch) does. The attributes a graph node holds (priority, memory
    /// synchronisation domains, an access-policy window, cluster scheduling, a preferred
    /// cluster shape), the cluster shape and cooperation are written onto the node as well;
    /// programmatic dependent launch becomes an edge from the previous kernel node, as the
    /// driver records it. Buffers are not ordered with their streams, as for
    /// [`launch`](Self::launch).
    ///
    #[doc = cuda_sys::api_doc!(cuLaunchKernelEx)]
    #[doc = cuda_sys::api_doc!(cuGraphKernelNodeSetAttribute)]
    /// # Errors
    ///
    /// As [`launch_with`](crate::launch_with) and [`launch`](Self::launch).
    ///
    /// # Safety
    ///
    /// As [`launch_with`](crate::launch_with), at every replay, and as [`begin`](Self::begin)
    /// for the memory used.
    #[doc(alias = "cuLaunchKernelEx", alias = "cuGraphKernelNodeSetAttribute")]
    pub unsafe fn launch_with<A: KernelArgs>(
        &mut self,
        config: &LaunchConfig,
        attributes: &LaunchAttributes<'_>,
        kernel: &Kernel,
        args: A,
    ) -> Result<KernelNode> {
        let mut keep: Vec<Keep> = vec![Box::new(kernel.clone())];
        args.keep_alive(&mut keep);
        // SAFETY: the caller's promise, as for `launch_with`.
        unsafe { launch_captured(&self.inner.stream, config, Some(attributes), kernel, &args) }?;
        // Programmatic dependent launch is an edge of the graph now, not a node attribute.
        let on_node = LaunchAttributes {
            programmatic_stream_serialization: false,
            programmatic_event: None,
            ..*attributes
        };
        self.launched(config, &on_node, kernel, keep)
    }

    /// After a launch was recorded: the node it became (the stream's one dependency), with
    /// `config`'s shape and `attributes` written onto it and `keep` retained by the graph.
    fn launched(
        &mut self,
        config: &LaunchConfig,
        attributes: &LaunchAttributes<'_>,
        kernel: &Kernel,
        keep: Vec<Keep>,
    ) -> Result<KernelNode> {
        let driver = self.inner.stream.driver();
        // SAFETY: a valid stream.
        let info = unsafe { abi::stream_capture_info(driver, self.inner.stream.as_raw()) }?;
        // SAFETY: no call was made on the stream since the query.
        let node = match unsafe { info.dependencies() } {
            [node] if info.status == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => {
                *node
            }
            other => {
                return Err(Error::unexpected(
                    "cuStreamGetCaptureInfo",
                    format!(
                        "after a captured launch the stream depends on {} nodes (status {})",
                        other.len(),
                        info.status.0
                    ),
                ));
            }
        };
        // SAFETY: the kernel node the launch just became; the attributes were checked by the
        // launch, against the stream's device and driver.
        unsafe { write_attributes(driver, node, config, attributes) }?;
        let keeper = self.inner.keeper.unwrap_or(info.graph);
        let object = keep::retain(driver, keeper, keep)?;
        self.inner.retained.push(object);
        // After the launch, which loaded the kernel into the context if it was not yet.
        let function = function_in(kernel, self.inner.stream.context())?;
        Ok(KernelNode {
            node: Node {
                raw: node,
                graph: self.inner.id,
                generation: 0,
            },
            kernel: kernel.clone(),
            config: *config,
            function,
        })
    }

    /// Ends the capture and returns the graph recorded (`cuStreamEndCapture`); the stream runs
    /// its work again.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamEndCapture)]
    /// # Errors
    ///
    /// The driver's error, explained ([`Error::is_capture_error`]): the capture was invalidated
    /// by an operation not allowed during capture, or a forked stream was not joined;
    /// [`Error::InvalidArgument`] when a conditional node's body failed
    /// ([`add_while`](Self::add_while), ...: its node stays in the graph, which is discarded).
    /// Either way the capture is over and the stream runs its work again.
    #[doc(alias = "cuStreamEndCapture")]
    pub fn end(self) -> Result<Graph> {
        let mut recording = self.inner.into_unreleased();
        if recording.broken {
            recording.release()?;
            return Err(Error::invalid_argument(
                "the capture was discarded: a conditional node's body failed, and the driver \
                 removes no node from a graph under capture",
            ));
        }
        let raw = match recording.finish() {
            Ok(raw) => raw,
            Err(error) => {
                recording.unbind_arenas();
                return Err(error);
            }
        };
        let mut graph = Graph::from_parts(
            raw,
            recording.id,
            recording.stream.context().clone(),
            std::mem::take(&mut recording.retained),
        );
        // Bound before the arenas let go of the capture: no reset lands in between.
        let bound = graph.bind_arenas(&recording.arenas);
        recording.unbind_arenas();
        bound.map(|()| graph)
    }
}

impl Recording {
    /// The capture is over and its graph bound (or discarded): the arenas it used let go of
    /// it, and may be reset from now on.
    pub(super) fn unbind_arenas(&self) {
        for used in &self.arenas {
            used.unbind();
        }
    }

    /// Ends the capture: the recorded graph, or the driver's error (a graph the driver still
    /// returned with it is destroyed, unless it is a conditional node's body). The arenas
    /// stay bound to it: unbind them once the graph is bound.
    pub(super) fn finish(&self) -> Result<CUgraph> {
        let driver = self.stream.driver();
        let mut raw: CUgraph = std::ptr::null_mut();
        // SAFETY: a valid stream and out-pointer.
        let ended = unsafe { cu!(driver, cuStreamEndCapture(self.stream.as_raw(), &mut raw)) };
        match ended {
            Ok(()) if !raw.is_null() => Ok(raw),
            Ok(()) => Err(Error::unexpected(
                "cuStreamEndCapture",
                "success without a graph",
            )),
            Err(error) => {
                if !raw.is_null() && self.keeper.is_none() {
                    // SAFETY: the driver handed over this graph with the error; nobody else
                    // has it.
                    let _ = unsafe { cu!(driver, cuGraphDestroy(raw)) };
                }
                Err(error)
            }
        }
    }
}

impl Release for Recording {
    const WHAT: &'static str = "stream capture";

    /// Ends the capture and destroys the graph recorded (not a conditional node's body, which
    /// its node owns).
    fn release(&mut self) -> Result<()> {
        let finished = self.finish();
        self.unbind_arenas();
        match finished {
            Ok(_) if self.keeper.is_some() => Ok(()),
            // SAFETY: the graph just captured, which nobody else has.
            Ok(raw) => unsafe { cu!(self.stream.driver(), cuGraphDestroy(raw)) },
            // Discarding an invalidated capture is what dropping it is for.
            Err(error)
                if error.cuda_code() == Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) =>
            {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("stream", &self.inner.stream)
            .field("id", &self.inner.id)
            .finish()
    }
}

impl Graph {
    /// Captures what `record` queues on `stream` (or on streams it forks into the capture) into
    /// a new graph: [`Capture::begin`], `record`, [`Capture::end`]. When `record` fails, the
    /// capture is discarded and its error returned.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCapture)]
    #[doc = cuda_sys::api_doc!(cuStreamEndCapture)]
    /// # Errors
    ///
    /// `record`'s error; as [`Capture::begin`] and [`Capture::end`].
    ///
    /// # Safety
    ///
    /// As [`Capture::begin`].
    #[doc(alias = "cuStreamBeginCapture", alias = "cuStreamEndCapture")]
    pub unsafe fn capture(
        stream: &Stream,
        mode: CaptureMode,
        record: impl FnOnce(&mut Capture) -> Result<()>,
    ) -> Result<Graph> {
        // SAFETY: the caller's promise.
        let mut capture = unsafe { Capture::begin(stream, mode) }?;
        match record(&mut capture) {
            Ok(()) => capture.end(),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_map_to_the_drivers() {
        assert_eq!(
            CaptureMode::Global.to_raw(),
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL
        );
        assert_eq!(
            CaptureMode::ThreadLocal.to_raw(),
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        );
        assert_eq!(
            CaptureMode::Relaxed.to_raw(),
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED
        );
    }

    #[test]
    fn statuses_come_from_the_drivers() {
        use CUstreamCaptureStatus as Raw;
        assert_eq!(
            CaptureStatus::from_raw(Raw::CU_STREAM_CAPTURE_STATUS_NONE, 0).unwrap(),
            CaptureStatus::Idle
        );
        assert_eq!(
            CaptureStatus::from_raw(Raw::CU_STREAM_CAPTURE_STATUS_ACTIVE, 9).unwrap(),
            CaptureStatus::Active { id: 9 }
        );
        assert_eq!(
            CaptureStatus::from_raw(Raw::CU_STREAM_CAPTURE_STATUS_INVALIDATED, 9).unwrap(),
            CaptureStatus::Invalidated { id: 9 }
        );
        let unknown = CaptureStatus::from_raw(CUstreamCaptureStatus(77), 1).unwrap_err();
        assert!(
            matches!(unknown, Error::UnexpectedAnswer { .. }),
            "{unknown}"
        );
    }
}
