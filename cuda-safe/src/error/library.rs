//! The errors of the annex crates inside the core's [`Error`]: each annex (cuBLAS and cuRAND,
//! NCCL, the IPC channel, the completion reactor) has an error type of its own that implements
//! [`LibraryFailure`], and converts into [`Error::Library`], so a function that launches a
//! kernel, runs a GEMM and all-reduces the result returns one `cuda_safe::Result` with plain
//! `?`s, and asks the error's kind (out of memory, not supported) the same way whoever failed.
//!
//! ```
//! use cuda_safe::{Error, LibraryFailure};
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("cufftExecC2C failed: CUFFT_ALLOC_FAILED")]
//! struct FftError;
//!
//! impl LibraryFailure for FftError {
//!     fn library(&self) -> &'static str {
//!         "cuFFT"
//!     }
//!     fn is_out_of_memory(&self) -> bool {
//!         true
//!     }
//! }
//!
//! let error = Error::from_library(FftError);
//! assert!(error.is_out_of_memory());
//! assert_eq!(error.to_string(), "cufftExecC2C failed: CUFFT_ALLOC_FAILED");
//! assert!(error.library_error::<FftError>().is_some());
//! ```

use std::fmt;
use std::sync::Arc;

use super::Error;

/// An annex crate's error, as the core's [`Error`] carries it ([`Error::Library`]): which
/// library failed and what kind of failure it is. Implemented by each annex's error type.
pub trait LibraryFailure: std::error::Error + Send + Sync + 'static {
    /// The library or subsystem that failed (`"cuBLAS"`, `"NCCL"`, `"IPC channel"`).
    fn library(&self) -> &'static str;

    /// Whether memory ran out ([`Error::is_out_of_memory`]).
    fn is_out_of_memory(&self) -> bool {
        false
    }

    /// Whether what was asked is not supported here ([`Error::is_not_supported`]).
    fn is_not_supported(&self) -> bool {
        false
    }
}

/// An annex's error inside [`Error::Library`], shared so that [`Error`] stays `Clone`.
/// [`Error::library_error`] gives the annex's type back.
#[derive(Clone)]
pub struct LibraryError(Arc<dyn LibraryFailure>);

impl LibraryError {
    /// The library or subsystem that failed.
    pub fn library(&self) -> &'static str {
        self.0.library()
    }

    /// The annex's error, if it is a `T`.
    pub fn downcast_ref<T: LibraryFailure>(&self) -> Option<&T> {
        let failure: &(dyn std::error::Error + 'static) = &*self.0;
        failure.downcast_ref::<T>()
    }

    /// The annex's error, for the predicates.
    pub(super) fn failure(&self) -> &dyn LibraryFailure {
        &*self.0
    }
}

impl fmt::Display for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for LibraryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl std::error::Error for LibraryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl Error {
    /// [`Error::Library`] around an annex's error.
    #[cold]
    pub fn from_library(failure: impl LibraryFailure) -> Self {
        Self::Library(LibraryError(Arc::new(failure)))
    }

    /// The annex's error inside [`Error::Library`], if it is a `T`
    /// (`error.library_error::<cuda_safe_libs::blas::CublasError>()`).
    pub fn library_error<T: LibraryFailure>(&self) -> Option<&T> {
        match self {
            Self::Library(error) => error.downcast_ref(),
            _ => None,
        }
    }
}
