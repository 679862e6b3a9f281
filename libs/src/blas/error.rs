//! cuBLAS's and cuBLASLt's failures ([`CublasError`], inside [`cuda_safe::Error::Library`]),
//! and the macros that call an entry point and check it under the function's own name.

use std::borrow::Cow;

use cublas_sys::cublasStatus_t;
use cuda_safe::{Error, LibraryFailure, Result};
use cuda_sys::LoadError;

/// A cuBLAS or cuBLASLt failure. It reaches callers inside [`cuda_safe::Error::Library`]:
/// `error.library_error::<CublasError>()` gives it back.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CublasError {
    /// A cuBLAS or cuBLASLt call failed (both libraries answer with `cublasStatus_t`).
    #[error("{api} failed: {name} ({message})")]
    Call {
        /// The function (`cublasGemmEx`, `cublasLtMatmul`).
        api: &'static str,
        /// The raw status.
        code: cublasStatus_t,
        /// The status's name (`CUBLAS_STATUS_NOT_SUPPORTED`).
        name: &'static str,
        /// What the status means.
        message: &'static str,
    },
    /// cuBLASLt refused a matmul plan: it found no algorithm for the shape, types, layouts and
    /// epilogue asked for (or refused one of their descriptors). Nothing was queued.
    #[error("cuBLASLt refused the matmul {shape}: {reason}")]
    MatmulRefused {
        /// The plan asked for: shape, transposes, types and epilogue.
        shape: Box<str>,
        /// Why: the call that refused and its status, or that the heuristic found nothing.
        reason: Cow<'static, str>,
        /// The status cuBLASLt answered, when a call refused.
        code: Option<cublasStatus_t>,
    },
}

impl CublasError {
    /// The status cuBLAS or cuBLASLt answered, when a call failed.
    pub fn code(&self) -> Option<cublasStatus_t> {
        match self {
            Self::Call { code, .. } => Some(*code),
            Self::MatmulRefused { code, .. } => *code,
        }
    }

    /// Builds [`CublasError::Call`], naming the status from `cublas_api.h` (cuBLASLt's
    /// statuses are cuBLAS's; neither library is asked, so a cuBLASLt failure never loads
    /// cuBLAS).
    #[cold]
    #[inline(never)]
    pub fn call(api: &'static str, code: cublasStatus_t) -> Self {
        let (name, message) = status_text(code);
        Self::Call {
            api,
            code,
            name,
            message,
        }
    }
}

impl LibraryFailure for CublasError {
    fn library(&self) -> &'static str {
        "cuBLAS"
    }

    fn is_out_of_memory(&self) -> bool {
        self.code() == Some(cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED)
    }

    fn is_not_supported(&self) -> bool {
        match self {
            Self::Call { code, .. } => matches!(
                *code,
                cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED
                    | cublasStatus_t::CUBLAS_STATUS_ARCH_MISMATCH
            ),
            Self::MatmulRefused { .. } => true,
        }
    }
}

impl From<CublasError> for Error {
    fn from(error: CublasError) -> Self {
        Error::from_library(error)
    }
}

/// Calls a cuBLAS entry point and checks its status, naming the function once:
/// `unsafe { cublas!(cublas, cublasSetStream_v2(handle, stream)) }` is `Result<()>`. Debug
/// builds first refuse a call made from inside a host callback, as `cuda_safe::cu!` does.
macro_rules! cublas {
    ($cublas:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match ::cuda_safe::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::blas::error::check(
                stringify!($function),
                $cublas.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

/// [`cublas!`] for cuBLASLt, whose status is cuBLAS's own type under another crate's name.
macro_rules! cublaslt {
    ($lt:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match ::cuda_safe::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::blas::error::check(
                stringify!($function),
                $lt.$function($($argument),*)
                    .map(|status| ::cublas_sys::cublasStatus_t(status.0)),
            ),
            Err(error) => Err(error),
        }
    };
}

pub(crate) use {cublas, cublaslt};

/// Turns a cuBLAS (or cuBLASLt) call's outcome into `Result<()>` (through [`cublas!`] and
/// [`cublaslt!`]); the error path is out of line.
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<cublasStatus_t, LoadError>) -> Result<()> {
    match result {
        Ok(cublasStatus_t::CUBLAS_STATUS_SUCCESS) => Ok(()),
        Ok(code) => Err(CublasError::call(api, code).into()),
        Err(error) => Err(Error::Load(error)),
    }
}

/// A status's name and meaning as `cublas_api.h` gives them.
fn status_text(code: cublasStatus_t) -> (&'static str, &'static str) {
    match code.0 {
        0 => ("CUBLAS_STATUS_SUCCESS", "success"),
        1 => (
            "CUBLAS_STATUS_NOT_INITIALIZED",
            "the library was not initialized",
        ),
        3 => (
            "CUBLAS_STATUS_ALLOC_FAILED",
            "the resource allocation failed",
        ),
        7 => (
            "CUBLAS_STATUS_INVALID_VALUE",
            "an invalid numeric value was used as an argument",
        ),
        8 => (
            "CUBLAS_STATUS_ARCH_MISMATCH",
            "an absent device architectural feature is required",
        ),
        11 => (
            "CUBLAS_STATUS_MAPPING_ERROR",
            "an access to GPU memory space failed",
        ),
        13 => (
            "CUBLAS_STATUS_EXECUTION_FAILED",
            "the GPU program failed to execute",
        ),
        14 => (
            "CUBLAS_STATUS_INTERNAL_ERROR",
            "an internal operation failed",
        ),
        15 => (
            "CUBLAS_STATUS_NOT_SUPPORTED",
            "the functionality requested is not supported",
        ),
        16 => (
            "CUBLAS_STATUS_LICENSE_ERROR",
            "error detected trying to check the license",
        ),
        _ => ("an unknown cuBLAS status", "newer than these bindings"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cublas_errors_name_the_call_and_the_status() {
        let error: Error =
            CublasError::call("cublasGemmEx", cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED).into();
        assert_eq!(
            error.to_string(),
            "cublasGemmEx failed: CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is \
             not supported)"
        );
        assert!(error.is_not_supported() && !error.is_out_of_memory());
        let inner = error.library_error::<CublasError>();
        assert_eq!(
            inner.and_then(CublasError::code),
            Some(cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED)
        );
        let oom: Error = CublasError::call(
            "cublasCreate_v2",
            cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED,
        )
        .into();
        assert!(oom.is_out_of_memory() && !oom.is_not_supported());
        assert_eq!(
            status_text(cublasStatus_t(999)).0,
            "an unknown cuBLAS status"
        );
        let refused: Error = CublasError::MatmulRefused {
            shape: "bf16 64x64x64 (N, N)".into(),
            reason: "the heuristic found no algorithm".into(),
            code: None,
        }
        .into();
        assert!(refused.is_not_supported());
        assert!(
            refused.to_string().contains("bf16 64x64x64 (N, N)"),
            "{refused}"
        );
    }
}
