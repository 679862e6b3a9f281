//! Events: markers in a stream, for ordering work across streams and for timing it.
//!
//! ```no_run
//! use cuda_safe::{Device, Event, EventOptions};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let timed = EventOptions::default().timing(true);
//! let (start, end) = (device.create_event(timed)?, device.create_event(timed)?);
//! stream.record(&start)?;
//! // ... queue work on `stream` ...
//! stream.record(&end)?;
//! println!("took {:?}", Event::elapsed(&start, &end)?);
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::abi;
use crate::context::Context;
use crate::error::{Error, Result, cu, cu_ready};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::stream::Stream;
use cuda_sys::{CUevent, CUevent_flags, CUipcEventHandle, Driver};

/// How to create an event. The default is the cheapest: no timing, spin-waiting sync.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventOptions {
    /// Record timestamps, so [`Event::elapsed`] works (costs a little per record).
    pub timing: bool,
    /// Make [`Event::sync`] block the thread instead of spinning.
    pub blocking_sync: bool,
    /// Allow sharing the event with other processes ([`Event::ipc_handle`]); needs `timing`
    /// off.
    pub ipc: bool,
}

crate::setters::setters! {
    impl EventOptions {
        timing: value bool,
        blocking_sync: value bool,
        ipc: value bool,
    }
}

/// A CUDA event. It keeps its context alive.
#[must_use = "an event is destroyed when dropped"]
pub struct Event {
    inner: Owned<EventInner>,
}

struct EventInner {
    raw: CUevent,
    context: Context,
    driver: &'static Driver,
    options: EventOptions,
    recorded: AtomicBool,
}

// SAFETY: a CUevent may be used from any thread; the handle is immutable after creation and
// `recorded` is atomic.
unsafe impl Send for EventInner {}
// SAFETY: as above.
unsafe impl Sync for EventInner {}

impl Event {
    /// A new event on `context`.
    ///
    #[doc = cuda_sys::api_doc!(cuEventCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an IPC event with timing; the driver's error.
    #[doc(alias = "cuEventCreate")]
    pub fn new(context: &Context, options: EventOptions) -> Result<Self> {
        if options.ipc && options.timing {
            return Err(Error::invalid_argument(
                "an IPC event cannot record timing (the driver requires timing disabled)",
            ));
        }
        let mut flags = CUevent_flags::CU_EVENT_DEFAULT.0;
        if !options.timing {
            flags |= CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
        }
        if options.blocking_sync {
            flags |= CUevent_flags::CU_EVENT_BLOCKING_SYNC.0;
        }
        if options.ipc {
            flags |= CUevent_flags::CU_EVENT_INTERPROCESS.0;
        }
        let _current = context.scoped()?;
        let driver = context.driver();
        let mut raw: CUevent = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        unsafe { cu!(driver, cuEventCreate(&mut raw, flags)) }?;
        Ok(Self {
            inner: Owned::new(EventInner {
                raw,
                context: context.clone(),
                driver,
                options,
                recorded: AtomicBool::new(false),
            }),
        })
    }

    /// The raw `CUevent`, valid while this event lives.
    #[inline]
    pub fn as_raw(&self) -> CUevent {
        self.inner.raw
    }

