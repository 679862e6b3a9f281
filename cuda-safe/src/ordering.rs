//! Every rule that orders work across streams, in one place.
//!
//! - A stream waits for another through the other's marker event ([`wait_for`]): recorded at
//!   the other's current end, waited on by the first. One untimed event per stream is made on
//!   first use and re-recorded after (re-recording only makes a waiter that has not waited yet
//!   wait for a later point, which is still correct).
//! - A buffer moved to another stream ([`hand_over`]) waits the same way, unless its old stream
//!   has finished everything queued on it, when no wait is queued at all.
//! - A copy between buffers on different streams is queued on the destination's stream after
//!   the source's queued work, and the source's later work (its free) after the copy.
//! - A launch whose buffers live on other streams waits for their queued work and makes their
//!   later work wait for it; when every buffer is on the launch stream this costs one
//!   comparison per buffer.
//! - A batch of hints on one stream over buffers of any number of streams is ordered as a
//!   launch is, with no bound on the streams.
//! - A library call (a GEMM, a random fill, a collective: the annex crates) queued on one
//!   stream over operands of others is ordered as a launch is ([`ordered`]).
//!
//! The public functions ([`wait_for`], [`hand_over`], [`ordered`]) are what a crate wrapping
//! another CUDA library orders its operands with, so every cross-stream rule stays here.
//!
//! ```no_run
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! let (loader, compute) = (device.create_stream(Default::default())?,
//!                          device.create_stream(Default::default())?);
//! let pool = device.default_memory_resource()?;
//! let mut staged = pool.allocate_zeroed::<f32>(1024, &loader)?;
//! let mut work = pool.allocate_zeroed::<f32>(1024, &compute)?;
//! work.copy_from(&staged)?; // on `compute`, after `loader`'s fill; `staged` is freed after it
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::event::Event;
use crate::stream::Stream;

/// The most distinct streams one launch's arguments can bring (one per argument), and the most
/// streams [`ordered`] takes.
pub const MAX_FOREIGN: usize = 16;

/// Makes work queued on `waiter` from now on wait for everything queued on `other` so far
/// (nothing when they are the same stream).
///
/// # Errors
///
/// The driver's error recording `other`'s marker event or queuing the wait.
pub fn wait_for(waiter: &Stream, other: &Stream) -> Result<()> {
    if waiter.same_as(other) {
        return Ok(());
    }
    waiter.wait(mark(other)?)
}

/// Moves what is ordered on `from` (a buffer) to `to`: work queued on `to` from now on comes
/// after everything queued on `from` so far. When `from` has already finished all of it,
/// nothing is queued: a wait on an event of another context is not free for the waiting
/// stream's later work (a green context's small kernels measured about 7 % slower under load
/// after one), and the work it would order is done.
///
/// # Errors
///
/// The driver's error querying `from` or queuing the wait.
pub fn hand_over(to: &Stream, from: &Stream) -> Result<()> {
    if to.same_as(from) || from.has_drained()? {
        return Ok(());
    }
    wait_for(to, from)
}

/// Records `stream`'s marker event at its current end and returns it, for another stream to
/// wait on.
fn mark(stream: &Stream) -> Result<&Event> {
    let marker = stream.marker()?;
    marker.record(stream)?;
    Ok(marker)
}

/// Runs `enqueue` (which queues work on `dst`) so that it starts after the work queued on
/// `src` so far, and so that later work on `src` (such as freeing the source) waits for it.
/// If that last ordering fails, waits for the queued work itself before returning the error,
/// so that nothing queued on `src` later can free memory under it.
pub(crate) fn across_streams(
    dst: &Stream,
    src: &Stream,
    enqueue: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if dst.same_as(src) {
        return enqueue();
    }
    wait_for(dst, src)?;
    enqueue()?;
    wait_for(src, dst).or_else(|error| {
        dst.drain()?;
        Err(error)
    })
}

/// Runs `enqueue` (which queues work on `stream` touching memory ordered on each of `others`)
/// after the work queued on every one of `others` so far, and makes their later work (such as
/// a free) wait for it; any number of streams, repeats and `stream` itself skipped. The later
/// work is ordered even when `enqueue` fails (it may have queued part of its work: a batch of
/// calls), and its error is returned; if that ordering fails, waits for `stream` before
/// returning the error (as [`across_streams`]).
pub(crate) fn among_streams<'a>(
    stream: &Stream,
    others: impl IntoIterator<Item = &'a Stream>,
    enqueue: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let mut distinct: Vec<&Stream> = Vec::new();
    for other in others {
        if !other.same_as(stream) && !distinct.iter().any(|known| known.same_as(other)) {
            distinct.push(other);
        }
    }
    if distinct.is_empty() {
        return enqueue();
    }
    stream.marker()?;
    distinct
        .iter()
        .try_for_each(|other| wait_for(stream, other))?;
    let queued = enqueue();
    let ordered = mark(stream)
        .and_then(|marker| distinct.iter().try_for_each(|other| other.wait(marker)))
        .or_else(|error| {
            stream.drain()?;
            Err(error)
        });
    queued.and(ordered)
}

