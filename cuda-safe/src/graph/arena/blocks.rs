//! The arena's bookkeeping, without the driver: which byte ranges of the reservation are free,
//! live (a buffer owns them) or held for captured graphs, and the figures reported from them.
//!
//! Ranges are offsets from the reservation's base, [`ALIGNMENT`]-aligned. The choices are
//! deterministic: the same allocations and frees from the same state give the same offsets,
//! which is what makes a second capture of the same work land on the same addresses.
//!
//! A range remembers the capture it was allocated in (0: none). Freed, it goes:
//! - back to the free ranges, when it was allocated outside any capture and is freed outside
//!   one (the caller first waits for the freeing stream, as a synchronous resource does);
//! - to the ranges *parked* for the capture and stream it was allocated in and is freed on,
//!   when both are the same capture: a later allocation of that capture on that stream reuses
//!   it (the graph orders the two, as the stream would);
//! - otherwise to the ranges *held* for graphs: a graph replays what it recorded there, so
//!   nothing else may have it until [`Blocks::reset`].

use std::collections::{BTreeMap, HashMap};

/// The alignment of every range: the 256 bytes CUDA guarantees for `cuMemAlloc`, which
/// libraries' workspaces and vectorised kernels rely on.
pub(super) const ALIGNMENT: u64 = 256;

/// A live range: its length and the capture it was allocated in (0: none).
#[derive(Debug, Clone, Copy)]
struct Live {
    len: u64,
    capture: u64,
}

/// Where a freed range goes (see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Destination {
    /// Free again, once the freeing stream has drained.
    Free,
    /// Parked for reuse by the same capture on the same stream.
    Parked,
    /// Held for the graphs that recorded it, until a reset.
    Held,
}

/// The figures [`Blocks`] keeps, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Figures {
    pub(super) in_use: u64,
    pub(super) held: u64,
    pub(super) high_water: u64,
}

/// The ranges of one reservation of `capacity` bytes.
#[derive(Debug)]
pub(super) struct Blocks {
    capacity: u64,
    /// Free ranges by offset, never two adjacent.
    free: BTreeMap<u64, u64>,
    live: HashMap<u64, Live>,
    /// Ranges parked per (stream, capture).
    parked: HashMap<(usize, u64), Vec<(u64, u64)>>,
    held: Vec<(u64, u64)>,
    figures: Figures,
    /// The high-water mark before the last allocation, for [`undo`](Self::undo).
    high_water_before: u64,
}

/// `size` rounded up to [`ALIGNMENT`], or `None` on overflow.
pub(super) fn aligned(size: u64) -> Option<u64> {
    size.checked_add(ALIGNMENT - 1)
        .map(|end| end & !(ALIGNMENT - 1))
}

impl Blocks {
    /// Every byte of `capacity` free.
    pub(super) fn new(capacity: u64) -> Self {
        let mut free = BTreeMap::new();
        let capacity = capacity & !(ALIGNMENT - 1);
        if capacity > 0 {
            free.insert(0, capacity);
        }
        Self {
            capacity,
            free,
            live: HashMap::new(),
            parked: HashMap::new(),
            held: Vec::new(),
            figures: Figures::default(),
            high_water_before: 0,
        }
    }

    /// The bytes the ranges cover.
    pub(super) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The figures now.
    pub(super) fn figures(&self) -> Figures {
        self.figures
    }

    /// A range of at least `size` bytes (rounded up to the alignment) for an allocation on
    /// `stream` in `capture` (0: none): the offset and the length taken, or `None` when no
    /// range is large enough.
    pub(super) fn allocate(
        &mut self,
        size: u64,
        stream: usize,
        capture: u64,
    ) -> Option<(u64, u64)> {
        let len = aligned(size.max(1))?;
        let offset = self
            .take_parked(len, stream, capture)
            .or_else(|| self.take_free(len))?;
        self.live.insert(offset, Live { len, capture });
        self.figures.in_use += len;
        let used = self.figures.in_use + self.figures.held;
        self.high_water_before = self.figures.high_water;
        self.figures.high_water = self.figures.high_water.max(used);
        Some((offset, len))
    }

    /// Where the live range at `offset` would go if freed on `stream` now, while the stream
    /// captures `capture` (0: none); `None` for an offset that is not live.
    pub(super) fn destination(&self, offset: u64, capture: u64) -> Option<Destination> {
        let live = self.live.get(&offset)?;
        Some(match (live.capture, capture) {
            (0, 0) => Destination::Free,
            (made, now) if made == now => Destination::Parked,
            _ => Destination::Held,
        })
    }

