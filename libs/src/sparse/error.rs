//! cuSPARSE's failures ([`CusparseError`], inside [`cuda_safe::Error::Library`]), and the macro
//! that calls an entry point and checks it under the function's own name.

use cuda_safe::{Error, LibraryFailure, Result};
use cuda_sys::LoadError;
use cusparse_sys::cusparseStatus_t;

/// A cuSPARSE call failed. It reaches callers inside [`cuda_safe::Error::Library`]:
/// `error.library_error::<CusparseError>()` gives it back. The status stays a number
/// ([`code`](Self::code)), named from `cusparse.h`: a newer cuSPARSE's new status is a value,
/// not an error of its own.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{api} failed: {name} ({message})")]
#[non_exhaustive]
pub struct CusparseError {
    /// The function (`cusparseSpMV`).
    pub api: &'static str,
    /// The raw status.
    pub code: cusparseStatus_t,
    /// The status's name in `cusparse.h` (`CUSPARSE_STATUS_INVALID_VALUE`).
    pub name: &'static str,
    /// What the status means, from cuSPARSE's documentation.
    pub message: &'static str,
}

impl CusparseError {
    /// Builds the error, naming the status from `cusparse.h` (without asking the library, so
    /// a failure is formatted even when cuSPARSE is gone).
    #[cold]
    #[inline(never)]
    pub fn new(api: &'static str, code: cusparseStatus_t) -> Self {
        let (name, message) = status_text(code);
        Self {
            api,
            code,
            name,
            message,
        }
    }
}

impl LibraryFailure for CusparseError {
    fn library(&self) -> &'static str {
        "cuSPARSE"
    }

    fn is_out_of_memory(&self) -> bool {
        matches!(
            self.code,
            cusparseStatus_t::CUSPARSE_STATUS_ALLOC_FAILED
                | cusparseStatus_t::CUSPARSE_STATUS_INSUFFICIENT_RESOURCES
        )
    }

    fn is_not_supported(&self) -> bool {
        matches!(
            self.code,
            cusparseStatus_t::CUSPARSE_STATUS_NOT_SUPPORTED
                | cusparseStatus_t::CUSPARSE_STATUS_ARCH_MISMATCH
                | cusparseStatus_t::CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED
        )
    }
}

impl From<CusparseError> for Error {
    fn from(error: CusparseError) -> Self {
        Error::from_library(error)
    }
}

/// Calls a cuSPARSE entry point and checks its status, naming the function once:
/// `unsafe { cusparse!(cusparse, cusparseSetStream(handle, stream)) }` is `Result<()>`. Debug
/// builds first refuse a call made from inside a host callback.
macro_rules! cusparse {
    ($cusparse:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match ::cuda_safe::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::sparse::error::check(
                stringify!($function),
                $cusparse.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

pub(crate) use cusparse;

/// Turns a cuSPARSE call's outcome into `Result<()>` (through [`cusparse!`]); the error path
/// is out of line.
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<cusparseStatus_t, LoadError>) -> Result<()> {
    match result {
        Ok(cusparseStatus_t::CUSPARSE_STATUS_SUCCESS) => Ok(()),
        Ok(code) => Err(CusparseError::new(api, code).into()),
        Err(error) => Err(Error::Load(error)),
    }
}

/// A status's name and meaning, as `cusparse.h` and cuSPARSE's documentation give them.
fn status_text(code: cusparseStatus_t) -> (&'static str, &'static str) {
    match code.0 {
        0 => (
            "CUSPARSE_STATUS_SUCCESS",
            "the operation completed successfully",
        ),
        1 => (
            "CUSPARSE_STATUS_NOT_INITIALIZED",
            "the library was not initialized",
        ),
        2 => (
            "CUSPARSE_STATUS_ALLOC_FAILED",
            "the resource allocation failed",
        ),
        3 => (
            "CUSPARSE_STATUS_INVALID_VALUE",
            "an unsupported value or parameter was passed",
        ),
        4 => (
            "CUSPARSE_STATUS_ARCH_MISMATCH",
            "the device lacks a feature the function needs",
        ),
        5 => (
            "CUSPARSE_STATUS_MAPPING_ERROR",
            "an access to GPU memory space failed",
        ),
        6 => (
            "CUSPARSE_STATUS_EXECUTION_FAILED",
            "the GPU program failed to execute",
        ),
        7 => (
            "CUSPARSE_STATUS_INTERNAL_ERROR",
            "an internal operation failed",
        ),
        8 => (
            "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
            "the matrix type is not supported",
        ),
        9 => ("CUSPARSE_STATUS_ZERO_PIVOT", "a zero pivot was found"),
        10 => (
            "CUSPARSE_STATUS_NOT_SUPPORTED",
            "the operation or data type combination is not supported",
        ),
        11 => (
            "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
            "the resources for the computation were insufficient",
        ),
        _ => ("an unknown cuSPARSE status", "newer than these bindings"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cusparse_errors_name_the_call_and_the_status() {
        let error: Error = CusparseError::new(
            "cusparseSpMV",
            cusparseStatus_t::CUSPARSE_STATUS_NOT_SUPPORTED,
        )
        .into();
        assert_eq!(
            error.to_string(),
            "cusparseSpMV failed: CUSPARSE_STATUS_NOT_SUPPORTED (the operation or data type \
             combination is not supported)"
        );
        assert!(error.is_not_supported() && !error.is_out_of_memory());
        assert_eq!(
            error
                .library_error::<CusparseError>()
                .map(|inner| inner.code),
            Some(cusparseStatus_t::CUSPARSE_STATUS_NOT_SUPPORTED)
        );
        let oom: Error = CusparseError::new("x", cusparseStatus_t(2)).into();
        assert!(oom.is_out_of_memory() && !oom.is_not_supported());
        assert_eq!(
            status_text(cusparseStatus_t(999)).0,
            "an unknown cuSPARSE status"
        );
    }
}
