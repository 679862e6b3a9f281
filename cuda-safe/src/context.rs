//! CUDA contexts: the primary context of a device (retained once per process, released with
//! its last handle) and, later, green contexts, through one `Context` type.
//!
//! ```no_run
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! let context = device.set_current()?; // retains the primary context and binds it
//! assert!(!context.is_green());
//! assert_eq!(context.device().ordinal(), 0);
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::error::check;
use crate::sys::{CUcontext, CUgreenCtx, Driver};
use crate::{Device, Event, EventOptions, Result, Stream, StreamOptions};

/// A CUDA context; cloning is cheap and shares it.
///
/// The primary context of a device is retained on first use and released when the last
/// `Context` (or anything holding one: a stream, a buffer, a memory resource) is dropped.
#[derive(Clone)]
pub struct Context {
    inner: Arc<ContextInner>,
}

struct ContextInner {
    raw: CUcontext,
    device: Device,
    kind: ContextKind,
}

/// What kind of context this is and what releasing it takes.
enum ContextKind {
    /// A device's primary context, retained with `cuDevicePrimaryCtxRetain`.
    Primary,
    /// A green context owning `sm_count` SMs, destroyed with `cuGreenCtxDestroy`.
    Green { green: CUgreenCtx, sm_count: u32 },
}

// SAFETY: a CUcontext is a handle the driver lets any thread use; the primary context's
// retain/release pair is thread-safe.
unsafe impl Send for ContextInner {}
// SAFETY: as above; the handle is never mutated after creation.
unsafe impl Sync for ContextInner {}

/// Live primary contexts, by device ordinal, so that every handle shares one retain.
static PRIMARY: Mutex<Vec<(usize, Weak<ContextInner>)>> = Mutex::new(Vec::new());

impl Context {
    /// The primary context of `device` if a handle to it is alive (nothing is retained).
    pub(crate) fn live_primary(device: &Device) -> Option<Self> {
        let registry = PRIMARY.lock().unwrap_or_else(PoisonError::into_inner);
        registry
            .iter()
            .find(|(ordinal, _)| *ordinal == device.ordinal())
            .and_then(|(_, weak)| weak.upgrade())
            .map(|inner| Self { inner })
    }

    /// The primary context of `device`, retaining it if no handle to it is alive.
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    pub(crate) fn primary(device: &Device) -> Result<Self> {
        let mut registry = PRIMARY.lock().unwrap_or_else(PoisonError::into_inner);
        registry.retain(|(_, weak)| weak.strong_count() > 0);
        if let Some(inner) = registry
            .iter()
            .find(|(ordinal, _)| *ordinal == device.ordinal())
            .and_then(|(_, weak)| weak.upgrade())
        {
            return Ok(Self { inner });
        }
        let driver = device.driver();
        let mut raw: CUcontext = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer and the device handle came from cuDeviceGet.
        check("cuDevicePrimaryCtxRetain", unsafe {
            driver.cuDevicePrimaryCtxRetain(&mut raw, device.as_raw())
        })?;
        let inner = Arc::new(ContextInner {
            raw,
            device: *device,
            kind: ContextKind::Primary,
        });
        registry.push((device.ordinal(), Arc::downgrade(&inner)));
        Ok(Self { inner })
    }

