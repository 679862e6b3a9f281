//! cuDNN's failures ([`CudnnError`], inside [`cuda_safe::Error::Library`]), and the macro that
//! calls an entry point and checks it under the function's own name.

use std::fmt;

use cuda_safe::{Error, LibraryFailure, Result};
use cuda_sys::LoadError;
use cudnn_sys::{Cudnn, cudnnStatus_t};

/// What went wrong, beyond the status of the call that returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CudnnRefusal {
    /// A cuDNN call returned a status other than success.
    Status,
    /// No engine configuration the heuristics proposed could be finalized into an execution
    /// plan for the graph (`tried` of them were tried; a heuristics mode whose query failed
    /// proposed none; the status is the last refusal's, a configuration's or a query's).
    NoEngine {
        /// How many configurations were tried.
        tried: usize,
    },
    /// The plan needs more workspace than the handle may use
    /// ([`Dnn::set_workspace_limit`](super::Dnn::set_workspace_limit)).
    WorkspaceTooSmall {
        /// The bytes the plan needs.
        needed: usize,
        /// The bytes the handle may use.
        limit: usize,
    },
    /// The loaded cuDNN cannot run the graph (too old for its pattern, or a release known to
    /// compute it wrongly); [`CudnnError::message`] says what the graph needs.
    Version {
        /// The loaded cuDNN's version (`cudnnGetVersion`'s encoding: 91400 is 9.14.0).
        found: usize,
    },
    /// The GPU cannot run the graph (FP8 attention before Hopper, say);
    /// [`CudnnError::message`] says what the graph needs.
    Device {
        /// The GPU's compute capability (major, minor).
        capability: (u32, u32),
    },
}

/// A cuDNN call failed, or cuDNN refused a graph. It reaches callers inside
/// [`cuda_safe::Error::Library`]: `error.library_error::<CudnnError>()` gives it back. The
/// status stays a number ([`code`](Self::code)), named from `cudnn_graph.h`: a newer cuDNN's new
/// status is a value, not an error of its own.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CudnnError {
    /// The function (`cudnnBackendFinalize`).
    pub api: &'static str,
    /// The raw status (`CUDNN_STATUS_SUCCESS` for a refusal no call returned).
    pub code: cudnnStatus_t,
    /// The status's name in `cudnn_graph.h` (`CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH`).
    pub name: &'static str,
    /// cuDNN's own words: `cudnnGetLastErrorString` where it says something, else
    /// `cudnnGetErrorString`'s.
    pub message: String,
    /// The operation or descriptor being built when it failed (`the convolution forward
    /// [N=1 C=3 H=8 W=8] bf16`, `a tensor descriptor`).
    pub operation: Option<String>,
    /// What the refusal was.
    pub refusal: CudnnRefusal,
}

impl CudnnError {
    /// Builds the error of a call that returned `code`, naming the status from
    /// `cudnn_graph.h` and reading cuDNN's last error message.
    #[cold]
    #[inline(never)]
    pub fn new(api: &'static str, code: cudnnStatus_t) -> Self {
        let message = cudnn_sys::cudnn()
            .map(|cudnn| describe(cudnn, code))
            .unwrap_or_default();
        Self {
            api,
            code,
            name: status_name(code),
            message,
            operation: None,
            refusal: CudnnRefusal::Status,
        }
    }

    /// The same error, naming the operation it belongs to.
    #[must_use]
    pub fn in_operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// The same error as another refusal.
    #[must_use]
    pub(crate) fn with_refusal(mut self, refusal: CudnnRefusal) -> Self {
        self.refusal = refusal;
        self
    }
}

