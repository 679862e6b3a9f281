//! What the loaded NVRTC is: its version and the architectures it compiles for.

use std::ffi::c_int;
use std::sync::OnceLock;

use crate::error::{Error, Result, nvrtc};

/// The loaded NVRTC's version, `(major, minor)` (`(13, 0)`); asked once, then remembered.
///
/// ```no_run
/// let (major, minor) = cuda_safe::nvrtc_version()?;
/// println!("NVRTC {major}.{minor}");
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[doc = nvrtc_sys::api_doc!(nvrtcVersion)]
#[doc(alias = "nvrtcVersion")]
pub fn nvrtc_version() -> Result<(u32, u32)> {
    static VERSION: OnceLock<(u32, u32)> = OnceLock::new();
    if let Some(version) = VERSION.get() {
        return Ok(*version);
    }
    let nvrtc = nvrtc_sys::nvrtc()?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both pointers are valid places for an int.
    unsafe { nvrtc!(nvrtc, nvrtcVersion(&mut major, &mut minor)) }?;
    Ok(*VERSION.get_or_init(|| (non_negative(major), non_negative(minor))))
}

/// Refuses `feature` when the loaded NVRTC is older than `since`, naming both versions.
///
/// # Errors
///
/// [`Error::Unsupported`] for an older NVRTC; [`Error::Load`] without one.
pub(super) fn require_nvrtc(feature: &'static str, since: (u32, u32)) -> Result<()> {
    let loaded = nvrtc_version()?;
    refuse_older(feature, since, loaded)
}

/// [`require_nvrtc`] with the loaded version given.
pub(super) fn refuse_older(
    feature: &'static str,
    (major, minor): (u32, u32),
    loaded: (u32, u32),
) -> Result<()> {
    if loaded >= (major, minor) {
        return Ok(());
    }
    Err(Error::unsupported(
        feature,
        format!(
            "it needs NVRTC {major}.{minor}, and NVRTC {}.{} is loaded",
            loaded.0, loaded.1
        ),
    ))
}

/// The architectures the loaded NVRTC compiles for, ascending (`[75, 80, 86, ..., 90, ...]`).
#[doc = nvrtc_sys::api_doc!(nvrtcGetSupportedArchs)]
#[doc = nvrtc_sys::api_doc!(nvrtcGetNumSupportedArchs)]
#[doc(alias = "nvrtcGetSupportedArchs", alias = "nvrtcGetNumSupportedArchs")]
pub fn nvrtc_supported_archs() -> Result<Vec<u32>> {
    let nvrtc = nvrtc_sys::nvrtc()?;
    let mut count: c_int = 0;
    // SAFETY: `count` is a valid place for an int.
    unsafe { nvrtc!(nvrtc, nvrtcGetNumSupportedArchs(&mut count)) }?;
    let mut archs: Vec<c_int> = vec![0; usize::try_from(count).unwrap_or(0)];
    if archs.is_empty() {
        return Ok(Vec::new());
    }
    // SAFETY: `archs` holds the `count` ints NVRTC said it would write.
    unsafe { nvrtc!(nvrtc, nvrtcGetSupportedArchs(archs.as_mut_ptr())) }?;
    Ok(archs.into_iter().map(non_negative).collect())
}

fn non_negative(value: c_int) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::refuse_older;

    #[test]
    fn an_older_nvrtc_is_refused_naming_both_versions() {
        assert!(refuse_older("x", (12, 8), (12, 8)).is_ok());
        assert!(refuse_older("x", (12, 8), (13, 0)).is_ok());
        let error = refuse_older("bundled headers", (13, 3), (13, 0)).unwrap_err();
        assert!(error.is_not_supported(), "{error}");
        assert_eq!(
            error.to_string(),
            "bundled headers is not supported here: it needs NVRTC 13.3, and NVRTC 13.0 is loaded"
        );
    }
}
