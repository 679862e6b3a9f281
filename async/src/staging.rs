//! Pinned staging memory for the asynchronous copies between the host and a buffer: a copy
//! from pageable memory makes the driver wait for it, so downloads and uploads go through
//! page-locked blocks (`cuMemHostAlloc`), kept for reuse by the reactor.
//!
//! Blocks come in powers of two from 4 KiB. A block in use belongs to one future (or, once the
//! future is dropped, to the reactor until the copy has finished): it goes back to the cache
//! only when the GPU is done with it, so a block is never handed to a second copy while the
//! first may still write it. At most [`MAX_IDLE_BYTES`] of idle blocks are kept; a block that
//! would exceed it is freed when given back.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::shared::{Core, lock};
use cuda_safe::Context;
use cuda_safe::Stream;
use cuda_safe::handle::log_drop_error;
use cuda_safe::{Error, Result, cu};
use cuda_sys::CU_MEMHOSTALLOC_PORTABLE;

/// The smallest block.
const MIN_BLOCK: usize = 4096;

/// Idle staging memory kept for reuse, at most (64 MiB).
pub(super) const MAX_IDLE_BYTES: usize = 64 << 20;

/// One page-locked block, with the context that allocated it (kept alive: the block is freed
/// with its context).
struct Block {
    ptr: NonNull<u8>,
    bytes: usize,
    context: Context,
}

// SAFETY: the block is plain host memory owned by whoever holds it, which alone reads or
// writes it.
unsafe impl Send for Block {}
// SAFETY: a shared block only gives out its address; its memory is touched through the owner.
unsafe impl Sync for Block {}

/// The idle blocks, and what is in use.
#[derive(Default)]
pub(super) struct StagingCache {
    idle: Vec<Block>,
    idle_bytes: usize,
    in_use_bytes: usize,
}

impl StagingCache {
    /// Bytes in use and bytes idle.
    pub(super) fn bytes(&self) -> (usize, usize) {
        (self.in_use_bytes, self.idle_bytes)
    }
}

impl Drop for StagingCache {
    fn drop(&mut self) {
        for block in self.idle.drain(..) {
            free(block);
        }
    }
}

/// A staging block in use: given back to the reactor's cache when dropped.
pub(super) struct Staging {
    block: Option<Block>,
    core: Arc<Core>,
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
    pub(super) fn take(core: &Arc<Core>, bytes: usize, stream: &Stream) -> Result<Self> {
        let size = bytes
            .max(MIN_BLOCK)
            .checked_next_power_of_two()
            .ok_or_else(|| {
                Error::invalid_argument(format!("{bytes} bytes cannot be staged in one block"))
            })?;
        let reused = {
            let mut cache = lock(&core.staging);
            let found = cache.idle.iter().position(|block| block.bytes == size);
            let block = found.map(|index| cache.idle.swap_remove(index));
            if block.is_some() {
                cache.idle_bytes -= size;
            }
            cache.in_use_bytes += size;
            block
        };
        let block = match reused {
            Some(block) => block,
            None => match primary_of(stream).and_then(|context| allocate(size, &context)) {
                Ok(block) => block,
                Err(error) => {
                    lock(&core.staging).in_use_bytes -= size;
                    return Err(error);
                }
            },
        };
        Ok(Self {
            block: Some(block),
            core: core.clone(),
        })
    }

    /// The block's start.
    pub(super) fn as_ptr(&self) -> *mut u8 {
        self.block
            .as_ref()
            .map_or(std::ptr::null_mut(), |block| block.ptr.as_ptr())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let Some(block) = self.block.take() else {
            return;
        };
        let surplus = {
            let mut cache = lock(&self.core.staging);
            cache.in_use_bytes -= block.bytes;
            if cache.idle_bytes + block.bytes <= MAX_IDLE_BYTES {
                cache.idle_bytes += block.bytes;
                cache.idle.push(block);
                None
            } else {
                Some(block)
            }
        };
        if let Some(block) = surplus {
            free(block);
        }
    }
}

/// The primary context of `stream`'s device: the one its buffers keep alive, retained only
/// when nothing holds it.
fn primary_of(stream: &Stream) -> Result<Context> {
    let device = stream.device();
    Context::live_primary(device).map_or_else(|| device.context(), Ok)
}

/// A new page-locked block of `bytes` bytes in `context` (portable: usable from every
/// context).
#[doc = cuda_sys::api_doc!(cuMemHostAlloc)]
#[doc(alias = "cuMemHostAlloc")]
fn allocate(bytes: usize, context: &Context) -> Result<Block> {
    let _current = context.scoped()?;
    let mut ptr: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the context is current.
    unsafe {
        cu!(
            context.driver(),
            cuMemHostAlloc(&mut ptr, bytes, CU_MEMHOSTALLOC_PORTABLE)
        )
    }?;
    let ptr = NonNull::new(ptr.cast::<u8>())
        .ok_or_else(|| Error::unexpected("cuMemHostAlloc", "a null block"))?;
    // SAFETY: `bytes` bytes of host memory at `ptr`, owned here: zeroed once, so that the
    // block's elements are always initialized.
    unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
    Ok(Block {
        ptr,
        bytes,
        context: context.clone(),
    })
}

/// Frees an idle block (no copy uses it any more), logging a failure.
#[doc = cuda_sys::api_doc!(cuMemFreeHost)]
#[doc(alias = "cuMemFreeHost")]
fn free(block: Block) {
    let freed = block.context.scoped().and_then(|_current| {
        // SAFETY: the block came from cuMemHostAlloc in this context, which is alive, and no
        // copy uses it.
        unsafe {
            cu!(
                block.context.driver(),
                cuMemFreeHost(block.ptr.as_ptr().cast())
            )
        }
    });
    if let Err(error) = freed {
        log_drop_error("pinned staging block", &error);
    }
}
