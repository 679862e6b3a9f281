//! Event sets: wait, with a timeout, for Xid errors, ECC errors, clock and power-state changes
//! on the GPUs registered.
//!
//! ```no_run
//! use std::time::Duration;
//! use cuda_safe::system::{Device, EventSet, EventTypes};
//!
//! let gpu = Device::from_index(0)?;
//! let mut events = EventSet::new()?;
//! events.register(&gpu, EventTypes::XID_CRITICAL_ERROR & gpu.supported_event_types()?)?;
//! if let Some(event) = events.wait(Duration::from_secs(1))? {
//!     println!("{:?} on {:?}: Xid {:?}", event.types, event.device.uuid()?, event.xid());
//! }
//! # Ok::<(), cuda_safe::Error>(())
//! ```

use std::sync::Arc;
use std::time::Duration;

use super::device::{Device, query};
use super::flags::EventTypes;
use super::init::{self, Guard};
use crate::error::{Result, nvml, nvml_waited};
use crate::handle::{Owned, Release};
use nvml_sys::nvmlEventSet_t;

/// A set of GPUs and event kinds to wait on (`nvmlEventSet_t`), freed when dropped.
#[derive(Debug)]
pub struct EventSet {
    inner: Owned<RawEventSet>,
}

/// What an [`EventSet`] owns: the set, and the guard keeping NVML initialised past its free.
#[derive(Debug)]
struct RawEventSet {
    set: nvmlEventSet_t,
    guard: Arc<Guard>,
}

// SAFETY: an event set is an NVML identifier usable from any thread while NVML is initialised
// (the guard); NVML's functions are thread-safe, and calls that use the set take `&mut self`.
unsafe impl Send for RawEventSet {}
// SAFETY: no `&self` method calls NVML with the set.
unsafe impl Sync for RawEventSet {}

impl Release for RawEventSet {
    const WHAT: &'static str = "NVML event set";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the set is live and freed once (by `Owned`); NVML is still initialised (the
        // guard is dropped after this).
        unsafe { nvml!(self.guard.nvml(), nvmlEventSetFree(self.set)) }
    }
}

/// One event delivered by [`EventSet::wait`] (`nvmlEventData_t`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Event {
    /// The device the event happened on.
    pub device: Device,
    /// The event's kind (one bit, or a newer driver's).
    pub types: EventTypes,
    /// The kind's data: the Xid for [`EventTypes::XID_CRITICAL_ERROR`], else 0.
    pub data: u64,
    /// The MIG GPU instance the event concerns; `None` when it concerns the whole GPU.
    pub gpu_instance_id: Option<u32>,
    /// The MIG compute instance the event concerns; `None` when it concerns the whole GPU.
    pub compute_instance_id: Option<u32>,
}

impl Event {
    /// The Xid error number, for an Xid event.
    pub fn xid(&self) -> Option<u64> {
        self.types
            .contains(EventTypes::XID_CRITICAL_ERROR)
            .then_some(self.data)
    }
}

impl EventSet {
    /// An empty set, initialising NVML when needed.
    #[doc = nvml_sys::api_doc!(nvmlEventSetCreate)]
    #[doc(alias = "nvmlEventSetCreate")]
    pub fn new() -> Result<Self> {
        let guard = init::acquire()?;
        let mut set: nvmlEventSet_t = std::ptr::null_mut();
        // SAFETY: NVML is initialised (the guard); `set` is a valid out-pointer.
        unsafe { nvml!(guard.nvml(), nvmlEventSetCreate(&mut set)) }?;
        Ok(Self {
            inner: Owned::new(RawEventSet { set, guard }),
        })
    }

    /// The raw NVML set, for calls this crate does not wrap.
    pub fn as_raw(&self) -> nvmlEventSet_t {
        self.inner.set
    }

    /// Adds `device` with the event kinds `types` (keep to
    /// [`Device::supported_event_types`]: an unsupported kind is NVML's not-supported error).
    #[doc = nvml_sys::api_doc!(nvmlDeviceRegisterEvents)]
    #[doc(alias = "nvmlDeviceRegisterEvents")]
    pub fn register(&mut self, device: &Device, types: EventTypes) -> Result<()> {
        // SAFETY: the set and the device handle are live while NVML is initialised, which
        // both `self` and `device` ensure.
        unsafe {
            nvml!(
                self.inner.guard.nvml(),
                nvmlDeviceRegisterEvents(device.handle, types.bits(), self.inner.set)
            )
        }
    }

    /// Waits up to `timeout` (whole milliseconds, at most `u32::MAX`) for the next event;
    /// `None` when none came (NVML also returns early on a signal). A zero timeout polls.
    #[doc = nvml_sys::api_doc!(nvmlEventSetWait_v2)]
    #[doc(alias = "nvmlEventSetWait_v2")]
    pub fn wait(&mut self, timeout: Duration) -> Result<Option<Event>> {
        let milliseconds = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        let mut data = nvml_sys::nvmlEventData_t::default();
        // SAFETY: the set is live; `data` is a valid out-pointer.
        let came = unsafe {
            nvml_waited!(
                self.inner.guard.nvml(),
                nvmlEventSetWait_v2(self.inner.set, &mut data, milliseconds)
            )
        }?;
        if !came {
            return Ok(None);
        }
        Ok(Some(Event {
            device: Device::from_handle(data.device, Arc::clone(&self.inner.guard)),
            types: EventTypes::from_bits_retain(data.eventType),
            data: data.eventData,
            gpu_instance_id: (data.gpuInstanceId != u32::MAX).then_some(data.gpuInstanceId),
            compute_instance_id: (data.computeInstanceId != u32::MAX)
                .then_some(data.computeInstanceId),
        }))
    }

    /// Frees the set, returning NVML's error if freeing fails (dropping logs it).
    #[doc = nvml_sys::api_doc!(nvmlEventSetFree)]
    #[doc(alias = "nvmlEventSetFree")]
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

impl Device {
    /// The event kinds this device can report to an [`EventSet`].
    #[doc = nvml_sys::api_doc!(nvmlDeviceGetSupportedEventTypes)]
    #[doc(alias = "nvmlDeviceGetSupportedEventTypes")]
    pub fn supported_event_types(&self) -> Result<EventTypes> {
        query!(self, nvmlDeviceGetSupportedEventTypes, 0,).map(EventTypes::from_bits_retain)
    }
}