impl fmt::Display for CudnnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(operation) = &self.operation {
            write!(f, "{operation}: ")?;
        }
        match &self.refusal {
            CudnnRefusal::Status => {}
            CudnnRefusal::NoEngine { tried } => write!(
                f,
                "no cuDNN engine can run this graph ({tried} configuration(s) tried); the \
                 last refusal: "
            )?,
            CudnnRefusal::WorkspaceTooSmall { needed, limit } => {
                return write!(
                    f,
                    "the plan needs {needed} bytes of workspace; the handle may use {limit}"
                );
            }
            CudnnRefusal::Version { found } => {
                let (major, minor, patch) = (found / 10000, found / 100 % 100, found % 100);
                return write!(
                    f,
                    "{} (the loaded cuDNN is {major}.{minor}.{patch})",
                    self.message
                );
            }
            CudnnRefusal::Device {
                capability: (major, minor),
            } => {
                return write!(f, "{} (this GPU is sm_{major}{minor})", self.message);
            }
        }
        write!(f, "{} failed: {}", self.api, self.name)?;
        if !self.message.is_empty() {
            write!(f, " ({})", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for CudnnError {}

impl LibraryFailure for CudnnError {
    fn library(&self) -> &'static str {
        "cuDNN"
    }

    fn is_out_of_memory(&self) -> bool {
        matches!(self.code.0, 4003 | 4004)
    }

    fn is_not_supported(&self) -> bool {
        (3000..4000).contains(&self.code.0) || matches!(self.refusal, CudnnRefusal::NoEngine { .. })
    }
}

impl From<CudnnError> for Error {
    fn from(error: CudnnError) -> Self {
        Error::from_library(error)
    }
}

/// Calls a cuDNN entry point and checks its status, naming the function once:
/// `unsafe { cudnn!(cudnn, cudnnSetStream(handle, stream)) }` is `Result<()>`. Debug builds
/// first refuse a call made from inside a host callback.
macro_rules! cudnn {
    ($cudnn:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match ::cuda_safe::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::dnn::error::check(
                stringify!($function),
                $cudnn.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

pub(crate) use cudnn;

/// Turns a cuDNN call's outcome into `Result<()>` (through [`cudnn!`]); the error path is out
/// of line.
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<cudnnStatus_t, LoadError>) -> Result<()> {
    match result {
        Ok(cudnnStatus_t::CUDNN_STATUS_SUCCESS) => Ok(()),
        Ok(code) => Err(CudnnError::new(api, code).into()),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Adds the operation's name to a cuDNN error (other errors pass unchanged).
pub(crate) fn within(error: Error, operation: impl FnOnce() -> String) -> Error {
    match error.library_error::<CudnnError>() {
        Some(failure) if failure.operation.is_none() => {
            failure.clone().in_operation(operation()).into()
        }
        _ => error,
    }
}

/// cuDNN's words for a failed call: the last error message of this thread (cuDNN 9), else the
/// status's description.
fn describe(cudnn: &Cudnn, code: cudnnStatus_t) -> String {
    let mut buffer = [0u8; 512];
    // SAFETY: the buffer holds `len` bytes; cuDNN writes a NUL-terminated message within them.
    let last = unsafe { cudnn.cudnnGetLastErrorString(buffer.as_mut_ptr().cast(), buffer.len()) };
    if last.is_ok() {
        let text = std::ffi::CStr::from_bytes_until_nul(&buffer)
            .map(|text| text.to_string_lossy().trim().to_owned())
            .unwrap_or_default();
        if !text.is_empty() {
            return text;
        }
    }
    // SAFETY: cudnnGetErrorString returns a static NUL-terminated string (or NULL).
    match unsafe { cudnn.cudnnGetErrorString(code) } {
        // SAFETY: as above.
        Ok(text) if !text.is_null() => unsafe { std::ffi::CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
        _ => String::new(),
    }
}

/// The name of a cuDNN status in `cudnn_graph.h`.
pub(crate) fn status_name(code: cudnnStatus_t) -> &'static str {
    match code.0 {
        0 => "CUDNN_STATUS_SUCCESS",
        1001 => "CUDNN_STATUS_NOT_INITIALIZED",
        1002 => "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
        1003 => "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH",
        1004 => "CUDNN_STATUS_DEPRECATED",
        1005 => "CUDNN_STATUS_LICENSE_ERROR",
        1006 => "CUDNN_STATUS_RUNTIME_IN_PROGRESS",
        1007 => "CUDNN_STATUS_RUNTIME_FP_OVERFLOW",
        1008 => "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED",
        2000 => "CUDNN_STATUS_BAD_PARAM",
        2001 => "CUDNN_STATUS_INVALID_VALUE",
        2002 => "CUDNN_STATUS_BAD_PARAM_NULL_POINTER",
        2003 => "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER",
        2004 => "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED",
        2005 => "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND",
        2006 => "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT",
        2007 => "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH",
        2008 => "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH",
        2009 => "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES",
        2010 => "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE",
        2011 => "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH",
        2012 => "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE",
        3000 => "CUDNN_STATUS_NOT_SUPPORTED",
        3001 => "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN",
        3002 => "CUDNN_STATUS_NOT_SUPPORTED_SHAPE",
        3003 => "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE",
        3004 => "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT",
        3005 => "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER",
        3006 => "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART",
        3007 => "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH",
        3008 => "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING",
        3009 => "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE",
        3010 => "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT",
        3011 => "CUDNN_STATUS_NOT_SUPPORTED_PADDING",
        3012 => "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM",
        3013 => "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API",
        3014 => "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE",
        4000 => "CUDNN_STATUS_INTERNAL_ERROR",
        4001 => "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED",
        4002 => "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE",
        4003 => "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
        4004 => "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
        4005 => "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM",
        4006 => "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED",
        5000 => "CUDNN_STATUS_EXECUTION_FAILED",
        5001 => "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER",
        5002 => "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS",
        5003 => "CUDNN_STATUS_EXECUTION_FAILED_CUDART",
        5004 => "CUDNN_STATUS_EXECUTION_FAILED_CURAND",
        _ => "an unknown cuDNN status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_named_and_classified() {
        let error = CudnnError {
            api: "cudnnBackendFinalize",
            code: cudnnStatus_t(3007),
            name: status_name(cudnnStatus_t(3007)),
            message: String::new(),
            operation: None,
            refusal: CudnnRefusal::Status,
        }
        .in_operation("the matmul");
        assert_eq!(
            error.to_string(),
            "the matmul: cudnnBackendFinalize failed: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"
        );
        let error: Error = error.into();
        assert!(error.is_not_supported() && !error.is_out_of_memory());
        assert_eq!(status_name(cudnnStatus_t(9999)), "an unknown cuDNN status");
        let small = CudnnError::new("x", cudnnStatus_t(4003)).with_refusal(
            CudnnRefusal::WorkspaceTooSmall {
                needed: 10,
                limit: 4,
            },
        );
        assert!(small.to_string().contains("needs 10 bytes"));
        assert!(Error::from(small).is_out_of_memory());
    }
}
