//! The crate's one error type.
//!
//! ```
//! use cuda_safe::Error;
//!
//! let error = Error::invalid_argument("copy of 8 bytes into a 4-byte buffer");
//! assert!(error.to_string().contains("8 bytes"));
//! assert_eq!(error.cuda_code(), None);
//! ```

use std::borrow::Cow;
use std::ffi::c_char;

use crate::ffi::static_str;
#[cfg(feature = "blas")]
use cublas_sys::cublasStatus_t;
use cuda_sys::{
    CUgraphExecUpdateResult, CUgraphInstantiateResult, CUresult, CudaVersion, Introduced, LoadError,
};
#[cfg(feature = "rand")]
use curand_sys::curandStatus_t;
#[cfg(feature = "nccl")]
use nccl_sys::ncclResult_t;
use nvfatbin_sys::nvFatbinResult;
use nvjitlink_sys::nvJitLinkResult;
use nvml_sys::nvmlReturn_t;
use nvrtc_sys::nvrtcResult;

mod capture;
mod check;
mod display;
mod kinds;
#[cfg(any(feature = "blas", feature = "rand"))]
mod libraries;
mod nvfatbin_codes;
mod nvjitlink_codes;
#[cfg(test)]
mod tests;

use capture::CaptureHint;
pub(crate) use check::{
    check, check_nvfatbin, check_nvjitlink, check_nvml, check_nvrtc, check_ready, cu, cu_ready,
    nvfatbin, nvjitlink, nvml, nvrtc,
};
#[cfg(feature = "blas")]
pub(crate) use check::{check_cublas, cublas, cublaslt};
#[cfg(feature = "rand")]
pub(crate) use check::{check_curand, curand};
#[cfg(feature = "nccl")]
pub(crate) use check::{check_nccl, nccl};
use display::{During, LogSuffix, MorePanics};
#[cfg(feature = "nccl")]
use display::{NcclDetail, nccl_texts};
use nvfatbin_codes::nvfatbin_name;
use nvjitlink_codes::nvjitlink_code;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
///
/// Errors from a library carry the API that failed, the raw code (a newtype, so codes newer
/// than this crate's headers are kept) and the library's own name and message for it.
///
/// `Display` is one clear line. `Debug` is that line and, after it, each cause that line does
/// not already say (as `anyhow` prints them), so `fn main() -> cuda_safe::Result<()>` reports
/// an error the way the examples do: `Error: <the line>`.
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed. Errors of stream capture (codes 900 to 908) also say what
    /// usually causes them ([`Error::is_capture_error`]).
    #[error("{api} failed: {name} ({message}){}", CaptureHint(*code))]
    Cuda {
        /// The driver function, as exported (`cuMemAllocFromPoolAsync`).
        api: &'static str,
        /// The raw result code.
        code: CUresult,
        /// `cuGetErrorName` of the code (`CUDA_ERROR_OUT_OF_MEMORY`).
        name: &'static str,
        /// `cuGetErrorString` of the code (`out of memory`).
        message: &'static str,
    },
    /// An NVRTC call failed; `log` holds the compiler log when there is one.
    #[error("{api} failed: {message}{}", LogSuffix(log.as_deref()))]
    Nvrtc {
        /// The NVRTC function (`nvrtcCompileProgram`).
        api: &'static str,
        /// The raw result code.
        code: nvrtc_sys::nvrtcResult,
        /// `nvrtcGetErrorString` of the code.
        message: &'static str,
        /// The program log, for compile failures.
        log: Option<Box<str>>,
    },
    /// An nvJitLink call failed (a failed link is [`Error::Link`] around this one).
    #[error("{api} failed: {name} ({message})")]
    NvJitLink {
        /// The nvJitLink function (`nvJitLinkComplete`).
        api: &'static str,
        /// The raw result code.
        code: nvJitLinkResult,
        /// The code's name in `nvJitLink.h` (`NVJITLINK_ERROR_PTX_COMPILE`).
        name: &'static str,
        /// What the code means, from the header's comments (nvJitLink has no message call).
        message: &'static str,
    },
    /// An nvFatbin call failed while a [`FatbinBuilder`](crate::FatbinBuilder) built a fatbin.
    /// The message names the code as `nvFatbin.h` does (`NVFATBIN_ERROR_ELF_ARCH_MISMATCH`).
    #[error("{api} failed: {} ({message}){}", nvfatbin_name(*code), During(detail.as_deref()))]
    NvFatbin {
        /// The nvFatbin function (`nvFatbinAddCubin`).
        api: &'static str,
        /// The raw result code.
        code: nvFatbinResult,
        /// `nvFatbinGetErrorString` of the code (`fatbinary elf mismatch: elf arch does not
        /// match user-specified arch`).
        message: &'static str,
        /// What the call was doing: the entry it added (`adding the CUBIN "k.cubin" for
        /// sm_90`) or the options it was given.
        detail: Option<Box<str>>,
    },
    /// A link failed: the linker's call error is the [`source`](std::error::Error::source),
    /// `log` holds its error log, its info log and the options used.
    #[error("{source}{}", LogSuffix(Some(log)))]
    Link {
        /// The failed linker call ([`Error::NvJitLink`], or [`Error::Cuda`] from the driver
        /// linker).
        #[source]
        source: Box<Error>,
        /// The linker's error log, then its info log, then the options used.
        log: Box<str>,
    },
    /// An NVML call failed.
    #[error("{api} failed: {message}")]
    Nvml {
        /// The NVML function (`nvmlDeviceGetPowerUsage`).
        api: &'static str,
        /// The raw return code.
        code: nvml_sys::nvmlReturn_t,
        /// `nvmlErrorString` of the code.
        message: &'static str,
    },
    /// A library could not be loaded; every path tried is listed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The argument was refused before it reached the driver.
    #[error("invalid argument: {0}")]
    InvalidArgument(Cow<'static, str>),
    /// The feature needs a newer driver, toolkit or device than this one.
    #[error("{feature} is not supported here: {reason}")]
    Unsupported {
        /// What was asked for (`green-context workqueues`).
        feature: &'static str,
        /// What is missing (`needs CUDA 13.1, the driver has 13.0`).
        reason: Cow<'static, str>,
    },
    /// `Event::elapsed` on an event created without timing.
    #[error("the event was created with timing disabled")]
    EventNotTimed,
    /// `Event::elapsed` on an event that was never recorded.
    #[error("the event has not been recorded")]
    EventNotRecorded,
    /// Sending or receiving on an IPC channel failed at the operating system.
    #[error("IPC channel: {what} failed: {source}")]
    IpcIo {
        /// What was being done (`sending a buffer`).
        what: &'static str,
        /// The operating system's error (shared, so that `Error` stays `Clone`).
        source: std::sync::Arc<std::io::Error>,
    },
    /// The other end of an IPC channel sent something this end did not expect: another kind
    /// of message than the one asked for, or a malformed one.
    #[error("IPC channel: {detail}")]
    IpcProtocol {
        /// What was expected and what came.
        detail: Cow<'static, str>,
    },
    /// The other end of an IPC channel closed it (its process exited or was killed) before
    /// the message asked for came.
    #[error("IPC channel: the other process closed the channel while {what}")]
    IpcPeerGone {
        /// What this end was waiting for.
        what: &'static str,
    },
    /// An earlier call on this IPC channel stopped in the middle of a message (its deadline
    /// passed, or the message was malformed), so the channel is out of step with the other
    /// end: every later call fails with this error. Close the channel.
    #[error(
        "IPC channel: out of step with the other end since {what} stopped in the middle of a \
         message (a timeout or a malformed message); close the channel"
    )]
    IpcPoisoned {
        /// What the call that stopped was doing (`waiting for bytes`).
        what: &'static str,
    },
    /// A file operation of a program cache failed.
    #[error("program cache at {}: {source}", path.display())]
    CacheIo {
        /// The file or directory the operation was on.
        path: std::path::PathBuf,
        /// The operating system's error (shared, so that `Error` stays `Clone`).
        source: std::sync::Arc<std::io::Error>,
    },
    /// A program cache directory is not this user's alone (owned by another user, writable by
    /// group or others, or not a directory), so code read from it could be anyone's: the
    /// cache refuses it. `reason` says what is wrong and how to fix it.
    #[error("program cache at {} refused: {reason}", path.display())]
    CacheNotPrivate {
        /// The directory (or what stands where a directory should be).
        path: std::path::PathBuf,
        /// What is wrong, and the fix (`chmod go-w ...`, or removing it).
        reason: Cow<'static, str>,
    },
    /// A library answered something that cannot be right (a green split whose groups differ
    /// from the plan, a kernel with no name): not the caller's mistake, and worth a report.
    #[error("{api} gave an impossible answer: {detail}")]
    UnexpectedAnswer {
        /// The call that answered.
        api: &'static str,
        /// What was wrong with the answer.
        detail: Cow<'static, str>,
    },
    /// A kernel was launched and has finished, but ordering its buffers' streams after it
    /// failed; the cause is the [`source`](std::error::Error::source).
    #[error(
        "the kernel was launched (and has finished), but ordering its buffers' streams after it failed"
    )]
    LaunchOrdering {
        /// The ordering call's error.
        #[source]
        source: Box<Error>,
    },
    /// A host callback (a stream's host function or a graph's host node) panicked. The panic
    /// was caught on the driver's thread and is reported once, by the next call on the stream
    /// or graph that queued it.
    #[error("a host callback panicked: {message}{}", MorePanics(*count))]
    CallbackPanicked {
        /// The first panic's message.
        message: Box<str>,
        /// How many callbacks panicked since the last report (at least 1).
        count: usize,
    },
    /// The thread that watches GPU work for the completion futures
    /// ([`completion`](crate::completion)) could not be started: the operating system refused
    /// a new thread.
    #[error("the completion reactor's thread could not start: {0}")]
    ReactorThread(Box<str>),
    /// `cuGraphExecUpdate` refused to update an executable graph from another graph; the
    /// executable is unchanged and still runs as before.
    #[error("cuGraphExecUpdate refused the update: {detail}")]
    GraphUpdateRefused {
        /// The driver's reason.
        reason: CUgraphExecUpdateResult,
        /// What the reason means.
        detail: &'static str,
    },
    /// `cuGraphInstantiateWithParams` refused to instantiate a graph, giving a reason: a
    /// structure it cannot run, or, instantiating for device launch, a node or a context a
    /// device graph cannot have.
    #[error("cuGraphInstantiateWithParams refused the graph: {detail}")]
    GraphInstantiateRefused {
        /// The driver's reason.
        reason: CUgraphInstantiateResult,
        /// What the reason means.
        detail: &'static str,
    },
    /// An NCCL call failed. `last_error` is `ncclGetLastError`'s text, when NCCL had one.
    #[cfg(feature = "nccl")]
    #[error("{api} failed: {name}{}", NcclDetail(last_error.as_deref()))]
    Nccl {
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
    #[cfg(feature = "nccl")]
    #[error("the NCCL communicator failed: {name}{}", NcclDetail(last_error.as_deref()))]
    NcclAsync {
        /// The asynchronous error's code.
        code: ncclResult_t,
        /// `ncclGetErrorString` of the code.
        name: &'static str,
        /// `ncclGetLastError`: NCCL's message about the failure.
        last_error: Option<Box<str>>,
    },
    /// NCCL work did not finish within the time given; the communicator was aborted, so no
    /// rank waits for a dead peer forever.
    #[cfg(feature = "nccl")]
    #[error(
        "NCCL work did not finish within {waited:?} (a peer may be dead); the communicator was \
         aborted"
    )]
    NcclTimeout {
        /// How long the caller waited.
        waited: std::time::Duration,
    },
    /// Starting the ranks of a job failed: a launcher variable (`RANK`, `WORLD_SIZE`,
    /// `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`) is missing or invalid, or exchanging the
    /// unique id with rank 0 failed.
    #[cfg(feature = "nccl")]
    #[error("NCCL bootstrap: {0}")]
    NcclBootstrap(Cow<'static, str>),
    /// A cuBLAS or cuBLASLt call failed (both libraries answer with `cublasStatus_t`).
    #[cfg(feature = "blas")]
    #[error("{api} failed: {name} ({message})")]
    Cublas {
        /// The function (`cublasGemmEx`, `cublasLtMatmul`).
        api: &'static str,
        /// The raw status.
        code: cublasStatus_t,
        /// `cublasGetStatusName` of the code (`CUBLAS_STATUS_NOT_SUPPORTED`).
        name: &'static str,
        /// `cublasGetStatusString` of the code.
        message: &'static str,
    },
    /// cuBLASLt refused a matmul plan: it found no algorithm for the shape, types, layouts and
    /// epilogue asked for (or refused one of their descriptors). Nothing was queued.
    #[cfg(feature = "blas")]
    #[error("cuBLASLt refused the matmul {shape}: {reason}")]
    MatmulRefused {
        /// The plan asked for: shape, transposes, types and epilogue.
        shape: Box<str>,
        /// Why: the call that refused and its status, or that the heuristic found nothing.
        reason: Box<str>,
        /// The status cuBLASLt answered, when a call refused.
        code: Option<cublasStatus_t>,
    },
    /// A cuRAND call failed.
    #[cfg(feature = "rand")]
    #[error("{api} failed: {name} ({message})")]
    Curand {
        /// The function (`curandGenerateNormal`).
        api: &'static str,
        /// The raw status.
        code: curandStatus_t,
        /// The code's name in `curand.h` (`CURAND_STATUS_LENGTH_NOT_MULTIPLE`).
        name: &'static str,
        /// What the code means, from the header's comments (cuRAND has no message call).
        message: &'static str,
    },
    /// A kernel cache was told to assume one NVRTC version and another is loaded.
    #[error("the kernel cache assumes NVRTC {assumed}, but NVRTC {loaded} is loaded")]
    NvrtcVersionMismatch {
        /// The version the cache keys its programs for (`"13.0"`).
        assumed: Box<str>,
        /// The loaded NVRTC's version.
        loaded: Box<str>,
    },
}

