//! NCCL's failures ([`NcclError`], inside [`cuda_safe::Error::Library`]), and the macros that
//! call an entry point and check it under the function's own name.

use std::borrow::Cow;
use std::ffi::{CStr, c_char};
use std::fmt;
use std::time::Duration;

use cuda_safe::{Error, LibraryFailure, Result};
use cuda_sys::LoadError;
use nccl_sys::ncclResult_t;

/// A failure of NCCL or of a job's bootstrap. It reaches callers inside
/// [`cuda_safe::Error::Library`]: `error.library_error::<NcclError>()` gives it back.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum NcclError {
    /// An NCCL call failed. `last_error` is `ncclGetLastError`'s text, when NCCL had one.
    #[error("{api} failed: {name}{}", Detail(last_error.as_deref()))]
    Call {
        /// The NCCL function (`ncclAllReduce`).
        api: &'static str,
        /// The raw result code.
        code: ncclResult_t,
        /// `ncclGetErrorString` of the code.
        name: &'static str,
        /// `ncclGetLastError`: NCCL's message about the last failure.
        last_error: Option<Box<str>>,
    },
    /// A communicator reported an asynchronous error (`ncclCommGetAsyncError`): a peer died,
    /// the network failed, or a collective went wrong on the GPU. The communicator cannot be
    /// used any more; the call that saw this has aborted it.
    #[error("the NCCL communicator failed: {name}{}", Detail(last_error.as_deref()))]
    Async {
        /// The asynchronous error's code.
        code: ncclResult_t,
        /// `ncclGetErrorString` of the code.
        name: &'static str,
        /// `ncclGetLastError`: NCCL's message about the failure.
        last_error: Option<Box<str>>,
    },
    /// NCCL work did not finish within the time given; the communicator was aborted, so no
    /// rank waits for a dead peer forever.
    #[error(
        "NCCL work did not finish within {waited:?} (a peer may be dead); the communicator was \
         aborted"
    )]
    Timeout {
        /// How long the caller waited.
        waited: Duration,
    },
    /// Starting the ranks of a job failed: a launcher variable (`RANK`, `WORLD_SIZE`,
    /// `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`) is missing or invalid, or exchanging the
    /// unique id with rank 0 failed.
    #[error("NCCL bootstrap: {0}")]
    Bootstrap(Cow<'static, str>),
}

impl NcclError {
    /// NCCL's result code, for [`NcclError::Call`] and [`NcclError::Async`].
    pub fn code(&self) -> Option<ncclResult_t> {
        match self {
            Self::Call { code, .. } | Self::Async { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Builds [`NcclError::Call`], asking NCCL for the code's name and its last error's text.
    #[cold]
    #[inline(never)]
    pub fn call(api: &'static str, code: ncclResult_t) -> Self {
        let (name, last_error) = texts(code);
        Self::Call {
            api,
            code,
            name,
            last_error,
        }
    }

    /// Builds [`NcclError::Async`] for a communicator's asynchronous error.
    #[cold]
    #[inline(never)]
    pub fn asynchronous(code: ncclResult_t) -> Self {
        let (name, last_error) = texts(code);
        Self::Async {
            code,
            name,
            last_error,
        }
    }
}

impl LibraryFailure for NcclError {
    fn library(&self) -> &'static str {
        "NCCL"
    }

    fn is_out_of_memory(&self) -> bool {
        // ncclSystemError covers a failed allocation too, but not only that: NCCL has no code
        // of its own for memory.
        false
    }

    fn is_not_supported(&self) -> bool {
        // ncclInvalidUsage is the caller's; NCCL says "not supported" through ncclInternalError
        // or ncclInvalidArgument texts only, so no code maps here.
        false
    }
}

impl From<NcclError> for Error {
    fn from(error: NcclError) -> Self {
        Error::from_library(error)
    }
}

/// [`NcclError::Bootstrap`] as the core's error.
pub(crate) fn bootstrap_error(text: impl Into<Cow<'static, str>>) -> Error {
    NcclError::Bootstrap(text.into()).into()
}

/// `: <last error>` after an NCCL error's name, when NCCL said more.
struct Detail<'a>(Option<&'a str>);

impl fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(text) => write!(f, " ({text})"),
            None => Ok(()),
        }
    }
}

