//! What ties an executable graph to the arenas its addresses came from: one event recorded
//! after each of its launches (so an arena can tell whether a launch may still run), each
//! launch passing the arenas' launch gates from its check until its event is recorded (so a
//! reset cannot slip in between), and the generation of each arena the graph was captured in
//! (so a launch after the arena was reset, which gave the graph's memory to others, is
//! refused).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::GraphArena;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::{Event, EventOptions};
use crate::stream::Stream;

/// An arena a graph's work was captured in, and the arena's generation then.
#[derive(Debug, Clone)]
pub(in crate::graph) struct Binding {
    pub(super) arena: GraphArena,
    pub(super) generation: u64,
}

/// The event recorded after each launch of one executable; the arenas it is registered with
/// keep it (an `Arc`) until its last launch has finished and its executable is gone.
#[derive(Debug)]
pub(super) struct Flight {
    event: Event,
    /// Set when a launch could neither be tracked by the event nor waited for: it may still
    /// run, whatever the event says, until a later launch's record succeeds (launches of one
    /// executable run in order).
    untracked: AtomicBool,
    /// Whether the executable lives (it may launch again).
    exec_alive: AtomicBool,
}

impl Flight {
    /// Whether work before the event's last record may still run.
    pub(super) fn in_flight(&self) -> Result<bool> {
        if self.untracked.load(Ordering::Acquire) {
            return Ok(true);
        }
        Ok(!self.event.is_done()?)
    }

    /// Whether its executable lives: an arena keeps the flight while it does (it may launch
    /// again) or while the flight may still run.
    pub(super) fn exec_alive(&self) -> bool {
        self.exec_alive.load(Ordering::Acquire)
    }
}

/// What an executable made from a graph captured in arenas keeps: its flight, and for each
/// arena the generation the graph was captured in.
#[derive(Debug)]
pub(in crate::graph) struct ArenaUse {
    flight: Arc<Flight>,
    generations: Vec<(GraphArena, u64)>,
}

/// A launch passing the gates of its executable's arenas; it leaves them when dropped.
#[must_use = "the launch leaves the arenas' gates when this is dropped"]
pub(in crate::graph) struct Launching<'a> {
    arenas: &'a ArenaUse,
}

impl Drop for Launching<'_> {
    fn drop(&mut self) {
        for (arena, _) in &self.arenas.generations {
            arena.inner.gate.leave();
        }
    }
}

impl ArenaUse {
    /// The use of `bindings` (a graph's) by a new executable in `context`: a new event,
    /// registered with each arena. `None` for a graph captured in no arena.
    pub(in crate::graph) fn new(context: &Context, bindings: &[Binding]) -> Result<Option<Self>> {
        if bindings.is_empty() {
            return Ok(None);
        }
        let flight = Arc::new(Flight {
            event: Event::new(context, EventOptions::default())?,
            untracked: AtomicBool::new(false),
            exec_alive: AtomicBool::new(true),
        });
        let mut made = Self {
            flight,
            generations: Vec::new(),
        };
        made.rebind(bindings);
        Ok(Some(made))
    }

    /// After an update from a graph of `bindings`: the executable now replays that graph's
    /// addresses, so its launches answer to those arenas (registered with each).
    pub(in crate::graph) fn rebind(&mut self, bindings: &[Binding]) {
        self.generations.clear();
        for binding in bindings {
            binding.arena.register(&self.flight);
            self.generations
                .push((binding.arena.clone(), binding.generation));
        }
    }

    /// Enters every arena's launch gate, then refuses a launch when an arena was reset since
    /// the graph was captured. Keep what it returns until the launch's event is recorded: no
    /// arena resets meanwhile.
    #[inline]
    pub(in crate::graph) fn check(&self) -> Result<Launching<'_>> {
        for (arena, _) in &self.generations {
            arena.inner.gate.enter();
        }
        let launching = Launching { arenas: self };
        for (arena, generation) in &self.generations {
            if arena.inner.generation.load(Ordering::Acquire) != *generation {
                return Err(Error::invalid_argument(
                    "the graph arena this graph was captured in was reset since: its memory \
                     may belong to others now; capture the work again and update the \
                     executable from the new graph",
                ));
            }
        }
        Ok(launching)
    }

    /// After a launch on `stream`: records the flight's event there. Should the record fail,
    /// waits for the stream instead, so that no arena can be reset under the launch; should
    /// that fail too, the flight counts as in flight until a later record succeeds.
    #[inline]
    pub(in crate::graph) fn launched(&self, stream: &Stream) -> Result<()> {
        let recorded = self.flight.event.record(stream);
        let tracked = match &recorded {
            Ok(()) => Ok(()),
            Err(_) => stream.drain(),
        };
        self.flight
            .untracked
            .store(tracked.is_err(), Ordering::Release);
        tracked?;
        recorded
    }
}

impl Drop for ArenaUse {
    fn drop(&mut self) {
        self.flight.exec_alive.store(false, Ordering::Release);
    }
}
