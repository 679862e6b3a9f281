//! Streams: ordered queues of GPU work.
//!
//! ```no_run
//! use cuda_safe::{Device, StreamOptions};
//!
//! let device = Device::new(0)?;
//! let first = device.create_stream(StreamOptions::default())?; // non-blocking
//! let (_, highest) = device.context()?.stream_priority_range()?;
//! let urgent = device.create_stream(StreamOptions::default().priority(highest))?;
//! urgent.wait_stream(&first)?; // work queued on `urgent` from now on runs after `first`'s
//! urgent.sync()?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! A stream also runs Rust closures on the host in its order ([`Stream::launch_host_func`]);
//! a panic in one is caught and reported by the stream's next [`sync`](Stream::sync),
//! [`query`](Stream::query) or `launch_host_func` (the crate's own waits on the stream, in
//! copies to the host or frees, leave it for those).

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use crate::callback::{self, PanicSlot};
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result, cu, cu_ready};
use crate::event::{Event, EventOptions};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::ordering;
use cuda_sys::{CUstream, CUstream_flags, CUstreamCaptureMode, CUstreamCaptureStatus, Driver};

/// Idle events a stream keeps for completions ([`Stream::keep_spare_event`]), at most.
const MAX_SPARE_EVENTS: usize = 1024;

/// How to create a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Whether the stream runs independently of the legacy default stream (default `true`).
    pub non_blocking: bool,
    /// The priority, within the context's [`stream_priority_range`](Context::stream_priority_range);
    /// `None` is the default priority. Lower numbers are higher priority.
    pub priority: Option<i32>,
}

crate::setters::setters! {
    impl StreamOptions {
        non_blocking: value bool,
        priority: some i32,
    }
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            non_blocking: true,
            priority: None,
        }
    }
}

/// A CUDA stream; cloning is cheap and shares it. It keeps its context alive, and two handles
/// are equal when they name the same stream of the same context.
#[derive(Clone)]
#[must_use = "a stream is destroyed when its last handle is dropped"]
pub struct Stream {
    inner: Arc<Owned<StreamInner>>,
}

struct StreamInner {
    raw: CUstream,
    context: Context,
    driver: &'static Driver,
    owned: bool,
    /// An untimed event this stream records to let other streams wait for it, made on first use.
    marker: OnceLock<Event>,
    /// Panics of host functions queued here, until the next call reports them (shared with
    /// the queued callbacks, which may outlive the stream); made with the first host function,
    /// so that a stream without any reads nothing beyond this handle to check.
    panics: OnceLock<Arc<PanicSlot>>,
    /// What keeps a wrapped stream alive (another library's handle to it), held and dropped
    /// with this value, never released by it.
    owner: Option<Arc<dyn Any + Send + Sync>>,
    /// Untimed events the crate's completion futures recorded here and finished with, for the
    /// next ones: they live and die with the stream.
    spare_events: Mutex<Vec<Event>>,
}

impl StreamInner {
    /// Reports a host function's panic kept since the last report.
    #[inline(always)]
    fn check_panics(&self) -> Result<()> {
        match self.panics.get() {
            Some(slot) => slot.check(),
            None => Ok(()),
        }
    }
}

// SAFETY: a CUstream may be used from any thread; the handle is immutable after creation.
unsafe impl Send for StreamInner {}
// SAFETY: as above.
unsafe impl Sync for StreamInner {}

