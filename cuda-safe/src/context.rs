//! CUDA contexts, primary and green, through one `Context` type that owns their whole
//! lifecycle: retaining a device's primary context (kept for the process once used, as
//! `cuda.core` does), creating a green context from SM resources, making either current for a
//! scope, and releasing or destroying it once.
//!
//! ```no_run
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! device.set_current()?; // retains the primary context (kept until released) and binds it
//! let context = device.context()?; // the same context, shared
//! assert!(!context.is_green());
//! assert_eq!(context.device().ordinal(), 0);
//! let stream = device.create_stream(Default::default())?; // re-uses it
//! assert_eq!(stream.context(), &context);
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use crate::device::{Device, LaunchLimits};
use crate::error::{Result, cu};
use crate::event::{Event, EventOptions};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::stream::{Stream, StreamOptions};
use crate::trace::span;
use cuda_sys::Driver;
use cuda_sys::{CUcontext, CUdevResource, CUdevResourceDesc, CUgreenCtx, CUgreenCtxCreate_flags};

/// A CUDA context; cloning is cheap and shares it.
///
/// A device's primary context is retained the first time anything needs it (a stream, a pool,
/// [`Device::set_current`]) and stays retained for the rest of the process, so
/// `device.set_current()?;` followed by work on the device never re-creates it; call
/// [`Device::release_primary_context`] to let it go once the handles still using it (streams,
/// buffers, resources) are dropped. A green context is destroyed with its last handle.
#[derive(Clone)]
#[must_use = "a context is released when its last handle is dropped"]
pub struct Context {
    inner: Arc<Owned<ContextInner>>,
}

struct ContextInner {
    raw: CUcontext,
    device: Device,
    kind: ContextKind,
    /// The device's launch limits, read on the first launch in this context.
    limits: OnceLock<LaunchLimits>,
}

/// What kind of context this is and what releasing it takes.
enum ContextKind {
    /// A device's primary context, retained with `cuDevicePrimaryCtxRetain`.
    Primary,
    /// A green context owning `sm_count` SMs, destroyed with `cuGreenCtxDestroy` when the
    /// crate made it.
    Green {
        green: CUgreenCtx,
        sm_count: u32,
        owner: GreenOwner,
    },
}

/// Who destroys a green context.
pub(crate) enum GreenOwner {
    /// This crate: destroyed with the last handle.
    Crate,
    /// Another library, which made it: never destroyed here; what keeps it alive (when the
    /// caller gave it) is dropped with the last handle.
    Foreign(Option<Arc<dyn Any + Send + Sync>>),
}

// SAFETY: a CUcontext is a handle the driver lets any thread use; the primary context's
// retain/release pair is thread-safe.
unsafe impl Send for ContextInner {}
// SAFETY: as above; the handle is never mutated after creation (the limits are a OnceLock).
unsafe impl Sync for ContextInner {}

/// A device's entry in the primary-context registry.
struct PrimaryEntry {
    ordinal: usize,
    /// Every handle shares this one retain.
    live: Weak<Owned<ContextInner>>,
    /// The registry's own handle, keeping the context retained once used.
    pinned: Option<Arc<Owned<ContextInner>>>,
    /// Whether the process keeps the context once used: true until
    /// `Device::release_primary_context`, again after `Device::set_current` or
    /// `Device::retain_primary_context`.
    kept: bool,
}

/// Primary contexts retained by this process, by device ordinal.
static PRIMARY: Mutex<Vec<PrimaryEntry>> = Mutex::new(Vec::new());

impl Context {
    /// The primary context of `device` if this process holds it now (nothing is retained:
    /// a library that must not keep a device's context alive asks this first).
    pub fn live_primary(device: &Device) -> Option<Self> {
        let registry = PRIMARY.lock().unwrap_or_else(PoisonError::into_inner);
        registry
            .iter()
            .find(|entry| entry.ordinal == device.ordinal())
            .and_then(|entry| entry.live.upgrade())
            .map(|inner| Self { inner })
    }

