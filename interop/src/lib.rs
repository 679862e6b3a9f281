//! The DLPack interop proof: a C ABI library that Python (`ctypes`) loads to hand PyTorch
//! tensors to `cuda-safe`, which views them, launches an NVRTC-compiled kernel on them in place
//! and returns.
//!
//! Every function returns 0 on success or a negative code (-1 invalid argument, -2
//! unsupported, -3 CUDA error, -4 NVRTC error, -5 other, -6 a panic caught at the boundary),
//! with the message copied out by [`cuda_safe_last_error`] into the caller's buffer.
//!
//! The kernel runs on the stream the caller passes (a `CUstream`/`cudaStream_t` as an integer,
//! e.g. `torch.cuda.current_stream().cuda_stream`; 0 is the legacy default stream): the
//! stream the caller asked the producer to make the tensor ready on (DLPack's `stream`
//! argument), so the kernel is ordered after the producer's work there, and the caller's later
//! work on that stream after the kernel. Borrowing calls return once the kernel is queued;
//! consuming calls wait for it before calling the deleter.
//!
//! Ownership of the tensors follows the DLPack protocol:
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

use kernel::Wait;
use status::{code, fail, guarded};

/// Multiplies a float32 CUDA tensor by `factor` in place, borrowing a legacy DLPack tensor
/// (the `"dltensor"` capsule's pointer; its deleter is not called).
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensor` whose memory stays valid until the kernel
/// queued on `stream` is done; `stream` is 0 or a live stream of the tensor's device's primary
/// context (the CUDA runtime's streams are). A pinned or managed tensor runs on the device
/// current on the calling thread (device 0 when none is), whose stream `stream` must be.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_inplace(
    tensor: *mut DLManagedTensor,
    factor: f32,
    stream: usize,
) -> c_int {
    guarded(|| {
        if tensor.is_null() {
            return fail(&Error::invalid_argument("null DLManagedTensor pointer"));
        }
        // SAFETY: non-null and valid for the call per the contract.
        let view = unsafe { StridedMemoryView::from_dltensor(&raw const (*tensor).dl_tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor, stream, Wait::Queued)))
    })
}

/// Multiplies a float32 CUDA tensor by `factor` in place, borrowing a DLPack 1.x tensor (the
/// `"dltensor_versioned"` capsule's pointer; its deleter is not called). A read-only tensor
/// or another major version is refused.
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensorVersioned` whose memory stays valid until the
/// kernel queued on `stream` is done; `stream` as for [`cuda_safe_scale_inplace`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_inplace_versioned(
    tensor: *mut DLManagedTensorVersioned,
    factor: f32,
    stream: usize,
) -> c_int {
    guarded(|| {
        // SAFETY: null or valid for the call per the contract.
        let view = unsafe { StridedMemoryView::borrow_dlpack_versioned(tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor, stream, Wait::Queued)))
    })
}

/// As [`cuda_safe_scale_inplace`], taking ownership: the deleter runs exactly once before
/// this returns, whatever the outcome.
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensor` handed over by its owner (the capsule was
/// renamed `"used_dltensor"`); its deleter may be called from this thread; `stream` as for
/// [`cuda_safe_scale_inplace`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_consume(
    tensor: *mut DLManagedTensor,
    factor: f32,
    stream: usize,
) -> c_int {
    guarded(|| {
        // SAFETY: handed over per the contract; the view deletes it when dropped, after the
        // kernel finished.
        let view = unsafe { StridedMemoryView::from_dlpack(tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor, stream, Wait::Done)))
    })
}

/// As [`cuda_safe_scale_inplace_versioned`], taking ownership: the deleter runs exactly once
/// before this returns, whatever the outcome (a refused major version included).
///
/// # Safety
///
/// `tensor` is null or a valid `DLManagedTensorVersioned` handed over by its owner (the
/// capsule was renamed `"used_dltensor_versioned"`); its deleter may be called from this
/// thread; `stream` as for [`cuda_safe_scale_inplace`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_scale_consume_versioned(
    tensor: *mut DLManagedTensorVersioned,
    factor: f32,
    stream: usize,
) -> c_int {
    guarded(|| {
        // SAFETY: handed over per the contract; the view deletes it when dropped, after the
        // kernel finished.
        let view = unsafe { StridedMemoryView::from_dlpack_versioned(tensor) };
        code(view.and_then(|view| kernel::scale_in_place(&view, factor, stream, Wait::Done)))
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

/// Copies the message of this thread's last failure (empty if none) into `buffer`, which
/// holds `capacity` bytes, NUL-terminated and cut to fit (at a UTF-8 boundary), and returns the
/// message's full length in bytes (without the NUL), so a caller can grow its buffer and ask
/// again. With a null `buffer` or a `capacity` of 0 nothing is written. The caller owns the
/// buffer: nothing it receives dies with a later failure, on this thread or another.
///
/// # Safety
///
/// `buffer` is null or valid for writes of `capacity` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuda_safe_last_error(buffer: *mut c_char, capacity: usize) -> usize {
    // A panic cannot happen here, but the guard keeps the rule that none crosses the boundary.
    let mut length = 0;
    guarded(|| {
        // SAFETY: per the contract.
        length = unsafe { status::copy_last_error(buffer, capacity) };
        status::OK
    });
    length
}