/// A conversion that cannot fail (`u32` into a [`Dim3`](crate::Dim3)) as an `Error`, so
/// fallible and infallible conversions go through one `?`.
impl From<std::convert::Infallible> for Error {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl Error {
    /// An [`Error::InvalidArgument`] with this explanation.
    pub fn invalid_argument(what: impl Into<Cow<'static, str>>) -> Self {
        Self::InvalidArgument(what.into())
    }

    /// An [`Error::Unsupported`].
    pub fn unsupported(feature: &'static str, reason: impl Into<Cow<'static, str>>) -> Self {
        Self::Unsupported {
            feature,
            reason: reason.into(),
        }
    }

    /// The driver's result code, for [`Error::Cuda`].
    pub fn cuda_code(&self) -> Option<CUresult> {
        match self {
            Self::Cuda { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether a library lacks the entry point this call needs (an older driver or toolkit).
    pub fn is_symbol_missing(&self) -> bool {
        matches!(self, Self::Load(LoadError::SymbolMissing { .. }))
    }

    /// An [`Error::UnexpectedAnswer`] from `api`.
    pub(crate) fn unexpected(api: &'static str, detail: impl Into<Cow<'static, str>>) -> Self {
        Self::UnexpectedAnswer {
            api,
            detail: detail.into(),
        }
    }

    /// The error this one wraps, if any ([`Error::LaunchOrdering`]'s and [`Error::Link`]'s
    /// cause).
    fn cause(&self) -> Option<&Error> {
        match self {
            Self::LaunchOrdering { source } | Self::Link { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The log of a failed link ([`Error::Link`]): the linker's error and info logs and the
    /// options used.
    pub fn link_log(&self) -> Option<&str> {
        match self {
            Self::Link { log, .. } => Some(log),
            _ => None,
        }
    }

    /// The CUDA version that introduced a missing symbol, when known (an NCCL, cuBLAS or
    /// cuRAND symbol's release is in the [`LoadError`] itself).
    pub fn missing_since(&self) -> Option<CudaVersion> {
        match self {
            Self::Load(LoadError::SymbolMissing { since, .. }) => since.and_then(Introduced::cuda),
            _ => None,
        }
    }

    /// Builds [`Error::Cuda`], asking the driver for the code's name and message.
    #[cold]
    #[inline(never)]
    pub fn cuda(api: &'static str, code: CUresult) -> Self {
        let (name, message) = match cuda_sys::driver() {
            Ok(driver) => {
                let mut name: *const c_char = std::ptr::null();
                let mut message: *const c_char = std::ptr::null();
                // SAFETY: both out-pointers are valid; on failure they stay null.
                unsafe {
                    let _ = driver.cuGetErrorName(code, &mut name);
                    let _ = driver.cuGetErrorString(code, &mut message);
                }
                // SAFETY: the driver returns pointers to static, NUL-terminated strings that
                // live as long as the library, which is never unloaded.
                unsafe { (static_str(name), static_str(message)) }
            }
            Err(_) => (None, None),
        };
        Self::Cuda {
            api,
            code,
            name: name.unwrap_or("an unknown CUDA error code"),
            message: message.unwrap_or("no message from the driver"),
        }
    }

    /// Builds [`Error::Nvrtc`], asking NVRTC for the code's message.
    #[cold]
    #[inline(never)]
    pub fn nvrtc(api: &'static str, code: nvrtcResult, log: Option<Box<str>>) -> Self {
        let message = nvrtc_sys::nvrtc()
            .ok()
            // SAFETY: nvrtcGetErrorString accepts any code and returns a static string.
            .and_then(|nvrtc| unsafe { nvrtc.nvrtcGetErrorString(code) }.ok())
            // SAFETY: the string is static and NUL-terminated.
            .and_then(|text| unsafe { static_str(text) });
        Self::Nvrtc {
            api,
            code,
            message: message.unwrap_or("unknown NVRTC error"),
            log,
        }
    }

    /// Builds [`Error::NvJitLink`], naming the code from the header (nvJitLink has no call
    /// that describes its codes).
    #[cold]
    #[inline(never)]
    pub fn nvjitlink(api: &'static str, code: nvJitLinkResult) -> Self {
        let (name, message) = nvjitlink_code(code);
        Self::NvJitLink {
            api,
            code,
            name,
            message,
        }
    }

    /// Builds [`Error::Nvml`], asking NVML for the code's message.
    #[cold]
    #[inline(never)]
    pub fn nvml(api: &'static str, code: nvmlReturn_t) -> Self {
        let message = nvml_sys::nvml()
            .ok()
            // SAFETY: nvmlErrorString accepts any code and returns a static string.
            .and_then(|nvml| unsafe { nvml.nvmlErrorString(code) }.ok())
            // SAFETY: the string is static and NUL-terminated.
            .and_then(|text| unsafe { static_str(text) });
        Self::Nvml {
            api,
            code,
            message: message.unwrap_or("unknown NVML error"),
        }
    }

    /// Builds [`Error::Nccl`], asking NCCL for the code's name and its last error's text.
    #[cfg(feature = "nccl")]
    #[cold]
    #[inline(never)]
    pub fn nccl(api: &'static str, code: ncclResult_t) -> Self {
        let (name, last_error) = nccl_texts(code);
        Self::Nccl {
            api,
            code,
            name,
            last_error,
        }
    }

    /// Builds [`Error::NcclAsync`] for a communicator's asynchronous error.
    #[cfg(feature = "nccl")]
    #[cold]
    #[inline(never)]
    pub fn nccl_async(code: ncclResult_t) -> Self {
        let (name, last_error) = nccl_texts(code);
        Self::NcclAsync {
            code,
            name,
            last_error,
        }
    }

    /// NCCL's result code, for [`Error::Nccl`] and [`Error::NcclAsync`].
    #[cfg(feature = "nccl")]
    pub fn nccl_code(&self) -> Option<ncclResult_t> {
        match self {
            Self::Nccl { code, .. } | Self::NcclAsync { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// NVML's return code, for [`Error::Nvml`].
    pub fn nvml_code(&self) -> Option<nvmlReturn_t> {
        match self {
            Self::Nvml { code, .. } => Some(*code),
            _ => None,
        }
    }
}
