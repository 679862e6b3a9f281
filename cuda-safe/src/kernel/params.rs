//! A kernel's parameter list, as the driver reports it (`cuKernelGetParamInfo`, CUDA 12.4 on).

use std::sync::Arc;

use crate::sys::{CUkernel, CUresult, Driver, LoadError};

/// One parameter of a kernel, from `cuKernelGetParamInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// Byte offset in the parameter buffer.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// What reading a kernel's parameter list gave.
pub(super) enum ParamRead {
    /// The list.
    Known(Arc<[ParamInfo]>),
    /// The driver cannot tell (before CUDA 12.4): no checks.
    Unknowable,
    /// No context was current, or the driver failed for now: a later read may succeed.
    NotYet,
}

/// The most parameters a kernel can have (its parameters fit in 32,764 bytes), bounding the
/// read whatever a driver answers.
const MAX_PARAMS: usize = 32_764;

/// Reads the kernel's parameter list (`cuKernelGetParamInfo`, which needs a current context).
/// The driver's answers are told apart here (an index past the end ends the list), so the call
/// is made directly rather than through `cu!`.
#[cold]
pub(super) fn read(driver: &'static Driver, kernel: CUkernel) -> ParamRead {
    let mut params = Vec::new();
    while params.len() <= MAX_PARAMS {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: valid out-pointers and kernel; an index past the end is an error code.
        match unsafe { driver.cuKernelGetParamInfo(kernel, params.len(), &mut offset, &mut size) } {
            Ok(CUresult::CUDA_SUCCESS) => params.push(ParamInfo { offset, size }),
            Ok(CUresult::CUDA_ERROR_INVALID_VALUE) => return ParamRead::Known(params.into()),
            // The driver cannot tell, now or later.
            Ok(CUresult::CUDA_ERROR_NOT_SUPPORTED) => return ParamRead::Unknowable,
            Err(LoadError::SymbolMissing { .. }) => return ParamRead::Unknowable,
            // No context, or a transient error: unknown for now, asked again next time.
            Ok(_) | Err(_) => return ParamRead::NotYet,
        }
    }
    ParamRead::Unknowable
}