    /// The options the event was created with.
    pub fn options(&self) -> EventOptions {
        self.inner.options
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// Records the event at this point of `stream`.
    #[doc = cuda_sys::api_doc!(cuEventRecord)]
    #[doc(alias = "cuEventRecord")]
    #[inline]
    pub fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are valid while their wrappers live.
        unsafe {
            cu!(
                self.inner.driver,
                cuEventRecord(self.inner.raw, stream.as_raw())
            )
        }?;
        self.inner.recorded.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Notes that a launch will record the event (a programmatic event), so that
    /// [`sync`](Self::sync) and [`elapsed`](Self::elapsed) wait for it.
    pub(crate) fn note_recorded(&self) {
        self.inner.recorded.store(true, Ordering::Relaxed);
    }

    /// Whether the event has been recorded at least once.
    pub fn is_recorded(&self) -> bool {
        self.inner.recorded.load(Ordering::Relaxed)
    }

    /// Blocks until the work before the last record has finished (at once if never recorded).
    #[doc = cuda_sys::api_doc!(cuEventSynchronize)]
    #[doc(alias = "cuEventSynchronize")]
    pub fn sync(&self) -> Result<()> {
        // SAFETY: the event is valid while `self` lives.
        unsafe { cu!(self.inner.driver, cuEventSynchronize(self.inner.raw)) }
    }

    /// Whether the work before the last record has finished, without blocking.
    #[doc = cuda_sys::api_doc!(cuEventQuery)]
    #[doc(alias = "cuEventQuery")]
    pub fn is_done(&self) -> Result<bool> {
        // SAFETY: the event is valid while `self` lives.
        unsafe { cu_ready!(self.inner.driver, cuEventQuery(self.inner.raw)) }
    }

    /// The GPU time between two recorded, timed events; waits for both to complete.
    ///
    #[doc = cuda_sys::api_doc!(cuEventElapsedTime)]
    #[doc = cuda_sys::api_doc!(cuEventElapsedTime_v2)]
    /// # Errors
    ///
    /// [`Error::EventNotTimed`] if either was created without timing,
    /// [`Error::EventNotRecorded`] if either was never recorded; the driver's error.
    #[doc(alias = "cuEventElapsedTime", alias = "cuEventElapsedTime_v2")]
    pub fn elapsed(start: &Event, end: &Event) -> Result<Duration> {
        if !start.inner.options.timing || !end.inner.options.timing {
            return Err(Error::EventNotTimed);
        }
        if !start.is_recorded() || !end.is_recorded() {
            return Err(Error::EventNotRecorded);
        }
        start.sync()?;
        end.sync()?;
        // SAFETY: both events are valid, timed, recorded and complete.
        let milliseconds =
            unsafe { abi::event_elapsed_ms(end.inner.driver, start.inner.raw, end.inner.raw) }?;
        Ok(Duration::from_secs_f64(
            f64::from(milliseconds.max(0.0)) / 1e3,
        ))
    }

    /// The handle another process opens this event with (`cuIpcOpenEventHandle`); only for
    /// events created with [`EventOptions::ipc`].
    ///
    #[doc = cuda_sys::api_doc!(cuIpcGetEventHandle)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an event created without `ipc`; the driver's error.
    #[doc(alias = "cuIpcGetEventHandle")]
    pub fn ipc_handle(&self) -> Result<[u8; 64]> {
        if !self.inner.options.ipc {
            return Err(Error::invalid_argument(
                "the event was not created with EventOptions::ipc",
            ));
        }
        let mut handle = CUipcEventHandle::default();
        // The driver looks the event up in the current context.
        let _current = self.inner.context.scoped()?;
        // SAFETY: valid out-pointer; the event is an IPC event of the current context.
        unsafe {
            cu!(
                self.inner.driver,
                cuIpcGetEventHandle(&mut handle, self.inner.raw)
            )
        }?;
        Ok(handle.reserved.map(|byte| byte as u8))
    }

    /// Opens, in `context`, an event another process created with [`EventOptions::ipc`] and
    /// shared through [`ipc_handle`](Self::ipc_handle). Streams of this process can
    /// [`wait`](Stream::wait) on it and record it, and [`sync`](Self::sync) waits for the
    /// other process's work; it has no timing. It stays valid after the other process destroys
    /// its event, until this one is dropped.
    ///
    #[doc = cuda_sys::api_doc!(cuIpcOpenEventHandle)]
    /// # Errors
    ///
    /// The driver's error: `CUDA_ERROR_INVALID_CONTEXT` for a handle opened in the process
    /// that created it (which uses the event itself), another for a handle of no live event.
    #[doc(alias = "cuIpcOpenEventHandle")]
    pub fn open_ipc(context: &Context, handle: &[u8; 64]) -> Result<Self> {
        let raw_handle = CUipcEventHandle {
            reserved: handle.map(|byte| byte as std::ffi::c_char),
        };
        let _current = context.scoped()?;
        let driver = context.driver();
        let mut raw: CUevent = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the handle is passed by value; the context is current.
        unsafe { cu!(driver, cuIpcOpenEventHandle(&mut raw, raw_handle)) }?;
        Ok(Self {
            inner: Owned::new(EventInner {
                raw,
                context: context.clone(),
                driver,
                options: EventOptions {
                    ipc: true,
                    ..EventOptions::default()
                },
                // Another process records it: waits and syncs must not take it as never
                // recorded.
                recorded: AtomicBool::new(true),
            }),
        })
    }

    /// Destroys the event now, returning the driver's error (dropping only logs it).
    #[doc = cuda_sys::api_doc!(cuEventDestroy)]
    #[doc(alias = "cuEventDestroy")]
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

impl Release for EventInner {
    const WHAT: &'static str = "event";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the event is owned by this value and destroyed once (by `Owned`).
        unsafe { cu!(self.driver, cuEventDestroy_v2(self.raw)) }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("raw", &self.inner.raw)
            .field("options", &self.inner.options)
            .field("recorded", &self.is_recorded())
            .finish()
    }
}

assert_send_sync!(Event);