    /// Wraps a green context converted to `raw`, owning it.
    pub(crate) fn from_green(
        raw: CUcontext,
        device: &Device,
        green: CUgreenCtx,
        sm_count: u32,
    ) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                raw,
                device: *device,
                kind: ContextKind::Green { green, sm_count },
            }),
        }
    }

    /// The raw `CUcontext`, for interop; valid while this `Context` lives.
    pub fn as_raw(&self) -> CUcontext {
        self.inner.raw
    }

    /// The device this context belongs to.
    pub fn device(&self) -> &Device {
        &self.inner.device
    }

    /// Whether this is a green context (a partition of the device's SMs).
    pub fn is_green(&self) -> bool {
        matches!(self.inner.kind, ContextKind::Green { .. })
    }

    /// The SMs provisioned to a green context (`None` for a primary context, which has the
    /// whole device).
    pub fn green_sm_count(&self) -> Option<u32> {
        match self.inner.kind {
            ContextKind::Primary => None,
            ContextKind::Green { sm_count, .. } => Some(sm_count),
        }
    }

    /// The raw `CUgreenCtx` of a green context.
    pub fn as_raw_green(&self) -> Option<CUgreenCtx> {
        match self.inner.kind {
            ContextKind::Primary => None,
            ContextKind::Green { green, .. } => Some(green),
        }
    }

    /// A new stream on this context (a green context's streams run on its SMs only, and are
    /// always non-blocking).
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        Stream::new(self, options)
    }

    /// A new event on this context.
    pub fn create_event(&self, options: EventOptions) -> Result<Event> {
        Event::new(self, options)
    }

    /// The driver entry points.
    pub(crate) fn driver(&self) -> &'static Driver {
        self.inner.device.driver()
    }

    /// Makes this context current on the calling thread, calling `cuCtxSetCurrent` only when
    /// the thread's current context is another one.
    #[doc(alias = "cuCtxSetCurrent")]
    pub fn bind(&self) -> Result<()> {
        let driver = self.driver();
        let mut current: CUcontext = std::ptr::null_mut();
        // SAFETY: `current` is a valid out-pointer.
        check("cuCtxGetCurrent", unsafe {
            driver.cuCtxGetCurrent(&mut current)
        })?;
        if current != self.inner.raw {
            // SAFETY: the context is retained for as long as `self` lives.
            check("cuCtxSetCurrent", unsafe {
                driver.cuCtxSetCurrent(self.inner.raw)
            })?;
        }
        Ok(())
    }

    /// Makes this context current on the calling thread until the guard drops, then restores
    /// the context that was current before (only calling the driver when they differ). The
    /// crate's own calls that need a current context use it, so they never leave the caller's
    /// thread bound to another context than it chose; so can a library that must not change
    /// its caller's current context (the CUDA runtime reads its current device from it).
    pub fn scoped(&self) -> Result<ScopedCurrent<'_>> {
        let driver = self.driver();
        let mut previous: CUcontext = std::ptr::null_mut();
        // SAFETY: `previous` is a valid out-pointer.
        check("cuCtxGetCurrent", unsafe {
            driver.cuCtxGetCurrent(&mut previous)
        })?;
        if previous == self.inner.raw {
            return Ok(ScopedCurrent {
                restore: None,
                driver,
                _context: PhantomData,
            });
        }
        // SAFETY: the context is alive for as long as `self` lives, which outlives the guard's
        // use by the caller.
        check("cuCtxSetCurrent", unsafe {
            driver.cuCtxSetCurrent(self.inner.raw)
        })?;
        Ok(ScopedCurrent {
            restore: Some(previous),
            driver,
            _context: PhantomData,
        })
    }

    /// Waits for all work in this context to finish.
    #[doc(alias = "cuCtxSynchronize")]
    pub fn sync(&self) -> Result<()> {
        let _current = self.scoped()?;
        // SAFETY: the context is current on this thread.
        check("cuCtxSynchronize", unsafe {
            self.driver().cuCtxSynchronize()
        })
    }

    /// The stream priority range of this context: `(least, greatest)`; numerically lower is
    /// higher priority (`(0, -5)` on most GPUs).
    #[doc(alias = "cuCtxGetStreamPriorityRange")]
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        let _current = self.scoped()?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers; the context is current.
        check("cuCtxGetStreamPriorityRange", unsafe {
            self.driver()
                .cuCtxGetStreamPriorityRange(&mut least, &mut greatest)
        })?;
        Ok((least, greatest))
    }

    /// Whether two handles name the same context.
    pub fn same_as(&self, other: &Context) -> bool {
        self.inner.raw == other.inner.raw
    }

    /// Releases this handle, returning the driver's error if this was the last handle and the
    /// release failed (dropping does the same and only logs).
    pub fn close(self) -> Result<()> {
        match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner.release(),
            Err(_) => Ok(()),
        }
    }
}

impl ContextInner {
    /// Gives the context back to the driver, once.
    fn release(self) -> Result<()> {
        let result = self.release_raw();
        // The release above was the one `Drop` would make; the fields own no other resource.
        std::mem::forget(self);
        result
    }

    fn release_raw(&self) -> Result<()> {
        match self.kind {
            ContextKind::Green { green, .. } => {
                crate::green::destroy_green(self.device.driver(), self.raw, green)
            }
            ContextKind::Primary => {
                // SAFETY: pairs the retain made when this inner value was created.
                check("cuDevicePrimaryCtxRelease_v2", unsafe {
                    self.device
                        .driver()
                        .cuDevicePrimaryCtxRelease_v2(self.device.as_raw())
                })
            }
        }
    }
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        if let Err(error) = self.release_raw() {
            crate::log_drop_error("context", &error);
        }
    }
}

/// Restores the thread's previous current context when dropped (see [`Context::scoped`]); it
/// borrows the context, which therefore stays alive while it is current.
#[derive(Debug)]
pub struct ScopedCurrent<'a> {
    restore: Option<CUcontext>,
    driver: &'static Driver,
    _context: PhantomData<&'a Context>,
}

impl Drop for ScopedCurrent<'_> {
    fn drop(&mut self) {
        if let Some(previous) = self.restore {
            // SAFETY: `previous` was current on this thread when the guard was made, and
            // restoring it is what the thread had before; a failure is logged.
            if let Err(error) = check("cuCtxSetCurrent", unsafe {
                self.driver.cuCtxSetCurrent(previous)
            }) {
                crate::log_drop_error("current-context guard", &error);
            }
        }
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("raw", &self.inner.raw)
            .field("device", &self.inner.device.ordinal())
            .field("green", &self.is_green())
            .finish()
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other)
    }
}

impl Eq for Context {}

crate::assert_send_sync!(Context);
