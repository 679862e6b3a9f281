//! Checking a library call's outcome: the `check*` functions, and the macros that call an
//! entry point and check it under the function's own name ([`cu!`], [`cu_ready!`], [`nvrtc!`],
//! [`nvjitlink!`], [`nvfatbin!`], [`nvml!`], and with their features NCCL's, cuBLAS's and
//! cuRAND's).

use cuda_sys::{CUresult, LoadError};
use nvfatbin_sys::nvFatbinResult;
use nvjitlink_sys::nvJitLinkResult;
use nvml_sys::nvmlReturn_t;
use nvrtc_sys::nvrtcResult;

use super::{Error, Result};

/// Calls a CUDA driver entry point and checks its result, naming the function once so the API
/// in an error is always the call made: `unsafe { cu!(driver, cuStreamSynchronize(stream)) }`
/// is `Result<()>`. The caller's `unsafe` block covers the call.
///
/// Debug builds first refuse a call made from inside a host callback
/// ([`refuse_inside_callback`](crate::callback::refuse_inside_callback)).
macro_rules! cu {
    ($driver:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $crate::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::error::check(stringify!($function), $driver.$function($($argument),*)),
            Err(error) => Err(error),
        }
    };
}

/// [`cu!`] for a query whose `CUDA_ERROR_NOT_READY` means "not yet": `Result<bool>`, `true`
/// when done.
macro_rules! cu_ready {
    ($driver:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $crate::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => {
                $crate::error::check_ready(stringify!($function), $driver.$function($($argument),*))
            }
            Err(error) => Err(error),
        }
    };
}

/// [`cu!`] for NVRTC: `unsafe { nvrtc!(nvrtc, nvrtcVersion(&mut major, &mut minor)) }`.
macro_rules! nvrtc {
    ($nvrtc:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check_nvrtc(stringify!($function), $nvrtc.$function($($argument),*))
    };
}

/// [`cu!`] for nvJitLink: `unsafe { nvjitlink!(nvjitlink, nvJitLinkComplete(handle)) }`.
macro_rules! nvjitlink {
    ($nvjitlink:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check_nvjitlink(stringify!($function), $nvjitlink.$function($($argument),*))
    };
}

/// [`cu!`] for nvFatbin: `unsafe { nvfatbin!(nvfatbin, nvFatbinSize(handle, &mut size)) }`.
macro_rules! nvfatbin {
    ($nvfatbin:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check_nvfatbin(stringify!($function), $nvfatbin.$function($($argument),*))
    };
}

/// [`cu!`] for NVML: `unsafe { nvml!(nvml, nvmlDeviceGetCount_v2(&mut count)) }`.
macro_rules! nvml {
    ($nvml:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check_nvml(stringify!($function), $nvml.$function($($argument),*))
    };
}

/// [`cu!`] for NCCL: `unsafe { nccl!(nccl, ncclGroupEnd()) }`. `ncclInProgress` counts as
/// success: a non-blocking communicator's call was accepted and finishes in the background
/// (its completion and its errors are polled with `ncclCommGetAsyncError`).
#[cfg(feature = "nccl")]
macro_rules! nccl {
    ($nccl:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check_nccl(stringify!($function), $nccl.$function($($argument),*))
    };
}