    /// The primary context of `device`, retaining it (and keeping it retained) if it is not.
    #[doc = cuda_sys::api_doc!(cuDevicePrimaryCtxRetain)]
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    pub(crate) fn primary(device: &Device) -> Result<Self> {
        let mut registry = PRIMARY.lock().unwrap_or_else(PoisonError::into_inner);
        // An entry whose context is gone is forgotten, unless it records a release.
        registry.retain(|entry| entry.live.strong_count() > 0 || !entry.kept);
        if let Some(entry) = registry
            .iter_mut()
            .find(|entry| entry.ordinal == device.ordinal())
            && let Some(inner) = entry.live.upgrade()
        {
            if entry.kept {
                entry.pinned.get_or_insert_with(|| inner.clone());
            }
            return Ok(Self { inner });
        }
        let _span = span!(DEBUG, "primary_context_retain", device = device.ordinal());
        let driver = device.driver();
        let mut raw: CUcontext = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer and the device handle came from cuDeviceGet.
        unsafe { cu!(driver, cuDevicePrimaryCtxRetain(&mut raw, device.as_raw())) }?;
        let inner = Arc::new(Owned::new(ContextInner {
            raw,
            device: *device,
            kind: ContextKind::Primary,
            limits: OnceLock::new(),
        }));
        match registry
            .iter_mut()
            .find(|entry| entry.ordinal == device.ordinal())
        {
            Some(released) => {
                released.live = Arc::downgrade(&inner);
                released.pinned = released.kept.then(|| inner.clone());
            }
            None => registry.push(PrimaryEntry {
                ordinal: device.ordinal(),
                live: Arc::downgrade(&inner),
                pinned: Some(inner.clone()),
                kept: true,
            }),
        }
        Ok(Self { inner })
    }

    /// Stops keeping `device`'s primary context retained, now and for later uses, until
    /// [`keep_primary`](Self::keep_primary): it is released when the handles still using it are
    /// gone, and a later handle keeps it only while it lives. Returns whether the registry was
    /// holding it.
    pub(crate) fn unpin_primary(device: &Device) -> bool {
        let pinned = {
            let mut registry = PRIMARY.lock().unwrap_or_else(PoisonError::into_inner);
            match registry
                .iter_mut()
                .find(|entry| entry.ordinal == device.ordinal())
            {
                Some(entry) => {
                    entry.kept = false;
                    entry.pinned.take()
                }
                None => {
                    registry.push(PrimaryEntry {
                        ordinal: device.ordinal(),
                        live: Weak::new(),
                        pinned: None,
                        kept: false,
                    });
                    None
                }
            }
        };
        // Dropped outside the lock: this may be the last handle, whose release calls the driver.
        pinned.is_some()
    }

    /// Keeps `device`'s primary context retained for the process again (the default), from
    /// its next use on: handles alive now still let it go with the last of them unless
    /// something uses the context first.
    pub(crate) fn keep_primary(device: &Device) {
        let mut registry = PRIMARY.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = registry
            .iter_mut()
            .find(|entry| entry.ordinal == device.ordinal())
        {
            entry.kept = true;
        }
    }

    /// Whether the process keeps `device`'s primary context once used (not released).
    pub(crate) fn keeps_primary(device: &Device) -> bool {
        let registry = PRIMARY.lock().unwrap_or_else(PoisonError::into_inner);
        registry
            .iter()
            .find(|entry| entry.ordinal == device.ordinal())
            .is_none_or(|entry| entry.kept)
    }

    /// A new green context on `device` provisioned with `resources` (an SM group, optionally
    /// a workqueue configuration), owning `sm_count` SMs.
    #[doc = cuda_sys::api_doc!(cuGreenCtxCreate)]
    #[doc(alias = "cuGreenCtxCreate")]
    pub(crate) fn create_green(
        device: &Device,
        resources: &mut [CUdevResource],
        sm_count: u32,
    ) -> Result<Context> {
        let _span = span!(
            DEBUG,
            "green_context_create",
            device = device.ordinal(),
            sm_count
        );
        let driver = device.driver();
        let count = u32::try_from(resources.len()).unwrap_or(u32::MAX);
        let mut desc: CUdevResourceDesc = std::ptr::null_mut();
        // SAFETY: valid out-pointer; `resources` holds `count` initialised resources.
        unsafe {
            cu!(
                driver,
                cuDevResourceGenerateDesc(&mut desc, resources.as_mut_ptr(), count)
            )
        }?;
        let mut green: CUgreenCtx = std::ptr::null_mut();
        let flags = CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0;
        // SAFETY: valid out-pointer, descriptor and device; the default-stream flag is required.
        unsafe {
            cu!(
                driver,
                cuGreenCtxCreate(&mut green, desc, device.as_raw(), flags)
            )
        }?;
        let mut raw: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointer and a green context just created.
        let converted = unsafe { cu!(driver, cuCtxFromGreenCtx(&mut raw, green)) };
        if let Err(error) = converted {
            // SAFETY: the green context was created above and is destroyed once, here; the
            // conversion's error is the one worth reporting.
            let _ = unsafe { driver.cuGreenCtxDestroy(green) };
            return Err(error);
        }
        Ok(Self::wrap_green(
            device,
            raw,
            green,
            sm_count,
            GreenOwner::Crate,
        ))
    }

