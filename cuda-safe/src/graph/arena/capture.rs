//! Captures that allocate from arenas: a capture names the arenas it uses
//! ([`Capture::use_arena`]), each arena allocates only for captures that named it, and the
//! graph a capture ends with keeps those arenas and their static buffers alive and is bound
//! to their generation when the capture named them (a reset is refused from then until the
//! capture is over and the graph bound).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Binding, GraphArena};
use crate::abi;
use crate::error::{Error, Result};
use crate::graph::{Capture, CaptureMode, Graph};
use crate::launch::Keep;
use crate::stream::Stream;
use cuda_sys::CUstreamCaptureStatus;

/// An arena a capture uses: the driver's id of the capture, under which the arena lets it
/// allocate, and the arena's generation then (which the graph is bound to).
#[derive(Debug, Clone)]
pub(in crate::graph) struct ArenaCapture {
    arena: GraphArena,
    id: u64,
    generation: u64,
}

impl ArenaCapture {
    /// The capture is over (ended, or discarded), and its graph bound: the arena no longer
    /// allocates for it, and may be reset.
    pub(in crate::graph) fn unbind(&self) {
        self.arena.unbind_capture(self.id);
    }
}

impl GraphArena {
    /// Captures what `record` queues on `stream` into a new graph, as
    /// [`Graph::capture`] does, with the capture using this arena ([`Capture::use_arena`]):
    /// buffers allocated from the arena meanwhile are plain addresses to the graph, the same
    /// at every replay.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamBeginCapture)]
    #[doc = cuda_sys::api_doc!(cuStreamEndCapture)]
    /// # Errors
    ///
    /// `record`'s error; as [`Capture::begin`], [`Capture::use_arena`] and [`Capture::end`].
    ///
    /// # Safety
    ///
    /// As [`Capture::begin`], but for what the capture allocates from the arena and the
    /// arena's static buffers, which stay allocated while a graph captured in it may run. Other
    /// buffers the work touches, the arena's own made outside the capture (a library handle's
    /// workspace) included, must outlive the graph and its executables.
    #[doc(alias = "cuStreamBeginCapture", alias = "cuStreamEndCapture")]
    pub unsafe fn capture(
        &self,
        stream: &Stream,
        mode: CaptureMode,
        record: impl FnOnce(&mut Capture) -> Result<()>,
    ) -> Result<Graph> {
        // SAFETY: the caller's promise.
        unsafe {
            Graph::capture(stream, mode, |capture| {
                capture.use_arena(self)?;
                record(capture)
            })
        }
    }

    /// Lets the capture numbered `id` (the driver's) allocate from the arena; the arena's
    /// generation, which stays until the capture is unbound (a reset is refused meanwhile).
    fn bind_capture(&self, id: u64) -> u64 {
        let mut state = self.inner.lock();
        if !state.captures.contains(&id) {
            state.captures.push(id);
        }
        self.inner.generation.load(Ordering::Acquire)
    }

    /// The capture numbered `id` has ended (or was discarded).
    fn unbind_capture(&self, id: u64) {
        self.inner.lock().captures.retain(|&known| known != id);
    }
}

impl Capture {
    /// Makes this capture allocate from `arena`: its buffers allocated on the capturing
    /// stream (or a stream forked into the capture) are addresses the graph replays, held for
    /// the graph once freed, and the graph this capture ends with keeps the arena and its
    /// static buffers alive. An arena refuses to allocate inside a capture that did not name
    /// it. A conditional body recorded inside the capture uses the arena too.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamGetCaptureInfo)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an arena of another device or a capture no longer
    /// active; the driver's error.
    #[doc(alias = "cuStreamGetCaptureInfo")]
    pub fn use_arena(&mut self, arena: &GraphArena) -> Result<()> {
        let stream = &self.inner.stream;
        if stream.device() != arena.device() {
            return Err(Error::invalid_argument(format!(
                "the graph arena is on device {}, the capture on device {}",
                arena.device().ordinal(),
                stream.device().ordinal()
            )));
        }
        if self
            .inner
            .arenas
            .iter()
            .any(|known| known.arena.same_as(arena))
        {
            return Ok(());
        }
        // SAFETY: a valid stream.
        let info = unsafe { abi::stream_capture_info(stream.driver(), stream.as_raw()) }?;
        if info.status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE {
            return Err(Error::invalid_argument(format!(
                "the capture is not active (status {}): an operation invalidated it",
                info.status.0
            )));
        }
        let generation = arena.bind_capture(info.id);
        self.inner.arenas.push(ArenaCapture {
            arena: arena.clone(),
            id: info.id,
            generation,
        });
        Ok(())
    }

    /// Makes this capture (a conditional body's) use the arenas `outer` uses.
    pub(in crate::graph) fn inherit_arenas(&mut self, outer: &Capture) -> Result<()> {
        for used in &outer.inner.arenas {
            self.use_arena(&used.arena)?;
        }
        Ok(())
    }
}

impl Graph {
    /// Binds the graph to `arenas` (a capture's, which just ended into it, still bound to
    /// them): it keeps each arena and its live static buffers alive (a user object, for every
    /// executable made from it) and answers to each arena's generation when the capture named
    /// it. A graph already bound to an arena keeps the older generation: its earlier nodes
    /// still address what the arena had then.
    pub(in crate::graph) fn bind_arenas(&mut self, arenas: &[ArenaCapture]) -> Result<()> {
        for used in arenas {
            let statics = used.arena.live_statics();
            let buffers: Vec<&Arc<_>> = statics.iter().collect();
            let items: Vec<Keep> = vec![Box::new(used.arena.clone())];
            self.keep_buffers(&buffers, items)?;
            match self
                .arenas
                .iter_mut()
                .find(|binding| binding.arena.same_as(&used.arena))
            {
                Some(binding) => binding.generation = binding.generation.min(used.generation),
                None => self.arenas.push(Binding {
                    arena: used.arena.clone(),
                    generation: used.generation,
                }),
            }
        }
        Ok(())
    }
}
