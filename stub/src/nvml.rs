//! The stub NVML's event controls (`stub/c/libnvml_events_stub.c`): events injected as the
//! driver would raise them, and what the tests read back (live event sets, threads waiting).

use std::ffi::c_int;

/// The control functions of the stub NVML's event sets ([`Stub::nvml_events`](crate::Stub::nvml_events)).
#[derive(Debug, Clone, Copy)]
pub struct NvmlEvents {
    inject: unsafe extern "C" fn(u64, u64) -> c_int,
    sets: unsafe extern "C" fn() -> i64,
    waiting: unsafe extern "C" fn() -> c_int,
}

impl NvmlEvents {
    /// Looks the functions up in the loaded stub.
    pub(crate) fn open(library: &libloading::Library) -> Self {
        macro_rules! function {
            ($name:literal) => {
                // SAFETY: the stub exports `$name` with the C signature of the field it fills
                // (libnvml_events_stub.c); the library is never unloaded (the `Stub` holds it
                // for the process).
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .expect(concat!("the stub exports ", $name))
            };
        }
        Self {
            inject: function!("stub_nvml_inject_event"),
            sets: function!("stub_nvml_event_sets"),
            waiting: function!("stub_nvml_waiting"),
        }
    }

    /// Raises an event of the kind `types` (one `nvmlEventType*` bit) with `data` on the GPU:
    /// every live set registered for it queues it and its waiters wake. Returns how many
    /// sets queued it.
    pub fn inject(&self, types: u64, data: u64) -> usize {
        // SAFETY: the function takes two integers and touches only the stub's event state.
        usize::try_from(unsafe { (self.inject)(types, data) }).unwrap_or(0)
    }

    /// Event sets created and not freed.
    pub fn live_sets(&self) -> i64 {
        // SAFETY: as `inject`.
        unsafe { (self.sets)() }
    }

    /// Threads blocked in `nvmlEventSetWait_v2` now.
    pub fn waiting(&self) -> usize {
        // SAFETY: as `inject`.
        usize::try_from(unsafe { (self.waiting)() }).unwrap_or(0)
    }
}
