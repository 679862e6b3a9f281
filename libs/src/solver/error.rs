//! cuSOLVER's failures ([`CusolverError`], inside [`cuda_safe::Error::Library`]): a call's
//! status, and what a routine's `info` output says of the matrix (a zero pivot, a minor that is
//! not positive definite, no convergence, a parameter refused); and the macro that calls an
//! entry point and checks it under the function's own name.

use cuda_safe::{Error, LibraryFailure, Result};
use cuda_sys::LoadError;
use cusolver_sys::cusolverStatus_t;

/// A cuSOLVER failure. It reaches callers inside [`cuda_safe::Error::Library`]:
/// `error.library_error::<CusolverError>()` gives it back.
///
/// [`Call`](Self::Call) is a status the library answered when the call was made; the other
/// variants are what a routine's `info` output said once it ran, read back by
/// [`Info::check`](super::Info::check). `matrix` is the index of the failing matrix of a
/// batch (`None` for one matrix); pivots, minors and parameters count from 1, as LAPACK does.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CusolverError {
    /// A cuSOLVER call failed.
    #[error("{api} failed: {name} ({message})")]
    Call {
        /// The function (`cusolverDnXgetrf`).
        api: &'static str,
        /// The raw status.
        code: cusolverStatus_t,
        /// The status's name (`CUSOLVER_STATUS_INVALID_VALUE`).
        name: &'static str,
        /// What the status means.
        message: &'static str,
    },
    /// LU found `U(pivot, pivot)` exactly zero: the matrix is singular (the factors are
    /// written, but a solve with them divides by zero).
    #[error("{api}: the matrix{} is singular: U({pivot}, {pivot}) is zero", batch(*.matrix))]
    Singular {
        /// The function whose `info` said so.
        api: &'static str,
        /// The zero pivot's row and column, from 1.
        pivot: i64,
        /// The matrix of a batch, from 0.
        matrix: Option<usize>,
    },
    /// Cholesky found the leading minor of order `minor` not positive definite.
    #[error(
        "{api}: the matrix{} is not positive definite: its leading minor of order {minor} is not",
        batch(*.matrix)
    )]
    NotPositiveDefinite {
        /// The function whose `info` said so.
        api: &'static str,
        /// The order of the first minor that is not positive definite, from 1.
        minor: i64,
        /// The matrix of a batch, from 0.
        matrix: Option<usize>,
    },
    /// An eigenvalue or singular value iteration did not converge: `count` off-diagonal
    /// elements (or superdiagonals) of an intermediate form did not reach zero (Jacobi
    /// methods: the sweeps ran out before the tolerance was met).
    #[error("{api}: the matrix{} did not converge ({count} not converged)", batch(*.matrix))]
    NoConvergence {
        /// The function whose `info` said so.
        api: &'static str,
        /// What `info` counted (the elements that did not converge, or the sweeps + 1 of a
        /// Jacobi method).
        count: i64,
        /// The matrix of a batch, from 0.
        matrix: Option<usize>,
    },
    /// The routine refused its `parameter`-th parameter (the handle not counted), which the
    /// checks made before the call should have caught: a bug of this crate or a library
    /// newer than it.
    #[error("{api} refused its parameter {parameter}{}", batch(*.matrix))]
    InvalidParameter {
        /// The function whose `info` said so.
        api: &'static str,
        /// The parameter, from 1, not counting the handle.
        parameter: i64,
        /// The matrix of a batch, from 0.
        matrix: Option<usize>,
    },
}

/// ` (matrix 3 of the batch)`, or nothing.
fn batch(matrix: Option<usize>) -> String {
    matrix.map_or_else(String::new, |index| format!(" {index} of the batch"))
}

