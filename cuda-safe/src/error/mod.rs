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
use cuda_sys::{
    CUgraphExecUpdateResult, CUgraphInstantiateResult, CUresult, CudaVersion, Introduced, LoadError,
};
#[cfg(feature = "fatbin")]
use nvfatbin_sys::nvFatbinResult;
#[cfg(feature = "nvjitlink")]
use nvjitlink_sys::nvJitLinkResult;
use nvml_sys::nvmlReturn_t;
use nvrtc_sys::nvrtcResult;

mod capture;
mod check;
mod display;
mod kinds;
mod library;
mod message;
#[cfg(feature = "fatbin")]
mod nvfatbin_codes;
#[cfg(feature = "nvjitlink")]
mod nvjitlink_codes;
#[cfg(test)]
mod tests;

pub use check::{check, check_ready};
#[cfg(feature = "fatbin")]
pub(crate) use check::{check_nvfatbin, nvfatbin};
#[cfg(feature = "nvjitlink")]
pub(crate) use check::{check_nvjitlink, nvjitlink};
pub(crate) use check::{
    check_nvml, check_nvml_wait, check_nvrtc, cu, cu_ready, nvml, nvml_waited, nvrtc,
};
#[cfg(feature = "nvjitlink")]
use nvjitlink_codes::nvjitlink_code;

pub use library::{LibraryError, LibraryFailure};

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
#[derive(Clone)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed. Errors of stream capture (codes 900 to 908) also say what
    /// usually causes them ([`Error::is_capture_error`]).
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
    #[cfg(feature = "nvjitlink")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nvjitlink")))]
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
    /// An nvFatbin call failed while a `FatbinBuilder` built a fatbin. The message names the
    /// code as `nvFatbin.h` does (`NVFATBIN_ERROR_ELF_ARCH_MISMATCH`).
    #[cfg(feature = "fatbin")]
    #[cfg_attr(docsrs, doc(cfg(feature = "fatbin")))]
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
    Link {
        /// The failed linker call ([`Error::NvJitLink`], or [`Error::Cuda`] from the driver
        /// linker).
        source: Box<Error>,
        /// The linker's error log, then its info log, then the options used.
        log: Box<str>,
    },
    /// An NVML call failed.
    Nvml {
        /// The NVML function (`nvmlDeviceGetPowerUsage`).
        api: &'static str,
        /// The raw return code.
        code: nvml_sys::nvmlReturn_t,
        /// `nvmlErrorString` of the code.
        message: &'static str,
    },
    /// A library could not be loaded; every path tried is listed.
    Load(LoadError),
    /// The argument was refused before it reached the driver.
    InvalidArgument(Cow<'static, str>),
    /// The feature needs a newer driver, toolkit or device than this one.
    Unsupported {
        /// What was asked for (`green-context workqueues`).
        feature: &'static str,
        /// What is missing (`needs CUDA 13.1, the driver has 13.0`).
        reason: Cow<'static, str>,
    },
    /// `Event::elapsed` on an event created without timing.
    EventNotTimed,
    /// `Event::elapsed` on an event that was never recorded.
    EventNotRecorded,
    /// A file operation of a program cache failed.
    CacheIo {
        /// The file or directory the operation was on.
        path: std::path::PathBuf,
        /// The operating system's error (shared, so that `Error` stays `Clone`).
        source: std::sync::Arc<std::io::Error>,
    },
    /// A program cache directory is not this user's alone (owned by another user, writable by
    /// group or others, or not a directory), so code read from it could be anyone's: the
    /// cache refuses it. `reason` says what is wrong and how to fix it.
    CacheNotPrivate {
        /// The directory (or what stands where a directory should be).
        path: std::path::PathBuf,
        /// What is wrong, and the fix (`chmod go-w ...`, or removing it).
        reason: Cow<'static, str>,
    },
    /// A library answered something that cannot be right (a green split whose groups differ
    /// from the plan, a kernel with no name): not the caller's mistake, and worth a report.
    UnexpectedAnswer {
        /// The call that answered.
        api: &'static str,
        /// What was wrong with the answer.
        detail: Cow<'static, str>,
    },
    /// A kernel was launched and has finished, but ordering its buffers' streams after it
    /// failed; the cause is the [`source`](std::error::Error::source).
    LaunchOrdering {
        /// The ordering call's error.
        source: Box<Error>,
    },
    /// A host callback (a stream's host function or a graph's host node) panicked. The panic
    /// was caught on the driver's thread and is reported once, by the next call on the stream
    /// or graph that queued it.
    CallbackPanicked {
        /// The first panic's message.
        message: Box<str>,
        /// How many callbacks panicked since the last report (at least 1).
        count: usize,
    },
    /// `cuGraphExecUpdate` refused to update an executable graph from another graph; the
    /// executable is unchanged and still runs as before.
    GraphUpdateRefused {
        /// The driver's reason.
        reason: CUgraphExecUpdateResult,
        /// What the reason means.
        detail: &'static str,
        /// Where the node the refusal is about stands in `Graph::nodes` of the graph given
        /// to the update (for a changed topology, the head of the edge that differs); `None`
        /// when the driver names no node.
        node: Option<usize>,
        /// For a changed topology, where the tail of the edge that differs stands in the same
        /// list; otherwise `None`.
        from_node: Option<usize>,
    },
    /// `cuGraphInstantiateWithParams` refused to instantiate a graph, giving a reason: a
    /// structure it cannot run, or, instantiating for device launch, a node or a context a
    /// device graph cannot have.
    GraphInstantiateRefused {
        /// The driver's reason.
        reason: CUgraphInstantiateResult,
        /// What the reason means.
        detail: &'static str,
    },
    /// A graph arena was asked to reset or close while its memory may still be used: a
    /// launch of a graph captured in it may still run, a capture records into it, or (for a
    /// close) other handles, buffers or graphs hold it. Nothing was freed.
    ArenaBusy {
        /// Executables whose last launch may still run.
        in_flight: usize,
        /// Captures recording into the arena now.
        capturing: usize,
        /// Other handles, buffers and graphs holding the arena (for a close; 0 for a reset).
        holders: usize,
    },
    /// A graph arena's reservation has no free range for an allocation (it never grows past
    /// its reservation: the addresses it gave out stay valid). Counts as out of memory
    /// ([`Error::is_out_of_memory`]).
    ArenaFull {
        /// The bytes asked for.
        requested: usize,
        /// The arena's reservation.
        reserved: usize,
        /// The bytes live buffers hold.
        in_use: usize,
        /// The bytes held for captured graphs until a reset.
        held: usize,
    },
    /// A failure of a library or subsystem that an annex crate wraps: cuBLAS, cuBLASLt and
    /// cuRAND (`cuda-safe-libs`), NCCL and its bootstrap (`cuda-safe-nccl`), the IPC channel
    /// (`cuda-safe-ipc`), the completion reactor (`cuda-safe-async`). The annex's own error
    /// type is inside: [`Error::library_error`] gives it back, and the predicates
    /// ([`is_out_of_memory`](Error::is_out_of_memory) and the others) ask it.
    Library(LibraryError),
    /// A kernel cache was told to assume one NVRTC version and another is loaded.
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
    pub fn unexpected(api: &'static str, detail: impl Into<Cow<'static, str>>) -> Self {
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
    #[cfg(feature = "nvjitlink")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nvjitlink")))]
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

    /// NVML's return code, for [`Error::Nvml`].
    pub fn nvml_code(&self) -> Option<nvmlReturn_t> {
        match self {
            Self::Nvml { code, .. } => Some(*code),
            _ => None,
        }
    }
}