/// Calls an NCCL entry point and checks it, naming the function once:
/// `unsafe { nccl!(nccl, ncclGroupEnd()) }`. `ncclInProgress` counts as success: a
/// non-blocking communicator's call was accepted and finishes in the background (its
/// completion and its errors are polled with `ncclCommGetAsyncError`).
macro_rules! nccl {
    ($nccl:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check(stringify!($function), $nccl.$function($($argument),*))
    };
}

/// [`nccl!`] for a call that may finish in the background: `Ok(true)` when NCCL answered
/// `ncclInProgress` (a non-blocking communicator, whose completion is then polled with
/// `ncclCommGetAsyncError`), `Ok(false)` when it is done.
macro_rules! nccl_queued {
    ($nccl:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $nccl.$function($($argument),*) {
            Ok(::nccl_sys::ncclResult_t::ncclInProgress) => Ok(true),
            other => $crate::error::check(stringify!($function), other).map(|()| false),
        }
    };
}

pub(crate) use {nccl, nccl_queued};

/// Turns an NCCL call's outcome into `Result<()>` (through [`nccl!`]).
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<ncclResult_t, LoadError>) -> Result<()> {
    match result {
        Ok(ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress) => Ok(()),
        Ok(code) => Err(NcclError::call(api, code).into()),
        Err(error) => Err(Error::Load(error)),
    }
}

/// `ncclGetErrorString` of `code` and `ncclGetLastError`'s text (for the last failure on this
/// thread or anywhere: NCCL keeps one), when NCCL is loaded.
fn texts(code: ncclResult_t) -> (&'static str, Option<Box<str>>) {
    let Ok(nccl) = nccl_sys::nccl() else {
        return ("an NCCL error (NCCL is not loaded)", None);
    };
    // SAFETY: ncclGetErrorString accepts any code and returns a static string.
    let name = unsafe { nccl.ncclGetErrorString(code) }
        .ok()
        // SAFETY: the string is static and NUL-terminated, owned by NCCL, which is never
        // unloaded.
        .and_then(|text| unsafe { static_str(text) })
        .unwrap_or("an unknown NCCL error code");
    // SAFETY: ncclGetLastError takes a communicator or null and returns a NUL-terminated
    // string NCCL owns; it is copied at once.
    let last = unsafe { nccl.ncclGetLastError(std::ptr::null_mut()) }
        .ok()
        .filter(|text| !text.is_null())
        // SAFETY: non-null, NUL-terminated, alive until NCCL's next error; copied here.
        .map(|text| unsafe { CStr::from_ptr(text) }.to_string_lossy())
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .map(String::into_boxed_str);
    (name, last)
}

/// A static C string as `&str` (`None` for null or invalid UTF-8).
///
/// # Safety
///
/// `text` is null or a NUL-terminated string that lives for the rest of the process.
unsafe fn static_str(text: *const c_char) -> Option<&'static str> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null and, by the caller's promise, NUL-terminated and static.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_errors_are_library_errors_of_the_core() {
        let error: Error = NcclError::Timeout {
            waited: Duration::from_secs(3),
        }
        .into();
        assert!(
            error.to_string().contains("did not finish within 3s"),
            "{error}"
        );
        assert!(matches!(
            error.library_error::<NcclError>(),
            Some(NcclError::Timeout { .. })
        ));
        let call = NcclError::Call {
            api: "ncclAllReduce",
            code: ncclResult_t::ncclInvalidUsage,
            name: "invalid usage",
            last_error: Some("the peer went away".into()),
        };
        assert_eq!(call.code(), Some(ncclResult_t::ncclInvalidUsage));
        assert_eq!(
            call.to_string(),
            "ncclAllReduce failed: invalid usage (the peer went away)"
        );
        assert_eq!(
            bootstrap_error("MASTER_PORT=0").to_string(),
            "NCCL bootstrap: MASTER_PORT=0"
        );
    }
}