impl CusolverError {
    /// The status cuSOLVER answered, when a call failed.
    pub fn code(&self) -> Option<cusolverStatus_t> {
        match self {
            Self::Call { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Builds [`CusolverError::Call`], naming the status from `cusolver_common.h` (the library
    /// has no call that names its statuses).
    #[cold]
    #[inline(never)]
    pub fn call(api: &'static str, code: cusolverStatus_t) -> Self {
        let (name, message) = status_text(code);
        Self::Call {
            api,
            code,
            name,
            message,
        }
    }
}

impl LibraryFailure for CusolverError {
    fn library(&self) -> &'static str {
        "cuSOLVER"
    }

    fn is_out_of_memory(&self) -> bool {
        self.code() == Some(cusolverStatus_t::CUSOLVER_STATUS_ALLOC_FAILED)
    }

    fn is_not_supported(&self) -> bool {
        matches!(
            self.code(),
            Some(
                cusolverStatus_t::CUSOLVER_STATUS_NOT_SUPPORTED
                    | cusolverStatus_t::CUSOLVER_STATUS_ARCH_MISMATCH
                    | cusolverStatus_t::CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED
            )
        )
    }
}

impl From<CusolverError> for Error {
    fn from(error: CusolverError) -> Self {
        Error::from_library(error)
    }
}

/// Calls a cuSOLVER entry point and checks its status, naming the function once:
/// `unsafe { cusolver!(cusolver, cusolverDnSetStream(handle, stream)) }` is `Result<()>`.
/// Debug builds first refuse a call made from inside a host callback, as `cuda_safe::cu!` does.
macro_rules! cusolver {
    ($cusolver:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match ::cuda_safe::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::solver::error::check(
                stringify!($function),
                $cusolver.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

pub(crate) use cusolver;

/// Turns a cuSOLVER call's outcome into `Result<()>` (through [`cusolver!`]); the error path
/// is out of line.
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<cusolverStatus_t, LoadError>) -> Result<()> {
    match result {
        Ok(cusolverStatus_t::CUSOLVER_STATUS_SUCCESS) => Ok(()),
        Ok(code) => Err(CusolverError::call(api, code).into()),
        Err(error) => Err(Error::Load(error)),
    }
}

/// A status's name and meaning, as `cusolver_common.h` and cuSOLVER's documentation give them.
fn status_text(code: cusolverStatus_t) -> (&'static str, &'static str) {
    match code.0 {
        0 => ("CUSOLVER_STATUS_SUCCESS", "success"),
        1 => (
            "CUSOLVER_STATUS_NOT_INITIALIZED",
            "the library was not initialized",
        ),
        2 => (
            "CUSOLVER_STATUS_ALLOC_FAILED",
            "the resource allocation failed",
        ),
        3 => (
            "CUSOLVER_STATUS_INVALID_VALUE",
            "an unsupported value or parameter was passed",
        ),
        4 => (
            "CUSOLVER_STATUS_ARCH_MISMATCH",
            "the device lacks a feature the function needs",
        ),
        5 => (
            "CUSOLVER_STATUS_MAPPING_ERROR",
            "an access to GPU memory space failed",
        ),
        6 => (
            "CUSOLVER_STATUS_EXECUTION_FAILED",
            "the GPU program failed to execute",
        ),
        7 => (
            "CUSOLVER_STATUS_INTERNAL_ERROR",
            "an internal operation failed",
        ),
        8 => (
            "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
            "the matrix type is not supported",
        ),
        9 => (
            "CUSOLVER_STATUS_NOT_SUPPORTED",
            "the parameter combination is not supported",
        ),
        10 => ("CUSOLVER_STATUS_ZERO_PIVOT", "a zero pivot was found"),
        11 => (
            "CUSOLVER_STATUS_INVALID_LICENSE",
            "the license is not valid",
        ),
        31 => (
            "CUSOLVER_STATUS_INVALID_WORKSPACE",
            "the workspace is too small or not aligned",
        ),
        12..=30 => (
            "a CUSOLVER_STATUS_IRS_* status",
            "a failure of the iterative refinement solver",
        ),
        _ => ("an unknown cuSOLVER status", "newer than these bindings"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cusolver_errors_name_the_call_and_the_status() {
        let error: Error = CusolverError::call(
            "cusolverDnXgetrf",
            cusolverStatus_t::CUSOLVER_STATUS_NOT_SUPPORTED,
        )
        .into();
        assert_eq!(
            error.to_string(),
            "cusolverDnXgetrf failed: CUSOLVER_STATUS_NOT_SUPPORTED (the parameter combination \
             is not supported)"
        );
        assert!(error.is_not_supported() && !error.is_out_of_memory());
        assert_eq!(
            error
                .library_error::<CusolverError>()
                .and_then(CusolverError::code),
            Some(cusolverStatus_t::CUSOLVER_STATUS_NOT_SUPPORTED)
        );
        let oom: Error = CusolverError::call(
            "cusolverDnCreate",
            cusolverStatus_t::CUSOLVER_STATUS_ALLOC_FAILED,
        )
        .into();
        assert!(oom.is_out_of_memory() && !oom.is_not_supported());
        assert_eq!(
            status_text(cusolverStatus_t(999)).0,
            "an unknown cuSOLVER status"
        );
    }

    #[test]
    fn info_errors_name_the_pivot_and_the_matrix() {
        let singular = CusolverError::Singular {
            api: "cusolverDnXgetrf",
            pivot: 3,
            matrix: None,
        };
        assert_eq!(
            singular.to_string(),
            "cusolverDnXgetrf: the matrix is singular: U(3, 3) is zero"
        );
        let batched = CusolverError::NoConvergence {
            api: "cusolverDnSgesvdjBatched",
            count: 16,
            matrix: Some(7),
        };
        assert!(batched.to_string().contains(" 7 of the batch"), "{batched}");
        assert!(batched.code().is_none() && !batched.is_not_supported());
    }
}