    /// A handle to the green context `green` (whose `CUcontext` is `raw`), owning `sm_count`
    /// SMs, destroyed with the last handle only when `owner` is the crate.
    pub(crate) fn wrap_green(
        device: &Device,
        raw: CUcontext,
        green: CUgreenCtx,
        sm_count: u32,
        owner: GreenOwner,
    ) -> Context {
        Self {
            inner: Arc::new(Owned::new(ContextInner {
                raw,
                device: *device,
                kind: ContextKind::Green {
                    green,
                    sm_count,
                    owner,
                },
                limits: OnceLock::new(),
            })),
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

    /// Whether the crate gives the driver's context back with the last handle: `true` for a
    /// primary context (released) and a green context the crate made (destroyed), `false` for
    /// a green context wrapped from another library
    /// ([`from_raw_green`](Self::from_raw_green)), which is never destroyed here.
    pub fn is_owned(&self) -> bool {
        !matches!(
            self.inner.kind,
            ContextKind::Green {
                owner: GreenOwner::Foreign(_),
                ..
            }
        )
    }

    /// What keeps a wrapped green context alive, when it was wrapped with
    /// [`from_raw_green_with_owner`](Self::from_raw_green_with_owner); `None` otherwise.
    pub fn owner(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        match &self.inner.kind {
            ContextKind::Green {
                owner: GreenOwner::Foreign(owner),
                ..
            } => owner.as_ref(),
            _ => None,
        }
    }

    /// The context's unique id in this process (the driver never gives it to another
    /// context, even after this one is gone).
    ///
    #[doc = cuda_sys::api_doc!(cuCtxGetId)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuCtxGetId")]
    pub fn id(&self) -> Result<u64> {
        let mut id = 0;
        // SAFETY: the context is alive while `self` lives; valid out-pointer.
        unsafe { cu!(self.driver(), cuCtxGetId(self.inner.raw, &mut id)) }?;
        Ok(id)
    }

    /// A new stream on this context (a green context's streams run on its SMs only, and are
    /// always non-blocking).
    ///
    /// # Errors
    ///
    /// As [`Stream::new`].
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        Stream::new(self, options)
    }

    /// A new event on this context.
    pub fn create_event(&self, options: EventOptions) -> Result<Event> {
        Event::new(self, options)
    }

    /// The driver entry points (for calls this crate does not wrap, through [`cu!`](crate::cu)).
    #[inline]
    pub fn driver(&self) -> &'static Driver {
        self.inner.device.driver()
    }

    /// The launch limits of the context's device, read from the device on first use and kept
    /// for the context's life (one read per context, a plain load afterwards).
    #[inline]
    pub fn launch_limits(&self) -> Result<&LaunchLimits> {
        if let Some(limits) = self.inner.limits.get() {
            return Ok(limits);
        }
        let limits = self.inner.device.launch_limits()?;
        Ok(self.inner.limits.get_or_init(|| limits))
    }

