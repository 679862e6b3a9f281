//! The DLPack interop proof: a C ABI library that Python (`ctypes`) loads to hand PyTorch
//! tensors to `cuda-safe`, which views them, launches an NVRTC-compiled kernel on them in place
//! and returns.
//!
//! Every function returns 0 on success or a negative code (-1 invalid argument, -2
//! unsupported, -3 CUDA error, -4 NVRTC error, -5 other, -6 a panic caught at the boundary),
//! with the message available from [`cuda_safe_last_error`]. Ownership of the tensors follows the DLPack protocol:
//!
//! - the `*_scale_inplace*` functions **borrow**: the producer's capsule keeps ownership and
//!   its destructor calls the deleter later; the Python side keeps the tensor and the capsule
//!   alive for the call;
//! - the `*_scale_consume*` functions **take ownership**: the caller renames the capsule to
//!   `"used_dltensor"` / `"used_dltensor_versioned"` first (so its destructor leaves the
//!   tensor alone), and the library calls the deleter exactly once before returning, on
//!   success and on every error.
//!
//! See `interop/python/scale_torch.py` and `docs/interop.md`.

mod bench;
mod kernel;
mod status;

use std::ffi::{c_char, c_int};

use cuda_safe::Error;
use cuda_safe::dlpack::{DLManagedTensor, DLManagedTensorVersioned, StridedMemoryView};

use status::{code, fail, guarded};

/// Multiplies a float32 CUDA tensor by `factor` in place, borrowing a legacy DLPack tensor
/// (the `"dltensor"` capsule's pointer; its deleter is not called).
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensor` whose memory stays valid during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_inplace(
    tensor: *mut DLManagedTensor,
    factor: f32,
) -> c_int {
    guarded(|| {
        if tensor.is_null() {
            return fail(&Error::invalid_argument("null DLManagedTensor pointer"));
        }
        // SAFETY: non-null and valid for the call per the contract.
        let view = unsafe { StridedMemoryView::from_dltensor(&raw const (*tensor).dl_tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor)))
    })
}

/// Multiplies a float32 CUDA tensor by `factor` in place, borrowing a DLPack 1.x tensor (the
/// `"dltensor_versioned"` capsule's pointer; its deleter is not called). A read-only tensor
/// or another major version is refused.
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensorVersioned` whose memory stays valid during
/// the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_inplace_versioned(
    tensor: *mut DLManagedTensorVersioned,
    factor: f32,
) -> c_int {
    guarded(|| {
        // SAFETY: null or valid for the call per the contract.
        let view = unsafe { StridedMemoryView::borrow_dlpack_versioned(tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor)))
    })
}

/// As [`cuda_safe_scale_inplace`], taking ownership: the deleter runs exactly once before
/// this returns, whatever the outcome.
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensor` handed over by its owner (the capsule was
/// renamed `"used_dltensor"`); its deleter may be called from this thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_consume(
    tensor: *mut DLManagedTensor,
    factor: f32,
) -> c_int {
    guarded(|| {
        // SAFETY: handed over per the contract; the view deletes it when dropped.
        let view = unsafe { StridedMemoryView::from_dlpack(tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor)))
    })
}

/// As [`cuda_safe_scale_inplace_versioned`], taking ownership: the deleter runs exactly once
/// before this returns, whatever the outcome (a refused major version included).
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensorVersioned` handed over by its owner (the
/// capsule was renamed `"used_dltensor_versioned"`); its deleter may be called from this
/// thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_consume_versioned(
    tensor: *mut DLManagedTensorVersioned,
    factor: f32,
) -> c_int {
    guarded(|| {
        // SAFETY: handed over per the contract; the view deletes it when dropped.
        let view = unsafe { StridedMemoryView::from_dlpack_versioned(tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor)))
    })
}

/// Builds a view from a borrowed legacy DLPack tensor `iterations` times and writes the
/// nanoseconds per view into `borrowed_ns`, and the same for owned imports (a copy of the
/// struct with a deleter that does nothing) into `owned_ns`. The tensor is left untouched.
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensor` whose arrays stay readable during the call;
/// `borrowed_ns` and `owned_ns` are null or valid places for a `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_view_construction_ns(
    tensor: *mut DLManagedTensor,
    iterations: u64,
    borrowed_ns: *mut f64,
    owned_ns: *mut f64,
) -> c_int {
    guarded(|| {
        if tensor.is_null() || borrowed_ns.is_null() || owned_ns.is_null() {
            return fail(&Error::invalid_argument("a null pointer argument"));
        }
        // SAFETY: valid per the contract.
        match unsafe { bench::view_construction_ns(tensor, iterations) } {
            Ok((borrowed, owned)) => {
                // SAFETY: valid places for a double, per the contract.
                unsafe {
                    *borrowed_ns = borrowed;
                    *owned_ns = owned;
                }
                status::OK
            }
            Err(error) => fail(&error),
        }
    })
}

/// The message of this thread's last failure (empty if none), valid until its next failing
/// call into this library.
#[unsafe(no_mangle)]
pub extern "C" fn cuda_safe_last_error() -> *const c_char {
    status::last_error()
}
