//! The reactor's own failure, inside [`cuda_safe::Error::Library`].

use cuda_safe::{Error, LibraryFailure};

/// A failure of the completion machinery itself (not of the GPU work it watches, which is
/// the driver's [`Error::Cuda`]). It reaches callers inside [`Error::Library`]:
/// `error.library_error::<AsyncError>()` gives it back.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AsyncError {
    /// The thread that watches GPU work for the futures could not be started: the operating
    /// system refused a new thread.
    #[error("the completion reactor's thread could not start: {0}")]
    ReactorThread(Box<str>),
    /// The thread that watches an NVML event set for an
    /// [`NvmlEventStream`](crate::NvmlEventStream) failed: it could not start, or it ended by
    /// a panic.
    #[error("the NVML event stream's thread failed: {0}")]
    NvmlWatcher(Box<str>),
}

impl LibraryFailure for AsyncError {
    fn library(&self) -> &'static str {
        match self {
            Self::ReactorThread(_) => "completion reactor",
            Self::NvmlWatcher(_) => "NVML event stream",
        }
    }
}

impl From<AsyncError> for Error {
    fn from(error: AsyncError) -> Self {
        Error::from_library(error)
    }
}
