//! Events: markers in a stream, for ordering work across streams and for timing it.
//!
//! ```no_run
//! use cuda_safe::{Device, Event, EventOptions};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let timed = EventOptions { timing: true, ..Default::default() };
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

use crate::error::{check, check_ready};
use crate::sys::{CUevent, CUevent_flags, CUipcEventHandle, Driver};
use crate::{Context, Error, Result, Stream};

/// How to create an event. The default is the cheapest: no timing, spin-waiting sync.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventOptions {
    /// Record timestamps, so [`Event::elapsed`] works (costs a little per record).
    pub timing: bool,
    /// Make [`Event::sync`] block the thread instead of spinning.
    pub blocking_sync: bool,
    /// Allow sharing the event with other processes ([`Event::ipc_handle`]); needs `timing`
    /// off.
    pub ipc: bool,
}

/// A CUDA event. It keeps its context alive.
pub struct Event {
    raw: CUevent,
    context: Context,
    driver: &'static Driver,
    options: EventOptions,
    recorded: AtomicBool,
}

// SAFETY: a CUevent may be used from any thread; the handle is immutable after creation and
// `recorded` is atomic.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    /// A new event on `context`.
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
        check("cuEventCreate", unsafe {
            driver.cuEventCreate(&mut raw, flags)
        })?;
        Ok(Self {
            raw,
            context: context.clone(),
            driver,
            options,
            recorded: AtomicBool::new(false),
        })
    }

    /// The raw `CUevent`, valid while this event lives.
    #[inline]
    pub fn as_raw(&self) -> CUevent {
        self.raw
    }

    /// The options the event was created with.
    pub fn options(&self) -> EventOptions {
        self.options
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Records the event at this point of `stream`.
    #[doc(alias = "cuEventRecord")]
    #[inline]
    pub fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are valid while their wrappers live.
        check("cuEventRecord", unsafe {
            self.driver.cuEventRecord(self.raw, stream.as_raw())
        })?;
        self.recorded.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Whether the event has been recorded at least once.
    pub fn is_recorded(&self) -> bool {
        self.recorded.load(Ordering::Relaxed)
    }

    /// Blocks until the work before the last record has finished (at once if never recorded).
    #[doc(alias = "cuEventSynchronize")]
    pub fn sync(&self) -> Result<()> {
        // SAFETY: the event is valid while `self` lives.
        check("cuEventSynchronize", unsafe {
            self.driver.cuEventSynchronize(self.raw)
        })
    }

    /// Whether the work before the last record has finished, without blocking.
    #[doc(alias = "cuEventQuery")]
    pub fn is_done(&self) -> Result<bool> {
        // SAFETY: the event is valid while `self` lives.
        check_ready("cuEventQuery", unsafe {
            self.driver.cuEventQuery(self.raw)
        })
    }

    /// The GPU time between two recorded, timed events; waits for both to complete.
    ///
    /// [`Error::EventNotTimed`] if either was created without timing,
    /// [`Error::EventNotRecorded`] if either was never recorded.
    #[cfg_attr(feature = "cuda-12", doc(alias = "cuEventElapsedTime"))]
    #[cfg_attr(not(feature = "cuda-12"), doc(alias = "cuEventElapsedTime_v2"))]
    pub fn elapsed(start: &Event, end: &Event) -> Result<Duration> {
        if !start.options.timing || !end.options.timing {
            return Err(Error::EventNotTimed);
        }
        if !start.is_recorded() || !end.is_recorded() {
            return Err(Error::EventNotRecorded);
        }
        start.sync()?;
        end.sync()?;
        let mut milliseconds = 0f32;
        // SAFETY: valid out-pointer; both events are valid, timed and recorded.
        #[cfg(feature = "cuda-12")]
        let result = unsafe {
            end.driver
                .cuEventElapsedTime(&mut milliseconds, start.raw, end.raw)
        };
        // SAFETY: as above.
        #[cfg(not(feature = "cuda-12"))]
        let result = unsafe {
            end.driver
                .cuEventElapsedTime_v2(&mut milliseconds, start.raw, end.raw)
        };
        check(
            if cfg!(feature = "cuda-12") {
                "cuEventElapsedTime"
            } else {
                "cuEventElapsedTime_v2"
            },
            result,
        )?;
        Ok(Duration::from_secs_f64(
            f64::from(milliseconds.max(0.0)) / 1e3,
        ))
    }

    /// The handle another process opens this event with (`cuIpcOpenEventHandle`); only for
    /// events created with [`EventOptions::ipc`].
    #[doc(alias = "cuIpcGetEventHandle")]
    pub fn ipc_handle(&self) -> Result<[u8; 64]> {
        if !self.options.ipc {
            return Err(Error::invalid_argument(
                "the event was not created with EventOptions::ipc",
            ));
        }
        let mut handle = CUipcEventHandle::default();
        // SAFETY: valid out-pointer; the event is an IPC event.
        check("cuIpcGetEventHandle", unsafe {
            self.driver.cuIpcGetEventHandle(&mut handle, self.raw)
        })?;
        Ok(handle.reserved.map(|byte| byte as u8))
    }

    /// Destroys the event now, returning the driver's error (dropping only logs it).
    pub fn close(mut self) -> Result<()> {
        let result = self.destroy();
        self.raw = std::ptr::null_mut(); // destroyed: the drop that follows skips it
        result
    }

    fn destroy(&self) -> Result<()> {
        if self.raw.is_null() {
            return Ok(());
        }
        // SAFETY: the event is owned by `self` and destroyed once.
        check("cuEventDestroy_v2", unsafe {
            self.driver.cuEventDestroy_v2(self.raw)
        })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Err(error) = self.destroy() {
            crate::log_drop_error("event", &error);
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("raw", &self.raw)
            .field("options", &self.options)
            .field("recorded", &self.is_recorded())
            .finish()
    }
}

crate::assert_send_sync!(Event);
