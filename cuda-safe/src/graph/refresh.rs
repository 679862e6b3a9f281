//! Updating an executable from a capture of the same work with new parameters: a fresh
//! capture into a new graph ([`GraphExec::update_from_capture`], any driver) or a re-capture
//! over the executable's own graph ([`GraphExec::recapture`], CUDA 13.3), each then one
//! `cuGraphExecUpdate`, whose refusal keeps the driver's reason.

use super::capture::{Capture, CaptureMode};
use super::capture_into::RecaptureReport;
use super::{Graph, GraphExec};
use crate::error::Result;
use crate::stream::Stream;

#[cfg(doc)]
use crate::error::Error;

impl GraphExec {
    /// Captures what `record` queues on `stream` into a new graph and updates the executable
    /// from it ([`update`](Self::update)): the same work with other buffers, scalars or launch
    /// shapes runs from the next launch on, with no new instantiation. `record` queues the
    /// work as when the graph was captured (a [`GraphArena`](super::GraphArena)'s capture
    /// names the arena with [`Capture::use_arena`]).
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCapture)]
    #[doc = cuda_sys::api_doc!(cuGraphExecUpdate)]
    /// # Errors
    ///
    /// As [`Graph::capture`]; [`Error::GraphUpdateRefused`] with the driver's reason when the
    /// new graph differs in a way an update cannot apply (another topology, a node's type or
    /// function changed): the executable is unchanged.
    ///
    /// # Safety
    ///
    /// As [`Capture::begin`], for every launch from now on.
    #[doc(alias = "cuStreamBeginCapture", alias = "cuGraphExecUpdate")]
    pub unsafe fn update_from_capture(
        &mut self,
        stream: &Stream,
        mode: CaptureMode,
        record: impl FnOnce(&mut Capture) -> Result<()>,
    ) -> Result<()> {
        // SAFETY: the caller's promise.
        let graph = unsafe { Graph::capture(stream, mode, record) }?;
        self.update(&graph)
    }

    /// Re-captures the executable's own graph ([`Graph::recapture`]) and updates the
    /// executable from it ([`update`](Self::update)). The node handles of the graph stay
    /// valid.
    ///
    /// Calls [`cuStreamBeginRecaptureToGraph`][recapture] (in the CUDA 13 bindings only).
    /// Needs a CUDA 13.3 driver.
    ///
    /// [recapture]: https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__STREAM.html#group__CUDA__STREAM_1g34e9dd281a5f5744a484addabfebbb64
    ///
    #[doc = cuda_sys::api_doc!(cuGraphExecUpdate)]
    /// # Errors
    ///
    /// As [`Graph::recapture`] (a failed re-capture leaves the executable as it was, its
    /// graph undefined); [`Error::GraphUpdateRefused`] with the driver's reason when the
    /// report's [`not_updatable`](RecaptureReport::not_updatable) nodes stop the update: the
    /// executable runs as before, and only a new instantiation runs the re-captured work;
    /// [`Error::InvalidArgument`] for an executable instantiated for device launch whose
    /// re-capture used a [`GraphArena`](crate::GraphArena) (the executable runs as before).
    ///
    /// # Safety
    ///
    /// As [`Capture::begin`], for every launch from now on.
    #[doc(alias = "cuStreamBeginRecaptureToGraph", alias = "cuGraphExecUpdate")]
    pub unsafe fn recapture(
        &mut self,
        stream: &Stream,
        mode: CaptureMode,
        record: impl FnOnce(&mut Capture) -> Result<()>,
    ) -> Result<RecaptureReport> {
        // SAFETY: the caller's promise.
        let report = unsafe { self.graph.recapture(stream, mode, record) }?;
        self.update_from_own_graph()?;
        Ok(report)
    }
}