    /// Frees the live range at `offset` on `stream`, in `capture` (0: none), as
    /// [`destination`](Self::destination) says; `None` for an offset that is not live.
    pub(super) fn free(&mut self, offset: u64, stream: usize, capture: u64) -> Option<Destination> {
        let destination = self.destination(offset, capture)?;
        let live = self.live.remove(&offset)?;
        self.figures.in_use -= live.len;
        match destination {
            Destination::Free => self.insert_free(offset, live.len),
            Destination::Parked => {
                self.figures.held += live.len;
                self.parked
                    .entry((stream, capture))
                    .or_default()
                    .push((offset, live.len));
            }
            Destination::Held => {
                self.figures.held += live.len;
                self.held.push((offset, live.len));
            }
        }
        Some(destination)
    }

    /// Holds the live range at `offset` for graphs until a reset, whatever it was (a free
    /// whose wait for its stream failed: the stream may still use it).
    pub(super) fn hold(&mut self, offset: u64) {
        if let Some(live) = self.live.remove(&offset) {
            self.figures.in_use -= live.len;
            self.figures.held += live.len;
            self.held.push((offset, live.len));
        }
    }

    /// Gives the range at `offset`, the last one allocated, back at once, as if never
    /// allocated (an allocation whose mapping failed).
    pub(super) fn undo(&mut self, offset: u64) {
        if let Some(live) = self.live.remove(&offset) {
            self.figures.in_use -= live.len;
            self.figures.high_water = self.high_water_before;
            self.insert_free(offset, live.len);
        }
    }

    /// Frees every held and parked range; live ones stay. The high-water mark stays too.
    pub(super) fn reset(&mut self) {
        let parked: Vec<(u64, u64)> = self.parked.drain().flat_map(|(_, list)| list).collect();
        for (offset, len) in std::mem::take(&mut self.held).into_iter().chain(parked) {
            self.insert_free(offset, len);
        }
        self.figures.held = 0;
    }

    /// The best parked range for `len` bytes on `stream` in `capture` (the smallest that
    /// fits, the lowest first), split when larger.
    fn take_parked(&mut self, len: u64, stream: usize, capture: u64) -> Option<u64> {
        if capture == 0 {
            return None;
        }
        let list = self.parked.get_mut(&(stream, capture))?;
        let (index, &(offset, size)) = list
            .iter()
            .enumerate()
            .filter(|(_, (_, size))| *size >= len)
            .min_by_key(|(_, (offset, size))| (*size, *offset))?;
        if size > len {
            list[index] = (offset + len, size - len);
        } else {
            list.swap_remove(index);
        }
        self.figures.held -= len;
        Some(offset)
    }

    /// The lowest free range of at least `len` bytes, split when larger.
    fn take_free(&mut self, len: u64) -> Option<u64> {
        let (&offset, &size) = self.free.iter().find(|(_, size)| **size >= len)?;
        self.free.remove(&offset);
        if size > len {
            self.free.insert(offset + len, size - len);
        }
        Some(offset)
    }

