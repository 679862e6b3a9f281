//! cuRAND's failures ([`CurandError`], inside [`cuda_safe::Error::Library`]), and the macro
//! that calls an entry point and checks it under the function's own name.

use cuda_safe::{Error, LibraryFailure, Result};
use cuda_sys::LoadError;
use curand_sys::curandStatus_t;

/// A cuRAND call failed. It reaches callers inside [`cuda_safe::Error::Library`]:
/// `error.library_error::<CurandError>()` gives it back.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{api} failed: {name} ({message})")]
#[non_exhaustive]
pub struct CurandError {
    /// The function (`curandGenerateNormal`).
    pub api: &'static str,
    /// The raw status.
    pub code: curandStatus_t,
    /// The code's name in `curand.h` (`CURAND_STATUS_LENGTH_NOT_MULTIPLE`).
    pub name: &'static str,
    /// What the code means, from the header's comments (cuRAND has no call that describes it).
    pub message: &'static str,
}

impl CurandError {
    /// Builds the error, naming the status from `curand.h`.
    #[cold]
    #[inline(never)]
    pub fn new(api: &'static str, code: curandStatus_t) -> Self {
        let (name, message) = curand_status(code);
        Self {
            api,
            code,
            name,
            message,
        }
    }
}

impl LibraryFailure for CurandError {
    fn library(&self) -> &'static str {
        "cuRAND"
    }

    fn is_out_of_memory(&self) -> bool {
        self.code == curandStatus_t::CURAND_STATUS_ALLOCATION_FAILED
    }

    fn is_not_supported(&self) -> bool {
        matches!(
            self.code,
            curandStatus_t::CURAND_STATUS_ARCH_MISMATCH
                | curandStatus_t::CURAND_STATUS_DOUBLE_PRECISION_REQUIRED
        )
    }
}

impl From<CurandError> for Error {
    fn from(error: CurandError) -> Self {
        Error::from_library(error)
    }
}

/// Calls a cuRAND entry point and checks its status, naming the function once:
/// `unsafe { curand!(curand, curandSetStream(generator, stream)) }` is `Result<()>`. Debug
/// builds first refuse a call made from inside a host callback.
macro_rules! curand {
    ($curand:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match ::cuda_safe::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::rand::error::check(
                stringify!($function),
                $curand.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

pub(crate) use curand;

/// Turns a cuRAND call's outcome into `Result<()>` (through [`curand!`]).
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<curandStatus_t, LoadError>) -> Result<()> {
    match result {
        Ok(curandStatus_t::CURAND_STATUS_SUCCESS) => Ok(()),
        Ok(code) => Err(CurandError::new(api, code).into()),
        Err(error) => Err(Error::Load(error)),
    }
}

/// The name and meaning of a cuRAND status, as `curand.h` gives them.
fn curand_status(code: curandStatus_t) -> (&'static str, &'static str) {
    match code.0 {
        0 => ("CURAND_STATUS_SUCCESS", "no errors"),
        100 => (
            "CURAND_STATUS_VERSION_MISMATCH",
            "header file and linked library version do not match",
        ),
        101 => ("CURAND_STATUS_NOT_INITIALIZED", "generator not initialized"),
        102 => (
            "CURAND_STATUS_ALLOCATION_FAILED",
            "memory allocation failed",
        ),
        103 => ("CURAND_STATUS_TYPE_ERROR", "generator is wrong type"),
        104 => ("CURAND_STATUS_OUT_OF_RANGE", "argument out of range"),
        105 => (
            "CURAND_STATUS_LENGTH_NOT_MULTIPLE",
            "length requested is not a multiple of dimension",
        ),
        106 => (
            "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED",
            "GPU does not have double precision required by MRG32k3a",
        ),
        201 => ("CURAND_STATUS_LAUNCH_FAILURE", "kernel launch failure"),
        202 => (
            "CURAND_STATUS_PREEXISTING_FAILURE",
            "preexisting failure on library entry",
        ),
        203 => (
            "CURAND_STATUS_INITIALIZATION_FAILED",
            "initialization of CUDA failed",
        ),
        204 => (
            "CURAND_STATUS_ARCH_MISMATCH",
            "architecture mismatch, GPU does not support requested feature",
        ),
        999 => ("CURAND_STATUS_INTERNAL_ERROR", "internal library error"),
        _ => ("an unknown cuRAND status", "newer than these bindings"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curand_errors_name_the_status_from_the_header() {
        let error: Error = CurandError::new(
            "curandGenerateNormal",
            curandStatus_t::CURAND_STATUS_LENGTH_NOT_MULTIPLE,
        )
        .into();
        assert_eq!(
            error.to_string(),
            "curandGenerateNormal failed: CURAND_STATUS_LENGTH_NOT_MULTIPLE (length requested \
             is not a multiple of dimension)"
        );
        assert_eq!(
            error.library_error::<CurandError>().map(|inner| inner.code),
            Some(curandStatus_t::CURAND_STATUS_LENGTH_NOT_MULTIPLE)
        );
        let oom: Error = CurandError::new("x", curandStatus_t(102)).into();
        assert!(oom.is_out_of_memory());
        let unsupported: Error = CurandError::new("x", curandStatus_t(204)).into();
        assert!(unsupported.is_not_supported());
        assert_eq!(
            curand_status(curandStatus_t(7)).0,
            "an unknown cuRAND status"
        );
    }
}
