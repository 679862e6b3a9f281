//! NVML events (clock changes, Xid errors, power-source and performance-state changes) as a
//! runtime-agnostic stream of items: `events.next_event().await` under tokio, smol, `pollster` or a
//! hand-written executor, with only `std::task`.
//!
//! ```no_run
//! use cuda_safe::system::Device;
//! use cuda_safe_async::{CLOCK_XID_POWER, NvmlEventStream, NvmlStreamOptions};
//!
//! # async fn watch() -> cuda_safe::Result<()> {
//! let gpu = Device::from_index(0)?;
//! let mut events = NvmlEventStream::watch(&[gpu], CLOCK_XID_POWER, NvmlStreamOptions::default())?;
//! while let Some(event) = events.next_event().await {
//!     let event = event?; // an NVML failure is the last item
//!     match event.xid() {
//!         Some(xid) => eprintln!("Xid {xid} on {}", event.device.uuid()?),
//!         None => println!("{:?} on {}", event.types, event.device.uuid()?),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # How the events are watched
//!
//! NVML's only way to learn of an event is `nvmlEventSetWait`, which blocks its thread until
//! an event comes or its timeout passes; it has no descriptor to poll and no call that wakes a
//! waiter, and only a signal interrupts it (a library must not install a handler for one). So
//! each stream has one thread of its own that blocks in it, never spinning: one wait of up to
//! [`NvmlStreamOptions::wait_timeout`] (a second by default) after another, at most one call a
//! second while nothing happens, each event handed to the stream as it comes and the
//! consumer's waker woken. The completion reactor's thread is not used: it sleeps on the GPU's
//! host functions, and a thread parked in NVML for a second could not answer them.
//!
//! Dropping the stream tells the thread to stop and returns at once; the thread sees it when
//! its wait returns (within the wait timeout), frees the event set there (it is the only one
//! that ever uses the set, so it is never freed under a waiting call) and ends, letting NVML
//! shut down if nothing else holds it. [`NvmlEventStream::close`] does the same and waits for
//! it, returning the free's error.
//!
//! The stream drops no event: it holds up to [`NvmlStreamOptions::capacity`] events the
//! consumer has not taken; when that many wait, the thread stops asking NVML (which keeps
//! queueing them, in a queue of its own that is finite: a consumer that falls far behind may
//! miss events NVML itself dropped) until the consumer takes one. An NVML failure is delivered after the events before it, as
//! the stream's last item.
//!
//! The stream is also a `poll_next` for adapters: a `futures::Stream` is
//! `futures::stream::poll_fn(move |cx| events.poll_next(cx))`.

mod watcher;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::AsyncError;
use cuda_safe::system::{Device, Event, EventSet, EventTypes};
use cuda_safe::{Error, Result, assert_send_sync};
use watcher::{Shared, watch};

/// The longest wait timeout a stream takes: a drop or close waits for the current wait.
const MAX_WAIT_TIMEOUT: Duration = Duration::from_secs(60);

/// Clock changes, Xid errors, power-source changes and performance-state changes: the kinds
/// a monitor usually wants ([`NvmlEventStream::watch`] keeps those each GPU supports).
pub const CLOCK_XID_POWER: EventTypes = EventTypes::CLOCK
    .union(EventTypes::XID_CRITICAL_ERROR)
    .union(EventTypes::POWER_SOURCE_CHANGE)
    .union(EventTypes::PSTATE);

/// The longest a default stream's thread waits in NVML at a time.
const DEFAULT_WAIT: Duration = Duration::from_secs(1);
/// The events a default stream holds for its consumer.
const DEFAULT_CAPACITY: usize = 1024;

/// How an [`NvmlEventStream`] watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NvmlStreamOptions {
    /// The longest the thread blocks in one `nvmlEventSetWait` (whole milliseconds, at least
    /// one): how soon after the stream is dropped the event set is freed and the thread ends,
    /// and how often the thread wakes while nothing happens. One second by default.
    pub wait_timeout: Duration,
    /// Events held for the consumer before the thread stops taking more from NVML (at least
    /// one). 1,024 by default.
    pub capacity: usize,
}

impl NvmlStreamOptions {
    /// Sets `wait_timeout` (see the field).
    #[must_use]
    pub fn wait_timeout(mut self, wait_timeout: Duration) -> Self {
        self.wait_timeout = wait_timeout;
        self
    }

    /// Sets `capacity` (see the field).
    #[must_use]
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }
}

impl Default for NvmlStreamOptions {
    fn default() -> Self {
        Self {
            wait_timeout: DEFAULT_WAIT,
            capacity: DEFAULT_CAPACITY,
        }
    }
}

/// NVML events as a stream of items ([`next_event`](Self::next_event) is the awaitable `EventSet::wait`):
/// each item an event, in the order NVML delivered them, or NVML's error as the last one. One
/// thread of its own watches the event set (see the [module docs](self)).
///
/// `Send`, `Sync` and `Unpin`.
pub struct NvmlEventStream {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Result<()>>>,
}