    /// Makes `[offset, offset + len)` free, merged with free neighbours.
    fn insert_free(&mut self, mut offset: u64, mut len: u64) {
        if let Some((&before, &size)) = self.free.range(..offset).next_back()
            && before + size == offset
        {
            self.free.remove(&before);
            offset = before;
            len += size;
        }
        if let Some(&after) = self.free.get(&(offset + len)) {
            self.free.remove(&(offset + len));
            len += after;
        }
        self.free.insert(offset, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: usize = 1;
    const OTHER: usize = 2;

    #[test]
    fn sizes_are_aligned_and_the_lowest_range_is_taken() {
        let mut blocks = Blocks::new(16 * ALIGNMENT);
        assert_eq!(blocks.allocate(1, STREAM, 0), Some((0, ALIGNMENT)));
        assert_eq!(
            blocks.allocate(ALIGNMENT + 1, STREAM, 0),
            Some((ALIGNMENT, 2 * ALIGNMENT))
        );
        assert_eq!(blocks.figures().in_use, 3 * ALIGNMENT);
        assert_eq!(blocks.allocate(16 * ALIGNMENT, STREAM, 0), None);
        assert_eq!(aligned(u64::MAX), None);
    }

    #[test]
    fn eager_frees_merge_with_their_neighbours() {
        let mut blocks = Blocks::new(4 * ALIGNMENT);
        let ranges: Vec<u64> = (0..4)
            .map(|_| blocks.allocate(ALIGNMENT, STREAM, 0).unwrap().0)
            .collect();
        for offset in [ranges[1], ranges[3], ranges[2], ranges[0]] {
            assert_eq!(blocks.free(offset, STREAM, 0), Some(Destination::Free));
        }
        assert_eq!(blocks.free.len(), 1, "{:?}", blocks.free);
        assert_eq!(
            blocks.allocate(4 * ALIGNMENT, STREAM, 0),
            Some((0, 4 * ALIGNMENT))
        );
        assert_eq!(blocks.free(ranges[0] + 1, STREAM, 0), None);
    }

    #[test]
    fn a_capture_reuses_its_own_frees_on_the_same_stream_only() {
        let mut blocks = Blocks::new(16 * ALIGNMENT);
        let (first, _) = blocks.allocate(2 * ALIGNMENT, STREAM, 7).unwrap();
        assert_eq!(blocks.free(first, STREAM, 7), Some(Destination::Parked));
        assert_eq!(blocks.figures().held, 2 * ALIGNMENT);
        // Another stream of the same capture, or another capture, gets new memory.
        assert_ne!(blocks.allocate(ALIGNMENT, OTHER, 7).unwrap().0, first);
        assert_ne!(blocks.allocate(ALIGNMENT, STREAM, 8).unwrap().0, first);
        // The same stream and capture reuses it, split.
        assert_eq!(
            blocks.allocate(ALIGNMENT, STREAM, 7),
            Some((first, ALIGNMENT))
        );
        assert_eq!(
            blocks.allocate(ALIGNMENT, STREAM, 7),
            Some((first + ALIGNMENT, ALIGNMENT))
        );
        assert_eq!(blocks.figures().held, 0);
    }

    #[test]
    fn what_a_graph_recorded_is_held_until_a_reset() {
        let mut blocks = Blocks::new(8 * ALIGNMENT);
        let (captured, _) = blocks.allocate(ALIGNMENT, STREAM, 3).unwrap();
        let (eager, _) = blocks.allocate(ALIGNMENT, STREAM, 0).unwrap();
        // Freed after its capture ended, or freed inside a capture it was not made in.
        assert_eq!(blocks.free(captured, STREAM, 0), Some(Destination::Held));
        assert_eq!(blocks.free(eager, STREAM, 4), Some(Destination::Held));
        assert_eq!(
            blocks.allocate(ALIGNMENT, STREAM, 0).unwrap().0,
            2 * ALIGNMENT
        );
        let figures = blocks.figures();
        assert_eq!((figures.in_use, figures.held), (ALIGNMENT, 2 * ALIGNMENT));
        assert_eq!(figures.high_water, 3 * ALIGNMENT);
        blocks.reset();
        assert_eq!(blocks.figures().held, 0);
        assert_eq!(blocks.figures().high_water, 3 * ALIGNMENT);
        assert_eq!(
            blocks.allocate(2 * ALIGNMENT, STREAM, 0),
            Some((0, 2 * ALIGNMENT))
        );
    }

    #[test]
    fn the_same_work_after_a_reset_lands_on_the_same_offsets() {
        let mut blocks = Blocks::new(64 * ALIGNMENT);
        let input = blocks.allocate(3 * ALIGNMENT, STREAM, 0).unwrap().0;
        // Odd sizes are freed inside the capture; the others after it (outputs the graph
        // wrote, dropped later).
        let run = |blocks: &mut Blocks, capture: u64| {
            let mut offsets = Vec::new();
            for size in [5, 1, 2, 7, 3] {
                let (offset, _) = blocks.allocate(size * ALIGNMENT, STREAM, capture).unwrap();
                offsets.push(offset);
                if size % 2 == 1 {
                    blocks.free(offset, STREAM, capture);
                }
            }
            for (&offset, size) in offsets.iter().zip([5, 1, 2, 7, 3]) {
                if size % 2 == 0 {
                    assert_eq!(blocks.free(offset, STREAM, 0), Some(Destination::Held));
                }
            }
            offsets
        };
        let first = run(&mut blocks, 10);
        blocks.reset();
        let second = run(&mut blocks, 11);
        assert_eq!(first, second);
        assert!(!first.contains(&input));
    }

    #[test]
    fn an_undone_allocation_leaves_nothing() {
        let mut blocks = Blocks::new(2 * ALIGNMENT);
        let (offset, _) = blocks.allocate(ALIGNMENT, STREAM, 5).unwrap();
        blocks.undo(offset);
        assert_eq!(blocks.figures(), Figures::default());
        assert_eq!(
            blocks.allocate(2 * ALIGNMENT, STREAM, 0),
            Some((0, 2 * ALIGNMENT))
        );
    }
}
