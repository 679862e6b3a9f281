//! The crate's one error type.
//!
//! ```
//! use cuda_safe::Error;
//!
//! let error = Error::invalid_argument("copy of 8 bytes into a 4-byte buffer");
//! assert!(error.to_string().contains("8 bytes"));
//! assert_eq!(error.cuda_code(), None);
//! ```

use std::borrow::Cow;
use std::ffi::{CStr, c_char};
use std::fmt;

use crate::sys::{CUresult, CudaVersion, LoadError};
use crate::{nvml_sys, nvrtc_sys};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
///
/// Errors from a library carry the API that failed, the raw code (a newtype, so codes newer
/// than this crate's headers are kept) and the library's own name and message for it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed.
    #[error("{api} failed: {name} ({message})")]
    Cuda {
        /// The driver function, as exported (`cuMemAllocFromPoolAsync`).
        api: &'static str,
        /// The raw result code.
        code: CUresult,
        /// `cuGetErrorName` of the code (`CUDA_ERROR_OUT_OF_MEMORY`).
        name: &'static str,
        /// `cuGetErrorString` of the code (`out of memory`).
        message: &'static str,
    },
    /// An NVRTC call failed; `log` holds the compiler log when there is one.
    #[error("{api} failed: {message}{}", LogSuffix(log.as_deref()))]
    Nvrtc {
        /// The NVRTC function (`nvrtcCompileProgram`).
        api: &'static str,
        /// The raw result code.
        code: nvrtc_sys::nvrtcResult,
        /// `nvrtcGetErrorString` of the code.
        message: &'static str,
        /// The program log, for compile failures.
        log: Option<Box<str>>,
    },
    /// An NVML call failed.
    #[error("{api} failed: {message}")]
    Nvml {
        /// The NVML function (`nvmlDeviceGetPowerUsage`).
        api: &'static str,
        /// The raw return code.
        code: nvml_sys::nvmlReturn_t,
        /// `nvmlErrorString` of the code.
        message: &'static str,
    },
    /// A library could not be loaded; every path tried is listed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The argument was refused before it reached the driver.
    #[error("invalid argument: {0}")]
    InvalidArgument(Cow<'static, str>),
    /// The feature needs a newer driver, toolkit or device than this one.
    #[error("{feature} is not supported here: {reason}")]
    Unsupported {
        /// What was asked for (`green-context workqueues`).
        feature: &'static str,
        /// What is missing (`needs CUDA 13.1, the driver has 13.0`).
        reason: Cow<'static, str>,
    },
    /// `Event::elapsed` on an event created without timing.
    #[error("the event was created with timing disabled")]
    EventNotTimed,
    /// `Event::elapsed` on an event that was never recorded.
    #[error("the event has not been recorded")]
    EventNotRecorded,
    /// A file operation of a program cache failed.
    #[error("program cache at {}: {source}", path.display())]
    CacheIo {
        /// The file or directory the operation was on.
        path: std::path::PathBuf,
        /// The operating system's error (shared, so that `Error` stays `Clone`).
        source: std::sync::Arc<std::io::Error>,
    },
}

impl Error {
    /// An [`Error::InvalidArgument`] with this explanation.
    pub fn invalid_argument(what: impl Into<Cow<'static, str>>) -> Self {
        Self::InvalidArgument(what.into())
    }

    /// An [`Error::Unsupported`].
    pub fn unsupported(feature: &'static str, reason: impl Into<Cow<'static, str>>) -> Self {
        Self::Unsupported {
            feature,
            reason: reason.into(),
        }
    }

