//! Pinned staging memory for the asynchronous copies between the host and a buffer: a copy
//! from pageable memory makes the driver wait for it, so downloads and uploads go through
//! page-locked blocks (the core's [`PinnedBlock`]s), kept for reuse by the reactor.
//!
//! Blocks come in powers of two from 4 KiB up to [`MAX_IDLE_BYTES`], and past it in multiples
//! of [`LARGE_GRANULE`] (2 MiB): a copy of 2.1 GiB pins about that much, not 4 GiB. A block in use belongs to one future (or, once the
//! future is dropped, to the reactor until the copy has finished): it goes back to the cache
//! only when the GPU is done with it, so a block is never handed to a second copy while the
//! first may still write it. At most [`MAX_IDLE_BYTES`] of idle blocks are kept; a block that
//! would exceed it is freed when given back. A block larger than that limit is kept apart, one
//! at most (the largest given back): the next copy that large reuses it rather than pinning
//! and unpinning its memory at each use, so the cache holds at most the limit plus the largest
//! block the program staged. Blocks free themselves (through
//! [`Owned`](cuda_safe::handle::Owned)), and a block in use goes back through it too.

use crate::shared::{Core, lock};
use cuda_safe::Stream;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Error, Result};
use cuda_safe::{PinnedBlock, PinnedMemoryResource};

/// The smallest block.
const MIN_BLOCK: usize = 4096;

/// Idle staging memory kept for reuse, at most (64 MiB).
pub(super) const MAX_IDLE_BYTES: usize = 64 << 20;

/// What a block past [`MAX_IDLE_BYTES`] is rounded up to a multiple of (2 MiB).
pub(super) const LARGE_GRANULE: usize = 2 << 20;

/// The size of the block that stages `bytes` bytes: a power of two from [`MIN_BLOCK`] up to
/// [`MAX_IDLE_BYTES`], a multiple of [`LARGE_GRANULE`] past it; `None` past `usize`.
fn block_size(bytes: usize) -> Option<usize> {
    let size = bytes.max(MIN_BLOCK).checked_next_power_of_two();
    match size {
        Some(size) if size <= MAX_IDLE_BYTES => Some(size),
        _ => bytes.checked_next_multiple_of(LARGE_GRANULE),
    }
}

/// The idle blocks, and what is in use.
#[derive(Default)]
pub(super) struct StagingCache {
    /// Idle blocks of at most [`MAX_IDLE_BYTES`], [`idle_bytes`](Self::idle_bytes) in all.
    idle: Vec<PinnedBlock>,
    idle_bytes: usize,
    /// The idle block larger than [`MAX_IDLE_BYTES`], if one is kept.
    large: Option<PinnedBlock>,
    in_use_bytes: usize,
}

impl StagingCache {
    /// Bytes in use and bytes idle.
    pub(super) fn bytes(&self) -> (usize, usize) {
        let large = self.large.as_ref().map_or(0, PinnedBlock::len);
        (self.in_use_bytes, self.idle_bytes + large)
    }

    /// Takes the idle blocks out, for the reactor thread to free as it ends.
    pub(super) fn drain_idle(&mut self) -> Vec<PinnedBlock> {
        self.idle_bytes = 0;
        let mut idle = std::mem::take(&mut self.idle);
        idle.extend(self.large.take());
        idle
    }

    /// An idle block for `size` bytes (a [`block_size`]), marked in use: one of exactly that
    /// size, or for a size past [`MAX_IDLE_BYTES`], the large block if it is big enough.
    fn lend(&mut self, size: usize) -> Option<PinnedBlock> {
        let block = if size > MAX_IDLE_BYTES {
            self.large.take_if(|large| large.len() >= size)
        } else {
            let found = self.idle.iter().position(|block| block.len() == size);
            let block = found.map(|index| self.idle.swap_remove(index));
            if block.is_some() {
                self.idle_bytes -= size;
            }
            block
        }?;
        self.in_use_bytes += block.len();
        Some(block)
    }

    /// Keeps `block`, given back, for reuse; what does not fit is returned, to be freed.
    fn keep(&mut self, block: PinnedBlock) -> Option<PinnedBlock> {
        self.in_use_bytes -= block.len();
        if block.len() > MAX_IDLE_BYTES {
            let (kept, surplus) = match self.large.take() {
                Some(large) if large.len() > block.len() => (large, Some(block)),
                smaller => (block, smaller),
            };
            self.large = Some(kept);
            return surplus;
        }
        if self.idle_bytes + block.len() <= MAX_IDLE_BYTES {
            self.idle_bytes += block.len();
            self.idle.push(block);
            None
        } else {
            Some(block)
        }
    }
}

/// A staging block in use: given back to the reactor's cache when dropped.
pub(super) struct Staging {
    lease: Owned<Lease>,
}

/// A block lent out of the cache, and the cache it goes back to.
struct Lease {
    block: Option<PinnedBlock>,
    core: &'static Core,
}

impl Staging {
    /// A block of at least `bytes` bytes (more than 0) for a copy on `stream`: idle, or new in
    /// the primary context of the stream's device (the memory is portable, and a green
    /// context's streams then keep no green context alive through the cache).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a size past the largest block; the driver's error from
    /// `cuMemHostAlloc` (out of memory included).
    pub(super) fn take(core: &'static Core, bytes: usize, stream: &Stream) -> Result<Self> {
        let size = block_size(bytes).ok_or_else(|| {
            Error::invalid_argument(format!("{bytes} bytes cannot be staged in one block"))
        })?;
        let reused = lock(&core.staging).lend(size);
        let block = match reused {
            Some(block) => block,
            None => {
                let block = PinnedMemoryResource::new(stream.device())
                    .and_then(|pinned| pinned.allocate_block(size))?;
                lock(&core.staging).in_use_bytes += size;
                block
            }
        };
        Ok(Self {
            lease: Owned::new(Lease {
                block: Some(block),
                core,
            }),
        })
    }

    /// The block's start.
    pub(super) fn as_ptr(&self) -> *mut u8 {
        self.lease
            .block
            .as_ref()
            .map_or(std::ptr::null_mut(), PinnedBlock::as_ptr)
    }
}

impl Release for Lease {
    const WHAT: &'static str = "pinned staging block";

    /// Gives the block back to the cache (the GPU is done with it), or frees it when the
    /// cache is full.
    fn release(&mut self) -> Result<()> {
        let Some(block) = self.block.take() else {
            return Ok(());
        };
        let surplus = lock(&self.core.staging).keep(block);
        surplus.map_or(Ok(()), PinnedBlock::close)
    }
}

#[cfg(test)]
mod tests {
    use super::{LARGE_GRANULE, MAX_IDLE_BYTES, MIN_BLOCK, block_size};

    #[test]
    fn blocks_are_powers_of_two_then_multiples_of_the_granule() {
        assert_eq!(block_size(1), Some(MIN_BLOCK));
        assert_eq!(block_size(MIN_BLOCK + 1), Some(2 * MIN_BLOCK));
        assert_eq!(block_size(MAX_IDLE_BYTES), Some(MAX_IDLE_BYTES));
        assert_eq!(
            block_size(MAX_IDLE_BYTES + 1),
            Some(MAX_IDLE_BYTES + LARGE_GRANULE)
        );
        let large = 33 * MAX_IDLE_BYTES + 1;
        assert_eq!(block_size(large), Some(33 * MAX_IDLE_BYTES + LARGE_GRANULE));
        assert_eq!(block_size(usize::MAX), None);
    }
}