    /// Makes this context current on the calling thread, calling `cuCtxSetCurrent` only when
    /// the thread's current context is another one.
    #[doc = cuda_sys::api_doc!(cuCtxSetCurrent)]
    #[doc(alias = "cuCtxSetCurrent")]
    pub fn bind(&self) -> Result<()> {
        let driver = self.driver();
        let mut current: CUcontext = std::ptr::null_mut();
        // SAFETY: `current` is a valid out-pointer.
        unsafe { cu!(driver, cuCtxGetCurrent(&mut current)) }?;
        if current != self.inner.raw {
            // SAFETY: the context is retained for as long as `self` lives.
            unsafe { cu!(driver, cuCtxSetCurrent(self.inner.raw)) }?;
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
        unsafe { cu!(driver, cuCtxGetCurrent(&mut previous)) }?;
        if previous == self.inner.raw {
            return Ok(ScopedCurrent {
                restore: None,
                driver,
                _context: PhantomData,
            });
        }
        // SAFETY: the context is alive for as long as `self` lives, which outlives the guard's
        // use by the caller.
        unsafe { cu!(driver, cuCtxSetCurrent(self.inner.raw)) }?;
        Ok(ScopedCurrent {
            restore: Some(previous),
            driver,
            _context: PhantomData,
        })
    }

    /// Waits for all work in this context to finish.
    #[doc = cuda_sys::api_doc!(cuCtxSynchronize)]
    #[doc(alias = "cuCtxSynchronize")]
    pub fn sync(&self) -> Result<()> {
        let _current = self.scoped()?;
        // SAFETY: the context is current on this thread.
        unsafe { cu!(self.driver(), cuCtxSynchronize()) }
    }

    /// The stream priority range of this context: `(least, greatest)`; numerically lower is
    /// higher priority (`(0, -5)` on most GPUs).
    #[doc = cuda_sys::api_doc!(cuCtxGetStreamPriorityRange)]
    #[doc(alias = "cuCtxGetStreamPriorityRange")]
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        let _current = self.scoped()?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers; the context is current.
        unsafe {
            cu!(
                self.driver(),
                cuCtxGetStreamPriorityRange(&mut least, &mut greatest)
            )
        }?;
        Ok((least, greatest))
    }

    /// Whether two handles name the same context (what `==` compares).
    pub fn same_as(&self, other: &Context) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.raw == other.inner.raw
    }

    /// Releases this handle, returning the driver's error if this was the last handle and the
    /// release failed (dropping does the same and only logs). A primary context stays retained
    /// until [`Device::release_primary_context`].
    pub fn close(self) -> Result<()> {
        Arc::try_unwrap(self.inner).map_or(Ok(()), Owned::close)
    }
}

impl Release for ContextInner {
    const WHAT: &'static str = "context";

    fn release(&mut self) -> Result<()> {
        let driver = self.device.driver();
        match &self.kind {
            ContextKind::Green {
                owner: GreenOwner::Foreign(_),
                ..
            } => Ok(()),
            ContextKind::Green {
                green,
                owner: GreenOwner::Crate,
                ..
            } => destroy_green(driver, self.raw, *green),
            ContextKind::Primary => release_primary(driver, self.raw, self.device),
        }
    }
}

/// Gives back the crate's retain of `device`'s primary context, first unbinding it from the
/// calling thread if it is current there: the crate's retain is the last one it holds (only
/// [`Device::release_primary_context`] lets it go while the process runs), so the thread is
/// not left bound to a context that may now be inactive. (The CUDA runtime binds the primary
/// context again on its next call.)
fn release_primary(driver: &'static Driver, raw: CUcontext, device: Device) -> Result<()> {
    let mut current = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe { cu!(driver, cuCtxGetCurrent(&mut current)) }?;
    if current == raw {
        // SAFETY: setting no context current is always valid.
        unsafe { cu!(driver, cuCtxSetCurrent(std::ptr::null_mut())) }?;
    }
    // SAFETY: pairs the retain made when the crate's handle was created.
    unsafe { cu!(driver, cuDevicePrimaryCtxRelease_v2(device.as_raw())) }
}

/// Destroys a green context, first unbinding it from the calling thread if it is current there
/// (so the thread is not left with a dangling current context). If the thread's current
/// context cannot be read, the green context is not destroyed (the error is returned): leaking
/// it is better than leaving a thread bound to a destroyed context.
fn destroy_green(driver: &'static Driver, raw: CUcontext, green: CUgreenCtx) -> Result<()> {
    let mut current = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    unsafe { cu!(driver, cuCtxGetCurrent(&mut current)) }?;
    if current == raw {
        // SAFETY: setting no context current is always valid.
        unsafe { cu!(driver, cuCtxSetCurrent(std::ptr::null_mut())) }?;
    }
    // SAFETY: the green context is owned by the caller and destroyed once.
    unsafe { cu!(driver, cuGreenCtxDestroy(green)) }
}

/// Restores the thread's previous current context when dropped (see [`Context::scoped`]); it
/// borrows the context, which therefore stays alive while it is current.
#[derive(Debug)]
#[must_use = "the context is current only until the guard is dropped"]
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
            if let Err(error) = unsafe { cu!(self.driver, cuCtxSetCurrent(previous)) } {
                crate::handle::log_drop_error("current-context guard", &error);
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
            .field("owned", &self.is_owned())
            .finish()
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        self.same_as(other)
    }
}

impl Eq for Context {}

assert_send_sync!(Context);
