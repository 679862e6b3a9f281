//! A pool of streams of one context that hands a stream to each piece of work: independent
//! requests then overlap on the GPU, while the steps of one request stay in one stream's
//! order.
//!
//! Picking is lock-free: round robin is one atomic increment; least busy reads one counter
//! per stream (the pool's own count of the operations in flight on each, decremented when the
//! GPU has passed an operation, not when its future is dropped).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_safe::{Context, Error, Result, Stream, StreamOptions};

/// Streams in a pool unless [`PoolOptions::streams`] says otherwise.
pub const DEFAULT_POOL_STREAMS: usize = 4;

/// How a [`StreamPool`] picks the stream for the next piece of work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolPolicy {
    /// Each stream in turn (one atomic increment).
    #[default]
    RoundRobin,
    /// The stream with the fewest of the pool's operations in flight (ties go in turn), so
    /// that a long request does not hold up the short ones queued behind it on its stream.
    /// Only work submitted through the pool ([`DeviceOp::run`](crate::DeviceOp::run)) is
    /// counted.
    LeastBusy,
}

/// How to make a [`StreamPool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolOptions {
    /// How many streams (at least 1; [`DEFAULT_POOL_STREAMS`] by default).
    pub streams: usize,
    /// How the next stream is picked (round robin by default).
    pub policy: PoolPolicy,
    /// The options of each stream (non-blocking, default priority by default).
    pub stream: StreamOptions,
}

impl PoolOptions {
    /// Sets `streams` (see the field).
    #[must_use]
    pub fn streams(mut self, streams: usize) -> Self {
        self.streams = streams;
        self
    }

    /// Sets `policy` (see the field).
    #[must_use]
    pub fn policy(mut self, policy: PoolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets `stream` (see the field).
    #[must_use]
    pub fn stream(mut self, stream: StreamOptions) -> Self {
        self.stream = stream;
        self
    }
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            streams: DEFAULT_POOL_STREAMS,
            policy: PoolPolicy::RoundRobin,
            stream: StreamOptions::default(),
        }
    }
}

/// Streams of one context (a device's primary context or a green context) handed out to
/// work by a [`PoolPolicy`]: [`next`](Self::next) for work queued by hand,
/// [`DeviceOp::run`](crate::DeviceOp::run) for composed operations, which pick their stream
/// when first polled.
///
/// ```no_run
/// use cuda_safe::Device;
/// use cuda_safe_async::{PoolOptions, StreamPool};
///
/// # fn main() -> cuda_safe::Result<()> {
/// let device = Device::new(0)?;
/// let pool = StreamPool::new(&device.context()?, PoolOptions::default())?; // 4 streams
/// let stream = pool.next(); // the next in turn
/// # drop(stream); Ok(()) }
/// ```
///
/// Cloning is cheap and shares the streams; `Send` and `Sync`. The streams live as long as
/// the pool or a stream handed out does.
#[derive(Clone)]
pub struct StreamPool {
    inner: Arc<Shared>,
}

/// What the clones of a pool share.
struct Shared {
    streams: Box<[Stream]>,
    policy: PoolPolicy,
    turn: AtomicUsize,
    /// The pool's operations in flight on each stream.
    busy: Box<[AtomicUsize]>,
}

impl StreamPool {
    /// A pool of `options.streams` new streams of `context`.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamCreateWithPriority)]
    #[doc = cuda_sys::api_doc!(cuGreenCtxStreamCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a pool of no stream; as
    /// [`Context::create_stream`] (the streams made so far are destroyed).
    #[doc(alias = "cuStreamCreateWithPriority", alias = "cuGreenCtxStreamCreate")]
    pub fn new(context: &Context, options: PoolOptions) -> Result<Self> {
        if options.streams == 0 {
            return Err(Error::invalid_argument(
                "a stream pool needs at least 1 stream",
            ));
        }
        let streams = (0..options.streams)
            .map(|_| context.create_stream(options.stream))
            .collect::<Result<Box<[Stream]>>>()?;
        Ok(Self::from_streams(streams, options.policy))
    }

    /// A pool of the streams given (of any contexts), picked by `policy`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `streams` is empty.
    pub fn with_streams(streams: Vec<Stream>, policy: PoolPolicy) -> Result<Self> {
        if streams.is_empty() {
            return Err(Error::invalid_argument(
                "a stream pool needs at least 1 stream",
            ));
        }
        Ok(Self::from_streams(streams.into_boxed_slice(), policy))
    }

    fn from_streams(streams: Box<[Stream]>, policy: PoolPolicy) -> Self {
        let busy = streams.iter().map(|_| AtomicUsize::new(0)).collect();
        Self {
            inner: Arc::new(Shared {
                streams,
                policy,
                turn: AtomicUsize::new(0),
                busy,
            }),
        }
    }

    /// The stream the policy picks now (a handle sharing it).
    pub fn next(&self) -> Stream {
        self.inner.streams[self.pick()].clone()
    }

    /// The pool's streams, in order.
    pub fn streams(&self) -> &[Stream] {
        &self.inner.streams
    }

    /// How many streams the pool has.
    pub fn len(&self) -> usize {
        self.inner.streams.len()
    }

    /// Whether the pool has no stream (never: a pool has at least one).
    pub fn is_empty(&self) -> bool {
        self.inner.streams.is_empty()
    }

    /// The pool's policy.
    pub fn policy(&self) -> PoolPolicy {
        self.inner.policy
    }

    /// The pool's operations in flight on each stream (submitted and not yet passed by the
    /// GPU), in the order of [`streams`](Self::streams).
    pub fn in_flight(&self) -> Vec<usize> {
        self.inner
            .busy
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .collect()
    }

    /// The index of the stream the policy picks now.
    fn pick(&self) -> usize {
        let shared = &*self.inner;
        let count = shared.streams.len();
        let start = shared.turn.fetch_add(1, Ordering::Relaxed) % count;
        match shared.policy {
            PoolPolicy::RoundRobin => start,
            PoolPolicy::LeastBusy => (0..count)
                .map(|offset| (start + offset) % count)
                .min_by_key(|&index| shared.busy[index].load(Ordering::Relaxed))
                .unwrap_or(start),
        }
    }

    /// A stream for one operation, counted busy until the returned guard is dropped (once the
    /// GPU has passed the operation).
    pub(super) fn lease(&self) -> (Stream, Busy) {
        let index = self.pick();
        self.inner.busy[index].fetch_add(1, Ordering::Relaxed);
        let busy = Busy {
            pool: Arc::clone(&self.inner),
            index,
        };
        (self.inner.streams[index].clone(), busy)
    }
}

/// One operation in flight on a pool's stream; dropped once the GPU has passed it.
pub(super) struct Busy {
    pool: Arc<Shared>,
    index: usize,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.pool.busy[self.index].fetch_sub(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for StreamPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamPool")
            .field("streams", &self.len())
            .field("policy", &self.policy())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}
