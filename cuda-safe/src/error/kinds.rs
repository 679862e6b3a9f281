//! What kind of failure an [`Error`] is, whichever library reported it: out of memory, not
//! supported, a capture's error, no usable device.

use cuda_sys::{CUresult, LoadError};
use nvml_sys::nvmlReturn_t;
use nvrtc_sys::nvrtcResult;

use super::Error;
use super::capture::capture_hint;

impl Error {
    /// Whether memory ran out: the driver's `CUDA_ERROR_OUT_OF_MEMORY`, NVRTC's or NVML's
    /// out-of-memory code, an annex library's ([`Error::Library`]) or a full graph arena
    /// ([`Error::ArenaFull`]), also when wrapped by another error of this crate.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::Cuda { code, .. } => *code == CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            Self::Nvrtc { code, .. } => *code == nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY,
            Self::Nvml { code, .. } => *code == nvmlReturn_t::NVML_ERROR_MEMORY,
            Self::Library(error) => error.failure().is_out_of_memory(),
            Self::ArenaFull { .. } => true,
            other => other.cause().is_some_and(Error::is_out_of_memory),
        }
    }

    /// Whether what was asked is not supported here, whoever says so: the crate
    /// ([`Error::Unsupported`]), the driver (`CUDA_ERROR_NOT_SUPPORTED` and the
    /// `CUDA_ERROR_UNSUPPORTED_*` codes), NVML (`NVML_ERROR_NOT_SUPPORTED`), an annex library
    /// ([`Error::Library`]), or a library too old to have the entry point at all
    /// ([`Error::is_symbol_missing`]).
    pub fn is_not_supported(&self) -> bool {
        match self {
            Self::Unsupported { .. } => true,
            Self::Load(LoadError::SymbolMissing { .. }) => true,
            Self::Cuda { code, .. } => matches!(
                *code,
                CUresult::CUDA_ERROR_NOT_SUPPORTED
                    | CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                    | CUresult::CUDA_ERROR_UNSUPPORTED_LIMIT
                    | CUresult::CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY
                    | CUresult::CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC
            ),
            Self::Nvml { code, .. } => *code == nvmlReturn_t::NVML_ERROR_NOT_SUPPORTED,
            // NVJITLINK_ERROR_UNSUPPORTED_ARCH, which only the CUDA 13 header names.
            #[cfg(feature = "nvjitlink")]
            Self::NvJitLink { code, .. } => code.0 == 17,
            Self::Library(error) => error.failure().is_not_supported(),
            other => other.cause().is_some_and(Error::is_not_supported),
        }
    }

    /// Whether the context is dead: a kernel faulted (an illegal address or instruction, a
    /// misaligned address, a device-side assert, a hardware stack error, a launch that failed or
    /// timed out) or the GPU reported an uncorrectable or contained error, and the driver now
    /// fails every call on that context with this error ("sticky"). A server tells "this
    /// context is dead: rebuild it (and every allocation made in it), or restart the process"
    /// from "this call failed" with it; `false` for every other error, also for the library
    /// errors of the annexes (their own kernels' faults reach the caller as the driver's).
    pub fn is_context_poisoned(&self) -> bool {
        match self {
            Self::Cuda { code, .. } => matches!(
                *code,
                CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
                    | CUresult::CUDA_ERROR_CONTAINED
                    | CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
                    | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
                    | CUresult::CUDA_ERROR_ASSERT
                    | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
                    | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
                    | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
                    | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
                    | CUresult::CUDA_ERROR_INVALID_PC
                    | CUresult::CUDA_ERROR_LAUNCH_FAILED
                    | CUresult::CUDA_ERROR_EXTERNAL_DEVICE
            ),
            other => other.cause().is_some_and(Error::is_context_poisoned),
        }
    }

    /// Whether the driver refused work because of a stream capture: work not allowed while a
    /// stream captures (a synchronization, the legacy default stream, a call prohibited by the
    /// capture's mode), a capture that was invalidated, not joined, merged or ended on the
    /// wrong thread (`CUDA_ERROR_STREAM_CAPTURE_*`, `CUDA_ERROR_CAPTURED_EVENT`).
    pub fn is_capture_error(&self) -> bool {
        match self {
            Self::Cuda { code, .. } => capture_hint(*code).is_some(),
            other => other.cause().is_some_and(Error::is_capture_error),
        }
    }

    /// Whether this process has no usable CUDA driver or GPU: `libcuda` (or NVML) could not
    /// be loaded, or the driver says there is no device or that it is too old or not loaded.
    /// Tests and tools use it to skip GPU work with a reason instead of failing.
    pub fn is_no_device(&self) -> bool {
        match self {
            Self::Load(LoadError::LibraryNotFound { library, .. }) => {
                *library == cuda_sys::LIBCUDA.name || *library == nvml_sys::LIBNVML.name
            }
            Self::Cuda { code, .. } => matches!(
                *code,
                CUresult::CUDA_ERROR_NO_DEVICE
                    | CUresult::CUDA_ERROR_NOT_INITIALIZED
                    | CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
                    | CUresult::CUDA_ERROR_STUB_LIBRARY
                    | CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE
            ),
            Self::Nvml { code, .. } => matches!(
                *code,
                nvmlReturn_t::NVML_ERROR_DRIVER_NOT_LOADED
                    | nvmlReturn_t::NVML_ERROR_LIBRARY_NOT_FOUND
            ),
            _ => false,
        }
    }
}