impl Stream {
    /// A new stream on `context`.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamCreateWithPriority)]
    #[doc = cuda_sys::api_doc!(cuGreenCtxStreamCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a priority outside the context's
    /// [`stream_priority_range`](Context::stream_priority_range), or a blocking stream in a
    /// green context; the driver's error.
    #[doc(alias = "cuStreamCreateWithPriority", alias = "cuGreenCtxStreamCreate")]
    pub fn new(context: &Context, options: StreamOptions) -> Result<Self> {
        let priority = match options.priority {
            Some(priority) => {
                let (least, greatest) = context.stream_priority_range()?;
                if priority > least || priority < greatest {
                    return Err(Error::invalid_argument(format!(
                        "stream priority {priority} is outside the device's range {greatest}..={least}"
                    )));
                }
                priority
            }
            None => 0,
        };
        let flags = if options.non_blocking {
            CUstream_flags::CU_STREAM_NON_BLOCKING
        } else {
            CUstream_flags::CU_STREAM_DEFAULT
        };
        let driver = context.driver();
        let mut raw: CUstream = std::ptr::null_mut();
        if let Some(green) = context.as_raw_green() {
            if !options.non_blocking {
                return Err(Error::invalid_argument(
                    "a green context's streams are always non-blocking",
                ));
            }
            // SAFETY: valid out-pointer and green context; non-blocking is the required flag.
            unsafe {
                cu!(
                    driver,
                    cuGreenCtxStreamCreate(&mut raw, green, flags.0, priority)
                )
            }?;
        } else {
            let _current = context.scoped()?;
            // SAFETY: `raw` is a valid out-pointer; the context is current on this thread.
            unsafe {
                cu!(
                    driver,
                    cuStreamCreateWithPriority(&mut raw, flags.0, priority)
                )
            }?;
        }
        Ok(Self::from_parts(raw, context.clone(), true, None))
    }

    /// Wraps a stream created elsewhere (another library), without owning it: dropping the
    /// wrapper does not destroy the stream.
    ///
    /// # Safety
    ///
    /// `raw` must be a valid stream of `context` and stay valid while the wrapper or any clone
    /// of it (buffers keep one) lives. For the special handles (`CU_STREAM_LEGACY`,
    /// `CU_STREAM_PER_THREAD`), see [`Stream::legacy_default`].
    pub unsafe fn from_raw(raw: CUstream, context: &Context) -> Self {
        Self::from_parts(raw, context.clone(), false, None)
    }

    /// Wraps a stream created elsewhere, without owning it, and keeps `owner` (another
    /// library's handle to the stream, such as a cudarc `Arc<CudaStream>`) alive for as long as
    /// the wrapper or any clone of it lives. The stream is never destroyed by this crate; the
    /// last clone drops `owner`, which may destroy it then.
    ///
    /// # Safety
    ///
    /// `raw` must be a valid stream of `context` for as long as `owner` lives. For the special
    /// handles, see [`Stream::legacy_default`] and [`Stream::per_thread_default`].
    pub unsafe fn from_raw_with_owner(
        raw: CUstream,
        context: &Context,
        owner: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Self::from_parts(raw, context.clone(), false, Some(owner))
    }

    /// What keeps this stream alive, when it was wrapped with
    /// [`from_raw_with_owner`](Self::from_raw_with_owner); `None` otherwise.
    pub fn owner(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.inner.owner.as_ref()
    }

    /// The legacy default stream (`CU_STREAM_LEGACY`), which synchronizes with every blocking
    /// stream.
    ///
    /// # Safety
    ///
    /// The handle means "the legacy stream of the context current on the calling thread":
    /// use the wrapper (and any buffer associated with it, which frees itself there) only on
    /// threads where `context` is current.
    pub unsafe fn legacy_default(context: &Context) -> Self {
        Self::from_parts(cuda_sys::CU_STREAM_LEGACY, context.clone(), false, None)
    }

    /// The calling thread's default stream (`CU_STREAM_PER_THREAD`).
    ///
    /// # Safety
    ///
    /// The handle means "the calling thread's stream": use the wrapper (and any buffer
    /// associated with it, which frees itself there) only on the thread that made it, with
    /// `context` current.
    pub unsafe fn per_thread_default(context: &Context) -> Self {
        Self::from_parts(cuda_sys::CU_STREAM_PER_THREAD, context.clone(), false, None)
    }