/// The next item of an [`NvmlEventStream`] ([`NvmlEventStream::next_event`]).
#[must_use = "a future does nothing unless awaited"]
pub struct NextNvmlEvent<'a> {
    stream: &'a mut NvmlEventStream,
}

/// Turns an [`EventSet`] into a stream of its events.
pub trait EventSetExt {
    /// The set's events as a stream, watched with the default options.
    ///
    /// # Errors
    ///
    /// As [`into_stream_with`](Self::into_stream_with).
    fn into_stream(self) -> Result<NvmlEventStream>;

    /// The set's events as a stream, watched as `options` say; the thread owns the set from
    /// now on, and frees it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a wait timeout under a millisecond (a wait that returns
    /// at once would spin) or over a minute (a drop or close would wait as long) or a capacity
    /// of 0; [`AsyncError::NvmlWatcher`] (in
    /// [`Error::Library`]) when the thread cannot start (the set is freed).
    fn into_stream_with(self, options: NvmlStreamOptions) -> Result<NvmlEventStream>;
}

impl EventSetExt for EventSet {
    fn into_stream(self) -> Result<NvmlEventStream> {
        self.into_stream_with(NvmlStreamOptions::default())
    }

    fn into_stream_with(self, options: NvmlStreamOptions) -> Result<NvmlEventStream> {
        NvmlEventStream::start(self, options)
    }
}

impl NvmlEventStream {
    /// A stream of the events of kinds `wanted` on `devices`: each device is registered for
    /// the kinds of `wanted` it supports ([`Device::supported_event_types`]); the others are
    /// left out.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when no device supports any kind of `wanted` (or `devices` is
    /// empty); NVML's error creating the set or registering a device; as
    /// [`EventSetExt::into_stream_with`].
    pub fn watch(
        devices: &[Device],
        wanted: EventTypes,
        options: NvmlStreamOptions,
    ) -> Result<Self> {
        let mut set = EventSet::new()?;
        let mut registered = false;
        for device in devices {
            let kinds = wanted & device.supported_event_types()?;
            if !kinds.is_empty() {
                set.register(device, kinds)?;
                registered = true;
            }
        }
        if !registered {
            return Err(Error::unsupported(
                "NVML events",
                format!("no device given supports any of {wanted:?}"),
            ));
        }
        Self::start(set, options)
    }

    fn start(set: EventSet, options: NvmlStreamOptions) -> Result<Self> {
        if options.wait_timeout < Duration::from_millis(1) {
            return Err(Error::invalid_argument(format!(
                "an NVML event stream's wait timeout of {:?} is under NVML's millisecond: the \
                 thread would spin",
                options.wait_timeout
            )));
        }
        if options.wait_timeout > MAX_WAIT_TIMEOUT {
            return Err(Error::invalid_argument(format!(
                "an NVML event stream's wait timeout of {:?} is over {MAX_WAIT_TIMEOUT:?}: \
                 dropping or closing the stream would wait as long",
                options.wait_timeout
            )));
        }
        if options.capacity == 0 {
            return Err(Error::invalid_argument(
                "an NVML event stream must hold at least one event",
            ));
        }
        let shared = Arc::new(Shared::default());
        let watcher = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("cuda-safe-nvml-events".into())
            .spawn(move || watch(set, &watcher, options.wait_timeout, options.capacity))
            .map_err(|error| {
                AsyncError::NvmlWatcher(format!("it could not start: {error}").into())
            })?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// The next event, `Some(Err(_))` for NVML's failure (the last item), or `None` once the
    /// stream has ended.
    pub fn next_event(&mut self) -> NextNvmlEvent<'_> {
        NextNvmlEvent { stream: self }
    }

    /// Polls for the next item, as [`next_event`](Self::next_event)'s future does: for adapters to other
    /// stream traits.
    pub fn poll_next(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<Result<Event>>> {
        self.shared.poll_next(cx.waker())
    }

    /// Stops watching and waits for the thread to free the event set (up to the wait timeout,
    /// while it finishes its wait), returning NVML's error freeing it. Events not taken are
    /// dropped.
    ///
    /// # Errors
    ///
    /// NVML's error from `nvmlEventSetFree`; [`AsyncError::NvmlWatcher`] if the thread ended by
    /// a panic.
    pub fn close(mut self) -> Result<()> {
        drop(self.shared.stop());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(freed)) => freed,
            Some(Err(_)) => Err(AsyncError::NvmlWatcher("it ended by a panic".into()).into()),
            None => Ok(()),
        }
    }
}

impl Drop for NvmlEventStream {
    fn drop(&mut self) {
        // The thread frees the set at its next wake; it is not waited for.
        drop(self.shared.stop());
    }
}

impl Future for NextNvmlEvent<'_> {
    type Output = Option<Result<Event>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        self.stream.poll_next(cx)
    }
}

impl fmt::Debug for NvmlEventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvmlEventStream")
            .field("watching", &self.thread.is_some())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for NextNvmlEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NextNvmlEvent").finish_non_exhaustive()
    }
}

assert_send_sync!(NvmlEventStream);
