//! NVRTC's version as a cache key names it: the [`Learner`] for NVRTC
//! ([`library_note`](crate::library_note) learns it from a program cache's note without loading
//! NVRTC where it can).

use std::ffi::{c_int, c_void};

use super::version::nvrtc_version;
use crate::error::Result;
use crate::library_note::{Learner, Loaded};

/// What this process learnt of NVRTC's version. Programs keep no noted copies: a fresh
/// process's hit reads the note and the entry.
pub(crate) static NVRTC: Learner = Learner::new(&nvrtc_sys::LIBNVRTC, "NVRTC", ask, loaded, false);

/// Loads NVRTC and asks its version, as a cache key spells it (`"13.0"`).
fn ask() -> Result<String> {
    let (major, minor) = nvrtc_version()?;
    Ok(format!("{major}.{minor}"))
}

/// The loaded NVRTC: the candidate it opened as, and the address of `nvrtcVersion`.
fn loaded() -> Option<Loaded> {
    let library = nvrtc_sys::nvrtc().ok()?.library();
    let index = library
        .entry_points()
        .iter()
        .position(|entry| entry.name() == "nvrtcVersion")?;
    type Version = unsafe extern "C" fn(*mut c_int, *mut c_int) -> nvrtc_sys::nvrtcResult;
    // SAFETY: `nvrtcVersion(int*, int*)` has this signature; only its address is used.
    let function = unsafe { library.get::<Version>(index) }.ok()?;
    Some((library.path(), function as *const c_void))
}