/// [`cu!`] for cuBLAS: `unsafe { cublas!(cublas, cublasSetStream_v2(handle, stream)) }`.
/// Debug builds first refuse a call made from inside a host callback, as [`cu!`] does.
#[cfg(feature = "blas")]
macro_rules! cublas {
    ($cublas:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $crate::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::error::check_cublas(
                stringify!($function),
                $cublas.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

/// [`cublas!`] for cuBLASLt, whose status is cuBLAS's own type under another crate's name.
#[cfg(feature = "blas")]
macro_rules! cublaslt {
    ($lt:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $crate::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::error::check_cublas(
                stringify!($function),
                $lt.$function($($argument),*)
                    .map(|status| ::cublas_sys::cublasStatus_t(status.0)),
            ),
            Err(error) => Err(error),
        }
    };
}

/// [`cu!`] for cuRAND: `unsafe { curand!(curand, curandSetStream(generator, stream)) }`.
#[cfg(feature = "rand")]
macro_rules! curand {
    ($curand:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $crate::callback::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::error::check_curand(
                stringify!($function),
                $curand.$function($($argument),*),
            ),
            Err(error) => Err(error),
        }
    };
}

#[cfg(feature = "rand")]
pub(crate) use curand;
#[cfg(feature = "nccl")]
pub(crate) use nccl;
pub(crate) use {cu, cu_ready, nvfatbin, nvjitlink, nvml, nvrtc};
#[cfg(feature = "blas")]
pub(crate) use {cublas, cublaslt};

/// Turns a driver call's outcome into `Result<()>`; the error path is out of line. Called
/// through [`cu!`], which names the call.
#[inline(always)]
pub(crate) fn check(api: &'static str, result: Result<CUresult, LoadError>) -> Result<()> {
    match result {
        Ok(CUresult::CUDA_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::cuda(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns a query's outcome into "done?": `CUDA_SUCCESS` is done, `CUDA_ERROR_NOT_READY` is not
/// yet, anything else an error.
#[inline]
pub(crate) fn check_ready(api: &'static str, result: Result<CUresult, LoadError>) -> Result<bool> {
    match result {
        Ok(CUresult::CUDA_ERROR_NOT_READY) => Ok(false),
        other => check(api, other).map(|()| true),
    }
}

/// Turns an NVRTC call's outcome into `Result<()>` (through [`nvrtc!`]).
#[inline]
pub(crate) fn check_nvrtc(api: &'static str, result: Result<nvrtcResult, LoadError>) -> Result<()> {
    match result {
        Ok(nvrtcResult::NVRTC_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::nvrtc(api, code, None)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns an nvJitLink call's outcome into `Result<()>` (through [`nvjitlink!`]).
#[inline]
pub(crate) fn check_nvjitlink(
    api: &'static str,
    result: Result<nvJitLinkResult, LoadError>,
) -> Result<()> {
    match result {
        Ok(nvJitLinkResult::NVJITLINK_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::nvjitlink(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns an nvFatbin call's outcome into `Result<()>` (through [`nvfatbin!`]).
#[inline]
pub(crate) fn check_nvfatbin(
    api: &'static str,
    result: Result<nvFatbinResult, LoadError>,
) -> Result<()> {
    match result {
        Ok(nvFatbinResult::NVFATBIN_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::nvfatbin(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns an NCCL call's outcome into `Result<()>` (through [`nccl!`]).
#[cfg(feature = "nccl")]
#[inline(always)]
pub(crate) fn check_nccl(
    api: &'static str,
    result: Result<nccl_sys::ncclResult_t, LoadError>,
) -> Result<()> {
    use nccl_sys::ncclResult_t;
    match result {
        Ok(ncclResult_t::ncclSuccess | ncclResult_t::ncclInProgress) => Ok(()),
        Ok(code) => Err(Error::nccl(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns an NVML call's outcome into `Result<()>` (through [`nvml!`]).
#[inline]
pub(crate) fn check_nvml(api: &'static str, result: Result<nvmlReturn_t, LoadError>) -> Result<()> {
    match result {
        Ok(nvmlReturn_t::NVML_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::nvml(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns a cuBLAS (or cuBLASLt) call's outcome into `Result<()>` (through [`cublas!`] and
/// [`cublaslt!`]); the error path is out of line.
#[cfg(feature = "blas")]
#[inline(always)]
pub(crate) fn check_cublas(
    api: &'static str,
    result: Result<cublas_sys::cublasStatus_t, LoadError>,
) -> Result<()> {
    match result {
        Ok(cublas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::cublas(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns a cuRAND call's outcome into `Result<()>` (through [`curand!`]).
#[cfg(feature = "rand")]
#[inline(always)]
pub(crate) fn check_curand(
    api: &'static str,
    result: Result<curand_sys::curandStatus_t, LoadError>,
) -> Result<()> {
    match result {
        Ok(curand_sys::curandStatus_t::CURAND_STATUS_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::curand(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}
