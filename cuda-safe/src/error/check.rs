//! Checking a library call's outcome: the `check*` functions, and the macros that call an
//! entry point and check it under the function's own name ([`cu!`], [`cu_ready!`], [`nvrtc!`],
//! `nvjitlink!` (feature `nvjitlink`), `nvfatbin!` (feature `fatbin`), [`nvml!`]). The annex crates check their libraries' calls
//! the same way, with macros of their own over [`refuse_inside_callback`] and their own
//! `check` functions.
//!
//! [`refuse_inside_callback`]: crate::callback::refuse_inside_callback

use cuda_sys::{CUresult, LoadError};
#[cfg(feature = "fatbin")]
use nvfatbin_sys::nvFatbinResult;
#[cfg(feature = "nvjitlink")]
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
///
/// Exported for the crates that wrap other CUDA libraries on this one: their driver calls are
/// named and checked the same way (`cuda_safe::cu!(driver, cuStreamQuery(stream))`).
#[macro_export]
macro_rules! cu {
    ($driver:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $crate::__private::refuse_inside_callback(stringify!($function)) {
            Ok(()) => $crate::__private::check(stringify!($function), $driver.$function($($argument),*)),
            Err(error) => Err(error),
        }
    };
}

/// [`cu!`] for a query whose `CUDA_ERROR_NOT_READY` means "not yet": `Result<bool>`, `true`
/// when done.
#[macro_export]
macro_rules! cu_ready {
    ($driver:expr, $function:ident($($argument:expr),* $(,)?)) => {
        match $crate::__private::refuse_inside_callback(stringify!($function)) {
            Ok(()) => {
                $crate::__private::check_ready(stringify!($function), $driver.$function($($argument),*))
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
#[cfg(feature = "nvjitlink")]
macro_rules! nvjitlink {
    ($nvjitlink:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check_nvjitlink(stringify!($function), $nvjitlink.$function($($argument),*))
    };
}

/// [`cu!`] for nvFatbin: `unsafe { nvfatbin!(nvfatbin, nvFatbinSize(handle, &mut size)) }`.
#[cfg(feature = "fatbin")]
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

/// [`nvml!`] for a wait with a timeout: `Ok(false)` when it timed out (`NVML_ERROR_TIMEOUT`,
/// no error made), `Ok(true)` when something came.
macro_rules! nvml_waited {
    ($nvml:expr, $function:ident($($argument:expr),* $(,)?)) => {
        $crate::error::check_nvml_wait(stringify!($function), $nvml.$function($($argument),*))
    };
}

pub(crate) use crate::{cu, cu_ready};
#[cfg(feature = "fatbin")]
pub(crate) use nvfatbin;
#[cfg(feature = "nvjitlink")]
pub(crate) use nvjitlink;
pub(crate) use {nvml, nvml_waited, nvrtc};

/// Turns a driver call's outcome into `Result<()>`; the error path is out of line. Called
/// through [`cu!`], which names the call.
#[inline(always)]
pub fn check(api: &'static str, result: Result<CUresult, LoadError>) -> Result<()> {
    match result {
        Ok(CUresult::CUDA_SUCCESS) => Ok(()),
        Ok(code) => Err(Error::cuda(api, code)),
        Err(error) => Err(Error::Load(error)),
    }
}

/// Turns a query's outcome into "done?": `CUDA_SUCCESS` is done, `CUDA_ERROR_NOT_READY` is not
/// yet, anything else an error.
#[inline]
pub fn check_ready(api: &'static str, result: Result<CUresult, LoadError>) -> Result<bool> {
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
#[cfg(feature = "nvjitlink")]
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
#[cfg(feature = "fatbin")]
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

/// Turns an NVML wait's outcome into "did something come?" (through [`nvml_waited!`]):
/// `NVML_ERROR_TIMEOUT` is `false`, success `true`, anything else an error.
#[inline]
pub(crate) fn check_nvml_wait(
    api: &'static str,
    result: Result<nvmlReturn_t, LoadError>,
) -> Result<bool> {
    match result {
        Ok(nvmlReturn_t::NVML_ERROR_TIMEOUT) => Ok(false),
        other => check_nvml(api, other).map(|()| true),
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