    fn from_parts(
        raw: CUstream,
        context: Context,
        owned: bool,
        owner: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Self {
        let driver = context.driver();
        Self {
            inner: Arc::new(Owned::new(StreamInner {
                raw,
                context,
                driver,
                owned,
                marker: OnceLock::new(),
                panics: OnceLock::new(),
                owner,
                spare_events: Mutex::new(Vec::new()),
            })),
        }
    }

    /// A handle that names this stream without keeping it alive: for code that keeps
    /// something per stream (a completion reactor's lane) for as long as the stream lives.
    pub fn downgrade(&self) -> WeakStream {
        WeakStream {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// The raw `CUstream`, valid while this stream (or a clone) lives.
    #[inline]
    pub fn as_raw(&self) -> CUstream {
        self.inner.raw
    }

    /// The context the stream belongs to.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> &Device {
        self.inner.context.device()
    }

    #[inline]
    pub(crate) fn driver(&self) -> &'static Driver {
        self.inner.driver
    }

    /// Whether two handles name the same stream of the same context (what `==` compares).
    #[inline]
    pub fn same_as(&self, other: &Stream) -> bool {
        // Clones share their inner part: no need to read it (a launch asks this of each
        // buffer argument, usually a clone of the launch stream).
        Arc::ptr_eq(&self.inner, &other.inner)
            || (self.inner.raw == other.inner.raw
                && self.inner.context.same_as(&other.inner.context))
    }

    /// Blocks until all work queued so far has finished.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamSynchronize)]
    /// # Errors
    ///
    /// The driver's error; [`Error::CallbackPanicked`] (after the wait) when a host function
    /// queued on this stream panicked since the last report.
    #[doc(alias = "cuStreamSynchronize")]
    #[inline]
    pub fn sync(&self) -> Result<()> {
        self.drain()?;
        self.inner.check_panics()
    }

    /// Blocks until all work queued so far has finished, leaving a host function's panic for
    /// the next call that reports it ([`sync`](Self::sync) reports it): for a library's own
    /// waits (a host view, a pinned buffer's free), whose caller did not ask about callbacks.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamSynchronize)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuStreamSynchronize")]
    #[inline]
    pub fn drain(&self) -> Result<()> {
        // SAFETY: the stream is valid while `self` lives.
        unsafe { cu!(self.inner.driver, cuStreamSynchronize(self.inner.raw)) }
    }

    /// Reports a host function's panic kept since the last report
    /// ([`Error::CallbackPanicked`]), as [`sync`](Self::sync) does after its wait: for waits
    /// that end without blocking (a completion future).
    ///
    /// # Errors
    ///
    /// [`Error::CallbackPanicked`] when a host function queued on this stream panicked since
    /// the last report.
    #[inline]
    pub fn check_callback_panics(&self) -> Result<()> {
        self.inner.check_panics()
    }

    /// Whether all work queued so far has finished, without blocking.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamQuery)]
    /// # Errors
    ///
    /// The driver's error; [`Error::CallbackPanicked`] when the work has finished and a host
    /// function queued on this stream panicked since the last report.
    #[doc(alias = "cuStreamQuery")]
    pub fn query(&self) -> Result<bool> {
        // SAFETY: the stream is valid while `self` lives.
        let done = unsafe { cu_ready!(self.inner.driver, cuStreamQuery(self.inner.raw)) }?;
        if done {
            self.inner.check_panics()?;
        }
        Ok(done)
    }

    /// Whether everything queued so far has finished, for the crate's own hand-overs: `false`
    /// while the stream is being captured (querying it would end the capture), and a host
    /// function's panic is left for the user's next call.
    ///
    /// The query is made in relaxed capture mode: querying a stream that is not captured
    /// cannot disturb a capture, but in global mode the driver refuses it on every thread while
    /// any global-mode capture runs (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`). Should the
    /// driver refuse to restore the thread's mode, that error is returned and the thread stays
    /// in relaxed mode.
    pub(crate) fn has_drained(&self) -> Result<bool> {
        if self.is_capturing()? {
            return Ok(false);
        }
        let driver = self.inner.driver;
        let mut mode = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: a valid out-pointer; the thread's mode is restored below.
        unsafe { cu!(driver, cuThreadExchangeStreamCaptureMode(&mut mode)) }?;
        // SAFETY: the stream is valid while `self` lives.
        let drained = unsafe { cu_ready!(driver, cuStreamQuery(self.inner.raw)) };
        // SAFETY: as above; `mode` holds the thread's previous mode.
        let restored = unsafe { cu!(driver, cuThreadExchangeStreamCaptureMode(&mut mode)) };
        let drained = drained?;
        restored?;
        Ok(drained)
    }

    /// Whether the stream is being captured into a graph (or its capture was invalidated).
    ///
    #[doc = cuda_sys::api_doc!(cuStreamIsCapturing)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuStreamIsCapturing")]
    pub fn is_capturing(&self) -> Result<bool> {
        let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: valid stream and out-pointer.
        unsafe {
            cu!(
                self.inner.driver,
                cuStreamIsCapturing(self.inner.raw, &mut status)
            )
        }?;
        Ok(status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Queues `f` to run once on a host thread of the driver when the work queued so far has
    /// finished; work queued later waits for it (`cuLaunchHostFunc`).
    ///
    /// `f` runs under `catch_unwind`: a panic never reaches the driver, and the stream's next
    /// [`sync`](Self::sync), [`query`](Self::query) or `launch_host_func` reports it as
    /// [`Error::CallbackPanicked`]. One box is allocated per call.
    ///
    /// `f` must not call CUDA, directly or by dropping what it owns (a buffer, a stream, a
    /// kernel): the driver may deadlock or fail. Debug builds refuse every call this crate
    /// would make from there with [`Error::InvalidArgument`]. Move such values out in a channel
    /// instead of dropping them inside.
    ///
    #[doc = cuda_sys::api_doc!(cuLaunchHostFunc)]
    /// # Errors
    ///
    /// Nothing is queued when:
    /// - [`Error::CallbackPanicked`]: an earlier host function of this stream panicked (the
    ///   report clears it; call again to queue `f`);
    /// - [`Error::InvalidArgument`]: the stream is being captured, where a host function would
    ///   become a graph node run at every replay (add a host node to a graph instead);
    /// - [`Error::Cuda`]: the driver refuses.
    #[doc(alias = "cuLaunchHostFunc")]
    pub fn launch_host_func<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        self.inner.check_panics()?;
        let driver = self.inner.driver;
        if self.is_capturing()? {
            return Err(Error::invalid_argument(
                "a host function cannot be queued on a capturing stream: it would run at every \
                 replay of the graph; add a host node (Graph::add_host) instead",
            ));
        }
        let slot = self.inner.panics.get_or_init(Arc::default).clone();
        let data = callback::boxed_once(f, slot);
        // SAFETY: the trampoline matches the boxed closure's type; the driver runs it once
        // (which frees the box) after the stream's queued work.
        let queued = unsafe {
            cu!(
                driver,
                cuLaunchHostFunc(self.inner.raw, Some(callback::run_once::<F>), data)
            )
        };
        if queued.is_err() {
            // SAFETY: the driver refused the callback, so nothing else holds `data`.
            unsafe { callback::drop_once::<F>(data) };
        }
        queued
    }

    /// Records `event` at this point of the stream.
    #[doc = cuda_sys::api_doc!(cuEventRecord)]
    #[doc(alias = "cuEventRecord")]
    #[inline]
    pub fn record(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// Makes work queued on this stream from now on wait until `event` completes.
    #[doc = cuda_sys::api_doc!(cuStreamWaitEvent)]
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn wait(&self, event: &Event) -> Result<()> {
        // SAFETY: both handles are valid while their wrappers live; flags must be 0.
        unsafe {
            cu!(
                self.inner.driver,
                cuStreamWaitEvent(self.inner.raw, event.as_raw(), 0)
            )
        }
    }

    /// Makes work queued on this stream from now on wait for everything queued on `other` so
    /// far (nothing to do when they are the same stream).
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        ordering::wait_for(self, other)
    }

    /// An untimed event of the stream's context that was recorded here before and given back
    /// ([`keep_spare_event`](Self::keep_spare_event)), or a new one: for code that records an
    /// event per operation (completion futures) without creating one each time.
    ///
    /// # Errors
    ///
    /// The driver's error creating an event when none is spare.
    pub fn take_spare_event(&self) -> Result<Event> {
        let spare = self
            .inner
            .spare_events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match spare {
            Some(event) => Ok(event),
            None => Event::new(self.context(), EventOptions::default()),
        }
    }

    /// Keeps `event` (from [`take_spare_event`](Self::take_spare_event)) for the next
    /// completion; past the limit (1,024 per stream) it is destroyed, outside the lock.
    pub fn keep_spare_event(&self, event: Event) {
        let mut spare = self
            .inner
            .spare_events
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if spare.len() < MAX_SPARE_EVENTS {
            spare.push(event);
        } else {
            drop(spare);
            drop(event);
        }
    }

    /// The stream's marker event, made on first use (not recorded); see [`ordering`].
    pub(crate) fn marker(&self) -> Result<&Event> {
        match self.inner.marker.get() {
            Some(marker) => Ok(marker),
            None => {
                let event = Event::new(self.context(), EventOptions::default())?;
                Ok(self.inner.marker.get_or_init(|| event))
            }
        }
    }

    /// The stream's priority.
    #[doc = cuda_sys::api_doc!(cuStreamGetPriority)]
    #[doc(alias = "cuStreamGetPriority")]
    pub fn priority(&self) -> Result<i32> {
        let mut priority = 0;
        // SAFETY: valid out-pointer and stream.
        unsafe {
            cu!(
                self.inner.driver,
                cuStreamGetPriority(self.inner.raw, &mut priority)
            )
        }?;
        Ok(priority)
    }

    /// Whether the stream is non-blocking.
    #[doc = cuda_sys::api_doc!(cuStreamGetFlags)]
    #[doc(alias = "cuStreamGetFlags")]
    pub fn is_non_blocking(&self) -> Result<bool> {
        let mut flags = 0;
        // SAFETY: valid out-pointer and stream.
        unsafe {
            cu!(
                self.inner.driver,
                cuStreamGetFlags(self.inner.raw, &mut flags)
            )
        }?;
        Ok(flags & CUstream_flags::CU_STREAM_NON_BLOCKING.0 != 0)
    }

    /// Destroys the stream now if this is the last handle, returning the driver's error
    /// (dropping does the same and only logs). Queued work still completes.
    #[doc = cuda_sys::api_doc!(cuStreamDestroy)]
    #[doc(alias = "cuStreamDestroy")]
    pub fn close(self) -> Result<()> {
        Arc::try_unwrap(self.inner).map_or(Ok(()), Owned::close)
    }
}

impl Release for StreamInner {
    const WHAT: &'static str = "stream";

    fn release(&mut self) -> Result<()> {
        if !self.owned {
            return Ok(());
        }
        // SAFETY: the stream is owned by this value and destroyed once (by `Owned`).
        unsafe { cu!(self.driver, cuStreamDestroy_v2(self.raw)) }
    }
}

/// A stream named without being kept alive ([`Stream::downgrade`]); cloning is cheap.
#[derive(Clone, Debug)]
pub struct WeakStream {
    inner: Weak<Owned<StreamInner>>,
}

impl WeakStream {
    /// Whether the stream still lives (a handle to it exists somewhere).
    pub fn is_alive(&self) -> bool {
        self.inner.strong_count() > 0
    }

    /// The stream, while it lives.
    pub fn upgrade(&self) -> Option<Stream> {
        self.inner.upgrade().map(|inner| Stream { inner })
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other)
    }
}

impl Eq for Stream {}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("raw", &self.inner.raw)
            .field("device", &self.device().ordinal())
            .field("owned", &self.inner.owned)
            .field("has_owner", &self.inner.owner.is_some())
            .finish()
    }
}

assert_send_sync!(Stream, WeakStream);
