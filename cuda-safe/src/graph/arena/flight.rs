//! What ties an executable graph to the arenas its addresses came from: one event recorded
//! after each of its launches (so an arena can tell whether a launch may still run), and the
//! generation of each arena the graph was captured in (so a launch after the arena was reset,
//! which gave the graph's memory to others, is refused).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
/// keep it (an `Arc`) until its last launch has finished, even after the executable is gone.
#[derive(Debug)]
pub(super) struct Flight {
    event: Event,
}

impl Flight {
    /// Whether work before the event's last record may still run.
    pub(super) fn in_flight(&self) -> Result<bool> {
        Ok(!self.event.is_done()?)
    }
}

/// What an executable made from a graph captured in arenas keeps: its flight, and for each
/// arena its generation counter and the generation the graph was captured in.
#[derive(Debug)]
pub(in crate::graph) struct ArenaUse {
    flight: Arc<Flight>,
    generations: Vec<(Arc<AtomicU64>, u64)>,
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
                .push((binding.arena.generation_counter(), binding.generation));
        }
    }

    /// Refuses a launch when an arena was reset since the graph was captured.
    #[inline]
    pub(in crate::graph) fn check(&self) -> Result<()> {
        for (counter, generation) in &self.generations {
            if counter.load(Ordering::Acquire) != *generation {
                return Err(Error::invalid_argument(
                    "the graph arena this graph was captured in was reset since: its memory \
                     may belong to others now; capture the work again and update the \
                     executable from the new graph",
                ));
            }
        }
        Ok(())
    }

    /// After a launch on `stream`: records the flight's event there. Should the record fail,
    /// waits for the stream instead, so that no arena can be reset under the launch.
    #[inline]
    pub(in crate::graph) fn launched(&self, stream: &Stream) -> Result<()> {
        let recorded = self.flight.event.record(stream);
        if recorded.is_err() {
            stream.drain()?;
        }
        recorded
    }
}
