//! cuFFT's failures ([`CufftError`], inside [`cuda_safe::Error::Library`]), and the macro
//! that calls an entry point and checks it under the function's own name.

use cuda_safe::{Error, LibraryFailure, Result};
use cuda_sys::LoadError;
use cufft_sys::cufftResult;

/// A cuFFT call failed. It reaches callers inside [`cuda_safe::Error::Library`]:
/// `error.library_error::<CufftError>()` gives it back. The status stays a number
/// ([`code`](Self::code)), named from `cufft.h`: a newer cuFFT's new status is a value, not an
/// error of its own.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{api} failed: {name} ({message})")]
#[non_exhaustive]
pub struct CufftError {
    /// The function (`cufftMakePlanMany64`).
    pub api: &'static str,
    /// The raw status.
    pub code: cufftResult,
    /// The status's name in `cufft.h` (`CUFFT_INVALID_SIZE`).
    pub name: &'static str,
    /// What the status means, from the header's comments (cuFFT has no call that describes
    /// it).
    pub message: &'static str,
}

impl CufftError {
    /// Builds the error, naming the status from `cufft.h`.
    #[cold]
    #[inline(never)]
    pub fn new(api: &'static str, code: cufftResult) -> Self {
        let (name, message) = status_text(code);
        Self {
            api,
            code,
            name,
            message,
        }
    }
}

impl LibraryFailure for CufftError {
    fn library(&self) -> &'static str {
        "cuFFT"
    }

    fn is_out_of_memory(&self) -> bool {
        self.code == cufftResult::CUFFT_ALLOC_FAILED
    }

    fn is_not_supported(&self) -> bool {
        matches!(
            self.code,
            cufftResult::CUFFT_NOT_SUPPORTED | cufftResult::CUFFT_NOT_IMPLEMENTED
        )
    }
}

impl From<CufftError> for Error {
    fn from(error: CufftError) -> Self {
        Error::from_library(error)
    }
}

/// Calls a cuFFT entry point and checks its status, naming the function once:
/// `unsafe { cufft!(cufft, cufftSetStream(plan, stream)) }` is `Result<()>`. Debug builds
/// first refuse a call made from inside a host callback.
macro_rules! cufft {
    ($cufft:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match ::cuda_safe::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::fft::error::check(
                stringify!($function),
                $cufft.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

pub(crate) use cufft;

/// Turns a cuFFT call's outcome into `Result<()>` (through [`cufft!`]); the error path is out
/// of line.
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<cufftResult, LoadError>) -> Result<()> {
    match result {
        Ok(cufftResult::CUFFT_SUCCESS) => Ok(()),
        Ok(code) => Err(CufftError::new(api, code).into()),
        Err(error) => Err(Error::Load(error)),
    }
}

/// The name and meaning of a cuFFT status, as `cufft.h` gives them (both majors: 3, 10, 12 and
/// 15 are gone from cuFFT 12's header, 17 to 20 new in it).
fn status_text(code: cufftResult) -> (&'static str, &'static str) {
    match code.0 {
        0 => ("CUFFT_SUCCESS", "the operation was successful"),
        1 => (
            "CUFFT_INVALID_PLAN",
            "cuFFT was passed an invalid plan handle",
        ),
        2 => (
            "CUFFT_ALLOC_FAILED",
            "cuFFT failed to allocate GPU or CPU memory",
        ),
        3 => ("CUFFT_INVALID_TYPE", "an invalid transform type"),
        4 => (
            "CUFFT_INVALID_VALUE",
            "an invalid pointer or parameter was passed",
        ),
        5 => (
            "CUFFT_INTERNAL_ERROR",
            "a driver or internal cuFFT library error",
        ),
        6 => (
            "CUFFT_EXEC_FAILED",
            "cuFFT failed to execute an FFT on the GPU",
        ),
        7 => (
            "CUFFT_SETUP_FAILED",
            "the cuFFT library failed to initialize",
        ),
        8 => ("CUFFT_INVALID_SIZE", "an invalid transform size"),
        9 => ("CUFFT_UNALIGNED_DATA", "unaligned data"),
        10 => (
            "CUFFT_INCOMPLETE_PARAMETER_LIST",
            "missing parameters in the call",
        ),
        11 => (
            "CUFFT_INVALID_DEVICE",
            "the plan ran on another GPU than the one it was made on",
        ),
        12 => ("CUFFT_PARSE_ERROR", "an internal plan database error"),
        13 => (
            "CUFFT_NO_WORKSPACE",
            "no work area was set before the plan ran",
        ),
        14 => (
            "CUFFT_NOT_IMPLEMENTED",
            "the function does not implement the parameters given",
        ),
        15 => ("CUFFT_LICENSE_ERROR", "a license error"),
        16 => (
            "CUFFT_NOT_SUPPORTED",
            "the operation is not supported for the parameters given",
        ),
        17 => (
            "CUFFT_MISSING_DEPENDENCY",
            "a library cuFFT needs could not be loaded",
        ),
        18 => ("CUFFT_NVRTC_FAILURE", "an NVRTC call of cuFFT failed"),
        19 => (
            "CUFFT_NVJITLINK_FAILURE",
            "an nvJitLink call of cuFFT failed",
        ),
        20 => ("CUFFT_NVSHMEM_FAILURE", "an NVSHMEM call of cuFFT failed"),
        _ => ("an unknown cuFFT status", "newer than these bindings"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cufft_errors_name_the_call_and_the_status() {
        let error: Error =
            CufftError::new("cufftMakePlanMany64", cufftResult::CUFFT_INVALID_SIZE).into();
        assert_eq!(
            error.to_string(),
            "cufftMakePlanMany64 failed: CUFFT_INVALID_SIZE (an invalid transform size)"
        );
        assert_eq!(
            error.library_error::<CufftError>().map(|inner| inner.code),
            Some(cufftResult::CUFFT_INVALID_SIZE)
        );
        assert!(!error.is_out_of_memory() && !error.is_not_supported());
        let oom: Error = CufftError::new("x", cufftResult(2)).into();
        assert!(oom.is_out_of_memory());
        let unsupported: Error = CufftError::new("x", cufftResult(16)).into();
        assert!(unsupported.is_not_supported());
        assert_eq!(status_text(cufftResult(999)).0, "an unknown cuFFT status");
    }
}
