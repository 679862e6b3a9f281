//! The errors of the CUDA libraries versioned on their own: cuBLAS and cuBLASLt (which answer
//! with one status type and describe it themselves) and cuRAND (whose codes are named here, from
//! `curand.h`: it has no call that describes them).

#[cfg(feature = "blas")]
use cublas_sys::cublasStatus_t;
#[cfg(feature = "rand")]
use curand_sys::curandStatus_t;

use super::Error;
#[cfg(feature = "blas")]
use crate::ffi::static_str;

impl Error {
    /// Builds [`Error::Cublas`], asking cuBLAS for the status's name and message (cuBLASLt's
    /// statuses are cuBLAS's).
    #[cfg(feature = "blas")]
    #[cold]
    #[inline(never)]
    pub fn cublas(api: &'static str, code: cublasStatus_t) -> Self {
        let texts = cublas_sys::cublas().ok().map(|cublas| {
            // SAFETY: both functions accept any status and return static strings (or null).
            let (name, message) = unsafe {
                (
                    cublas.cublasGetStatusName(code).ok(),
                    cublas.cublasGetStatusString(code).ok(),
                )
            };
            // SAFETY: the strings are static and NUL-terminated, owned by the library, which
            // is never unloaded.
            unsafe {
                (
                    name.and_then(|text| static_str(text)),
                    message.and_then(|text| static_str(text)),
                )
            }
        });
        let (name, message) = texts.unwrap_or((None, None));
        Self::Cublas {
            api,
            code,
            name: name.unwrap_or_else(|| cublas_status_name(code)),
            message: message.unwrap_or("no message from cuBLAS"),
        }
    }

    /// Builds [`Error::Curand`], naming the status from `curand.h`.
    #[cfg(feature = "rand")]
    #[cold]
    #[inline(never)]
    pub fn curand(api: &'static str, code: curandStatus_t) -> Self {
        let (name, message) = curand_status(code);
        Self::Curand {
            api,
            code,
            name,
            message,
        }
    }

    /// cuBLAS's (or cuBLASLt's) status, for [`Error::Cublas`] and [`Error::MatmulRefused`].
    #[cfg(feature = "blas")]
    pub fn cublas_code(&self) -> Option<cublasStatus_t> {
        match self {
            Self::Cublas { code, .. } => Some(*code),
            Self::MatmulRefused { code, .. } => *code,
            _ => None,
        }
    }

    /// cuRAND's status, for [`Error::Curand`].
    #[cfg(feature = "rand")]
    pub fn curand_code(&self) -> Option<curandStatus_t> {
        match self {
            Self::Curand { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// A cuBLAS status's name as `cublas_api.h` spells it, for when cuBLAS cannot be asked.
#[cfg(feature = "blas")]
fn cublas_status_name(code: cublasStatus_t) -> &'static str {
    match code.0 {
        0 => "CUBLAS_STATUS_SUCCESS",
        1 => "CUBLAS_STATUS_NOT_INITIALIZED",
        3 => "CUBLAS_STATUS_ALLOC_FAILED",
        7 => "CUBLAS_STATUS_INVALID_VALUE",
        8 => "CUBLAS_STATUS_ARCH_MISMATCH",
        11 => "CUBLAS_STATUS_MAPPING_ERROR",
        13 => "CUBLAS_STATUS_EXECUTION_FAILED",
        14 => "CUBLAS_STATUS_INTERNAL_ERROR",
        15 => "CUBLAS_STATUS_NOT_SUPPORTED",
        16 => "CUBLAS_STATUS_LICENSE_ERROR",
        _ => "an unknown cuBLAS status",
    }
}

/// The name and meaning of a cuRAND status, as `curand.h` gives them.
#[cfg(feature = "rand")]
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

    #[cfg(feature = "blas")]
    #[test]
    fn cublas_errors_name_the_call_and_the_status() {
        let error = Error::Cublas {
            api: "cublasGemmEx",
            code: cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED,
            name: cublas_status_name(cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED),
            message: "the functionality requested is not supported",
        };
        assert_eq!(
            error.to_string(),
            "cublasGemmEx failed: CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is \
             not supported)"
        );
        assert!(error.is_not_supported());
        assert_eq!(
            error.cublas_code(),
            Some(cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED)
        );
        let oom = Error::Cublas {
            api: "cublasCreate_v2",
            code: cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED,
            name: "CUBLAS_STATUS_ALLOC_FAILED",
            message: "",
        };
        assert!(oom.is_out_of_memory() && !oom.is_not_supported());
        assert_eq!(
            cublas_status_name(cublasStatus_t(7)),
            "CUBLAS_STATUS_INVALID_VALUE"
        );
        assert_eq!(
            cublas_status_name(cublasStatus_t(999)),
            "an unknown cuBLAS status"
        );
        let refused = Error::MatmulRefused {
            shape: "bf16 64x64x64 (N, N)".into(),
            reason: "the heuristic found no algorithm".into(),
            code: None,
        };
        assert!(refused.is_not_supported());
        assert!(
            refused.to_string().contains("bf16 64x64x64 (N, N)"),
            "{refused}"
        );
        assert_eq!(refused.cublas_code(), None);
    }

    #[cfg(feature = "rand")]
    #[test]
    fn curand_errors_name_the_status_from_the_header() {
        let error = Error::curand(
            "curandGenerateNormal",
            curandStatus_t::CURAND_STATUS_LENGTH_NOT_MULTIPLE,
        );
        assert_eq!(
            error.to_string(),
            "curandGenerateNormal failed: CURAND_STATUS_LENGTH_NOT_MULTIPLE (length requested \
             is not a multiple of dimension)"
        );
        assert_eq!(
            error.curand_code(),
            Some(curandStatus_t::CURAND_STATUS_LENGTH_NOT_MULTIPLE)
        );
        assert!(Error::curand("x", curandStatus_t(102)).is_out_of_memory());
        assert!(Error::curand("x", curandStatus_t(204)).is_not_supported());
        assert_eq!(
            curand_status(curandStatus_t(7)).0,
            "an unknown cuRAND status"
        );
    }
}
