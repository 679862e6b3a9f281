//! Downloads into the caller's pinned memory ([`BufferExt::download_into`](crate::BufferExt::download_into)):
//! one copy, straight from the buffer into a [`PinnedBlock`] the future owns until the copy has
//! finished, with no staging block and no second copy on the host.
//!
//! The future is a [`Completion`] keeping the block: dropped in flight, or after a waker of the
//! user's panicked, the block goes to the reactor and is freed only once the copy is done, as
//! every kept value is.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytemuck::Pod;

use crate::futures::Completion;
use crate::shared::Reactor;
use crate::waiter::{Report, Waiter, refuse_capturing};
use cuda_safe::{Buffer, Error, PinnedBlock, Result, assert_send_sync};

/// A future that resolves to a buffer's contents in the caller's pinned memory
/// ([`BufferExt::download_into`](crate::BufferExt::download_into)): the [`PinnedBlock`] it was
/// given, handed back as [`PinnedValues`] once the copy into it has finished.
///
/// Errors and dropping are as for [`Completion`]: dropped before it resolves, it leaves the
/// block to the reactor, which frees it once the copy has finished. A download refused before
/// any copy was queued (bad input, a capturing stream) resolves to its error and hands the
/// block back through [`into_block`](Self::into_block). `Send`, `Sync` and `Unpin`.
#[must_use = "the copy runs anyway; await the download to get the block back"]
pub struct PinnedDownload<T: Pod> {
    state: State,
    len: usize,
    _elements: PhantomData<fn() -> T>,
}

/// A download queued (or with nothing to copy), or refused with its block untouched.
#[derive(Debug)]
enum State {
    Queued(Completion<PinnedBlock>),
    Refused { error: Error, block: PinnedBlock },
}

/// A buffer's contents as `T`s at the start of the caller's [`PinnedBlock`], readable and
/// writable as a slice (`Deref<Target = [T]>`); [`into_block`](Self::into_block) hands the
/// block back for the next download.
pub struct PinnedValues<T: Pod> {
    block: PinnedBlock,
    len: usize,
    _elements: PhantomData<fn() -> T>,
}

/// Queues the copy of `buffer` into `into`; the element count. Nothing is queued on an error.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when the buffer is not a whole number of `T`s, the block is
/// smaller than the buffer or not aligned for `T`, or the buffer's stream is being captured;
/// the driver's error.
pub(super) fn start<T: Pod>(buffer: &Buffer, into: &PinnedBlock) -> Result<usize> {
    let source = buffer.as_slice::<T>()?;
    if into.len() < buffer.len() {
        return Err(Error::invalid_argument(format!(
            "a download of {} bytes into a pinned block of {} bytes",
            buffer.len(),
            into.len()
        )));
    }
    if !into.as_ptr().cast::<T>().is_aligned() {
        return Err(Error::invalid_argument(format!(
            "a pinned block is not aligned for {}",
            std::any::type_name::<T>()
        )));
    }
    let len = source.len();
    if len == 0 {
        return Ok(0);
    }
    refuse_capturing(buffer.stream())?;
    // SAFETY: the block holds at least the buffer's bytes (checked), aligned for `T` (checked)
    // and initialized (zeroed when made); the download owns it, and nothing of the host's
    // touches it until the copy has finished.
    let target = unsafe { std::slice::from_raw_parts_mut(into.as_ptr().cast::<T>(), len) };
    // SAFETY: as above: the block stays alive and untouched until the stream has passed the
    // copy, which the download's event, recorded right after it, tells (the future keeps the
    // block, or the reactor once the future is dropped).
    unsafe { source.copy_to_host_async(target) }?;
    Ok(len)
}

impl<T: Pod> PinnedDownload<T> {
    /// The download of `buffer` into `into`, queued now.
    pub(super) fn new(buffer: &Buffer, into: PinnedBlock) -> Self {
        let reactor = Reactor::shared();
        let (waiter, len) = match start::<T>(buffer, &into) {
            Ok(0) => (Waiter::ready(reactor), 0),
            Ok(len) => {
                let report = Report::default();
                let stream = buffer.stream();
                (Waiter::on_stream(reactor, stream, report, None, true), len)
            }
            Err(error) => {
                return Self {
                    state: State::Refused { error, block: into },
                    len: 0,
                    _elements: PhantomData,
                };
            }
        };
        Self {
            state: State::Queued(Completion::new(waiter, into)),
            len,
            _elements: PhantomData,
        }
    }

    /// The caller's block back, untouched, when the download was refused before any copy was
    /// queued (the future resolves to that error); `None` for a queued download (dropped, it
    /// leaves the block to the reactor until the copy has finished).
    pub fn into_block(self) -> Option<PinnedBlock> {
        match self.state {
            State::Refused { block, .. } => Some(block),
            State::Queued(_) => None,
        }
    }

    /// How many elements the download brings.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the download brings no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: Pod> Future for PinnedDownload<T> {
    type Output = Result<PinnedValues<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let len = this.len;
        match &mut this.state {
            State::Refused { error, .. } => Poll::Ready(Err(error.clone())),
            State::Queued(completion) => {
                Pin::new(completion).poll(cx).map_ok(|block| PinnedValues {
                    block,
                    len,
                    _elements: PhantomData,
                })
            }
        }
    }
}

impl<T: Pod> PinnedValues<T> {
    /// The block, for the next download (its contents stay as they are).
    pub fn into_block(self) -> PinnedBlock {
        self.block
    }
}

impl<T: Pod> Deref for PinnedValues<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the block holds `len` aligned, initialized `T`s (checked when the download
        // was made, written by its finished copy); no GPU work of the download is left on it,
        // and the block is owned here.
        unsafe {
            std::slice::from_raw_parts(self.block.as_ptr().cast::<T>().cast_const(), self.len)
        }
    }
}

impl<T: Pod> DerefMut for PinnedValues<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the view exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.block.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Pod> fmt::Debug for PinnedDownload<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedDownload")
            .field("state", &self.state)
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for PinnedValues<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

assert_send_sync!(PinnedDownload<f32>, PinnedValues<f32>);