/// Runs `call` (which queues work on `stream` touching memory ordered on `streams`) ordered
/// with those streams, as a kernel launch is ordered with its buffers, and with `stream`'s
/// context current on the calling thread (the libraries launch into the current context; the
/// caller's current context is restored after, and the driver called to change it only where
/// it was another: one `cuCtxGetCurrent` otherwise). When every stream of `streams` is
/// `stream` (the usual case), the ordering costs one comparison each and nothing else;
/// otherwise the call waits for their queued work, and their later work (such as a free)
/// waits for the call, even when the call failed (it may have queued part of its work).
/// `streams` holds at most [`MAX_FOREIGN`] streams (a longer array does not compile).
///
/// ```no_run
/// use cuda_safe::{Device, ordering};
///
/// let device = Device::new(0)?;
/// let (mine, theirs) = (device.create_stream(Default::default())?,
///                       device.create_stream(Default::default())?);
/// let pool = device.default_memory_resource()?;
/// let operand = pool.allocate_zeroed::<f32>(256, &theirs)?;
/// ordering::ordered(&mine, [Some(operand.stream())], || {
///     // A library call queued on `mine` that reads `operand` goes here.
///     Ok(())
/// })?;
/// # Ok::<(), cuda_safe::Error>(())
/// ```
///
/// # Errors
///
/// `call`'s error; the driver's error making the context current or ordering the streams.
/// When the streams cannot be ordered after the call, `stream` is waited for and
/// [`Error::LaunchOrdering`] returned.
#[inline]
pub fn ordered<T, const N: usize>(
    stream: &Stream,
    streams: [Option<&Stream>; N],
    call: impl FnOnce() -> Result<T>,
) -> Result<T> {
    // Every stream given is ordered: no more than the gathering holds (checked at compile time).
    const {
        assert!(
            N <= MAX_FOREIGN,
            "ordering::ordered takes at most MAX_FOREIGN streams"
        )
    };
    let _current = stream.context().scoped()?;
    let others = ForeignStreams::before(stream, |each| {
        streams.iter().flatten().for_each(|other| each(other));
    })?;
    let called = call();
    ForeignStreams::after(others, stream)?;
    called
}

/// The distinct streams, other than a launch stream, that a launch's buffer arguments are
/// ordered on; gathered without allocating.
pub(crate) struct ForeignStreams<'a> {
    streams: [Option<&'a Stream>; MAX_FOREIGN],
}

impl<'a> ForeignStreams<'a> {
    /// Orders `stream` after the work queued on every stream `each` yields other than it, and
    /// returns those streams for [`after`](Self::after); `None` when there is none, which costs
    /// one comparison per stream yielded (a launch whose buffers are all on its stream pays
    /// nothing else). Everything that can fail before the work is queued fails here: after it,
    /// an error would leave the work unordered with those streams' later work (their frees).
    ///
    /// # Errors
    ///
    /// The driver's error making `stream`'s marker event or queuing a wait.
    #[inline(always)]
    pub(crate) fn before(
        stream: &Stream,
        each: impl Fn(&mut dyn FnMut(&'a Stream)),
    ) -> Result<Option<Self>> {
        let mut foreign = false;
        each(&mut |other| foreign |= !other.same_as(stream));
        if !foreign {
            return Ok(None);
        }
        let others = Self::gather(stream, each);
        others.before_launch(stream)?;
        Ok(Some(others))
    }

    /// Orders the later work of `others` (from [`before`](Self::before)) after the work just
    /// queued on `stream`; nothing for `None`.
    ///
    /// # Errors
    ///
    /// [`Error::LaunchOrdering`] (`stream` waited for) when the ordering fails.
    #[inline(always)]
    pub(crate) fn after(others: Option<Self>, stream: &Stream) -> Result<()> {
        match others {
            Some(others) => others.after_launch(stream),
            None => Ok(()),
        }
    }

    /// The distinct streams `each` yields other than `stream` (at most [`MAX_FOREIGN`]: one
    /// per argument of a launch).
    #[cold]
    fn gather(stream: &Stream, each: impl FnOnce(&mut dyn FnMut(&'a Stream))) -> Self {
        let mut streams: [Option<&'a Stream>; MAX_FOREIGN] = [None; MAX_FOREIGN];
        each(&mut |other| {
            if other.same_as(stream) || streams.iter().flatten().any(|known| known.same_as(other)) {
                return;
            }
            if let Some(slot) = streams.iter_mut().find(|slot| slot.is_none()) {
                *slot = Some(other);
            }
        });
        Self { streams }
    }

    fn iter(&self) -> impl Iterator<Item = &'a Stream> + '_ {
        self.streams.iter().flatten().copied()
    }

    /// Orders `stream` after the work queued on every foreign stream, having first made
    /// everything the launch's second half needs (the launch stream's marker), so that once the
    /// launch is queued only re-recording and waiting can fail.
    #[cold]
    fn before_launch(&self, stream: &Stream) -> Result<()> {
        stream.marker()?;
        self.iter().try_for_each(|other| wait_for(stream, other))
    }

    /// Orders every foreign stream's later work (their buffers' frees) after the launch just
    /// queued on `stream`. If that fails, waits for the launch itself, so no buffer can be
    /// freed under the kernel, and returns [`Error::LaunchOrdering`] with the cause.
    #[cold]
    fn after_launch(&self, stream: &Stream) -> Result<()> {
        let ordered =
            mark(stream).and_then(|marker| self.iter().try_for_each(|other| other.wait(marker)));
        match ordered {
            Ok(()) => Ok(()),
            Err(error) => {
                stream.drain()?;
                Err(Error::LaunchOrdering {
                    source: Box::new(error),
                })
            }
        }
    }
}