    /// The driver's result code, for [`Error::Cuda`].
    pub fn cuda_code(&self) -> Option<CUresult> {
        match self {
            Self::Cuda { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether a library lacks the entry point this call needs (an older driver or toolkit).
    pub fn is_symbol_missing(&self) -> bool {
        matches!(self, Self::Load(LoadError::SymbolMissing { .. }))
    }

    /// The CUDA version that introduced a missing symbol, when known.
    pub fn missing_since(&self) -> Option<CudaVersion> {
        match self {
            Self::Load(LoadError::SymbolMissing { since, .. }) => *since,
            _ => None,
        }
    }

    /// Builds [`Error::Cuda`], asking the driver for the code's name and message.
    #[cold]
    #[inline(never)]
    pub fn cuda(api: &'static str, code: CUresult) -> Self {
        let (name, message) = match crate::sys::driver() {
            Ok(driver) => {
                let mut name: *const c_char = std::ptr::null();
                let mut message: *const c_char = std::ptr::null();
                // SAFETY: both out-pointers are valid; on failure they stay null.
                unsafe {
                    let _ = driver.cuGetErrorName(code, &mut name);
                    let _ = driver.cuGetErrorString(code, &mut message);
                }
                // SAFETY: the driver returns pointers to static, NUL-terminated strings that
                // live as long as the library, which is never unloaded.
                unsafe { (static_str(name), static_str(message)) }
            }
            Err(_) => (None, None),
        };
        Self::Cuda {
            api,
            code,
            name: name.unwrap_or("an unknown CUDA error code"),
            message: message.unwrap_or("no message from the driver"),
        }
    }

    /// Builds [`Error::Nvrtc`], asking NVRTC for the code's message.
    #[cold]
    #[inline(never)]
    pub fn nvrtc(api: &'static str, code: nvrtc_sys::nvrtcResult, log: Option<Box<str>>) -> Self {
        let message = nvrtc_sys::nvrtc()
            .ok()
            // SAFETY: nvrtcGetErrorString accepts any code and returns a static string.
            .and_then(|nvrtc| unsafe { nvrtc.nvrtcGetErrorString(code) }.ok())
            // SAFETY: the string is static and NUL-terminated.
            .and_then(|text| unsafe { static_str(text) });
        Self::Nvrtc {
            api,
            code,
            message: message.unwrap_or("unknown NVRTC error"),
            log,
        }
    }

    /// Builds [`Error::Nvml`], asking NVML for the code's message.
    #[cold]
    #[inline(never)]
    pub fn nvml(api: &'static str, code: nvml_sys::nvmlReturn_t) -> Self {
        let message = nvml_sys::nvml()
            .ok()
            // SAFETY: nvmlErrorString accepts any code and returns a static string.
            .and_then(|nvml| unsafe { nvml.nvmlErrorString(code) }.ok())
            // SAFETY: the string is static and NUL-terminated.
            .and_then(|text| unsafe { static_str(text) });
        Self::Nvml {
            api,
            code,
            message: message.unwrap_or("unknown NVML error"),
        }
    }

    /// NVML's return code, for [`Error::Nvml`].
    pub fn nvml_code(&self) -> Option<nvml_sys::nvmlReturn_t> {
        match self {
            Self::Nvml { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether NVML said this GPU or driver does not support the query
    /// (`NVML_ERROR_NOT_SUPPORTED`). A driver that lacks the function altogether gives
    /// [`Error::Load`] with `SymbolMissing` instead: see [`Error::is_symbol_missing`].
    pub fn is_not_supported(&self) -> bool {
        self.nvml_code() == Some(nvml_sys::nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED)
    }
}

/// A `&'static str` view of a library's static C string, or `None` for null or non-UTF-8.
///
/// # Safety
///
/// `text` must be null or point to a NUL-terminated string that is never freed.
unsafe fn static_str(text: *const c_char) -> Option<&'static str> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated and never freed, per the caller.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

/// Turns a driver call's outcome into `Result<()>`; the error path is out of line.
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<CUresult, LoadError>) -> Result<()> {
    match result {
        Ok(CUresult::CUDA_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::cuda(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns a query's outcome into "done?": `CUDA_SUCCESS` is done, `CUDA_ERROR_NOT_READY` is not
/// yet, anything else an error.
#[inline]
pub(crate) fn check_ready(api: &'static str, result: Result<CUresult, LoadError>) -> Result<bool> {
    match result {
        Ok(CUresult::CUDA_ERROR_NOT_READY) => Ok(false),
        other => check(api, other).map(|()| true),
    }
}

/// Turns an NVRTC call's outcome into `Result<()>`.
#[inline]
pub(crate) fn check_nvrtc(
    api: &'static str,
    result: Result<nvrtc_sys::nvrtcResult, LoadError>,
) -> Result<()> {
    match result {
        Ok(nvrtc_sys::nvrtcResult::NVRTC_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::nvrtc(api, code, None)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns an NVML call's outcome into `Result<()>`.
#[inline]
pub(crate) fn check_nvml(
    api: &'static str,
    result: Result<nvml_sys::nvmlReturn_t, LoadError>,
) -> Result<()> {
    match result {
        Ok(nvml_sys::nvmlReturn_t::NVML_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::nvml(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

struct LogSuffix<'a>(Option<&'a str>);

impl fmt::Display for LogSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(log) if !log.trim().is_empty() => write!(f, "\n{}", log.trim_end()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn cuda_error_names_the_api_and_code_without_a_driver() {
        let error = Error::cuda("cuMemAlloc_v2", CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        assert_eq!(error.cuda_code(), Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(
            error.to_string().starts_with("cuMemAlloc_v2 failed: "),
            "{error}"
        );
    }

    #[test]
    fn check_maps_success_codes_and_load_errors() {
        assert!(check("cuInit", Ok(CUresult::CUDA_SUCCESS)).is_ok());
        let error = check("cuInit", Ok(CUresult::CUDA_ERROR_NO_DEVICE)).unwrap_err();
        assert_eq!(error.cuda_code(), Some(CUresult::CUDA_ERROR_NO_DEVICE));
        let missing = LoadError::SymbolMissing {
            library: "the CUDA driver (libcuda)",
            path: PathBuf::from("libcuda.so.1"),
            symbol: "cuDevSmResourceSplit",
            since: Some(CudaVersion(13010)),
        };
        let error = check("cuDevSmResourceSplit", Err(missing)).unwrap_err();
        assert!(error.is_symbol_missing());
        assert_eq!(error.missing_since(), Some(CudaVersion(13010)));
        assert!(
            error.to_string().contains("introduced in CUDA 13.1"),
            "{error}"
        );
    }

    #[test]
    fn nvrtc_error_shows_the_log() {
        let error = Error::Nvrtc {
            api: "nvrtcCompileProgram",
            code: nvrtc_sys::nvrtcResult::NVRTC_ERROR_COMPILATION,
            message: "NVRTC_ERROR_COMPILATION",
            log: Some("k.cu(1): error: expected a \";\"\n".into()),
        };
        let text = error.to_string();
        assert!(text.contains("nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION\nk.cu(1)"));
    }

    #[test]
    fn unknown_codes_are_kept() {
        let error = check_nvml(
            "nvmlDeviceGetPowerUsage",
            Ok(nvml_sys::nvmlReturn_enum(12_345)),
        );
        match error.unwrap_err() {
            Error::Nvml { code, .. } => assert_eq!(code.0, 12_345),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn errors_are_send_sync_and_small() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<Error>();
        assert!(size_of::<Error>() <= 64, "{}", size_of::<Error>());
    }
}
