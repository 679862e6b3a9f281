//! What may be released once watched work has failed: memory a future holds is given back only
//! when the GPU can no longer touch it.
//!
//! A sticky error (a kernel fault, an uncorrectable ECC error, a context destroyed or the
//! driver shut down) stops the context's work for good: what the work used may then be freed.
//! Any other failure to learn the work's progress (an event recorded by a capture that began
//! meanwhile on another thread, a handle the driver no longer knows) says nothing about the
//! GPU, which may still read or write that memory: it is then kept for the rest of the
//! process, and the leak logged, rather than freed under a running copy or kernel.

use cuda_safe::Error;
use cuda_sys::CUresult;

/// Whether `error` means the work it came from can no longer run: a sticky error of its
/// context, a destroyed context or a driver shutting down.
pub(super) fn gpu_has_stopped(error: &Error) -> bool {
    let Some(code) = error.cuda_code() else {
        return false;
    };
    matches!(
        code,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
            | CUresult::CUDA_ERROR_ASSERT
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUresult::CUDA_ERROR_INVALID_PC
            | CUresult::CUDA_ERROR_LAUNCH_FAILED
            | CUresult::CUDA_ERROR_TENSOR_MEMORY_LEAK
            | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
            | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
            | CUresult::CUDA_ERROR_DEINITIALIZED
    )
}

/// Drops `held` when the failure `error` means the GPU has stopped; otherwise keeps it for the
/// rest of the process (the GPU may still use it) and logs why.
pub(super) fn release_after<T>(held: T, error: &Error) {
    if gpu_has_stopped(error) {
        drop(held);
    } else {
        log::error!(
            "cuda-safe: a completion failed ({error}) while the GPU may still use what it \
             holds: that memory is kept, never freed, for the rest of the process"
        );
        std::mem::forget(held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_that_stop_the_context_release_memory() {
        let fault = Error::Cuda {
            api: "cuEventQuery",
            code: CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS",
            message: "an illegal memory access was encountered",
        };
        assert!(gpu_has_stopped(&fault));
        let captured = Error::Cuda {
            api: "cuEventQuery",
            code: CUresult::CUDA_ERROR_CAPTURED_EVENT,
            name: "CUDA_ERROR_CAPTURED_EVENT",
            message: "operation not permitted on an event last recorded in a capturing stream",
        };
        assert!(!gpu_has_stopped(&captured));
        assert!(!gpu_has_stopped(&Error::invalid_argument(
            "no driver answer"
        )));

        let kept = std::sync::Arc::new(());
        release_after(kept.clone(), &fault);
        assert_eq!(std::sync::Arc::strong_count(&kept), 1, "released");
        release_after(kept.clone(), &captured);
        assert_eq!(std::sync::Arc::strong_count(&kept), 2, "kept for good");
    }
}
