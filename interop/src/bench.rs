//! How long building a view from a DLPack tensor takes, measured in the library itself so
//! that no Python or `ctypes` overhead is counted.

use std::hint::black_box;
use std::time::Instant;

use cuda_safe::dlpack::{DLManagedTensor, StridedMemoryView};
use cuda_safe::{Error, Result};

/// Nanoseconds per view, built `iterations` times from `tensor` and dropped: borrowed
/// ([`StridedMemoryView::from_dltensor`]) and owned ([`StridedMemoryView::from_dlpack`] of a
/// copy of the struct whose deleter does nothing, so the owner's allocation and the deleter
/// call are counted but the producer's tensor is left alone).
///
/// # Safety
///
/// `tensor` is a valid `DLManagedTensor` whose arrays stay readable during the call.
pub(crate) unsafe fn view_construction_ns(
    tensor: *const DLManagedTensor,
    iterations: u64,
) -> Result<(f64, f64)> {
    if iterations == 0 {
        return Err(Error::invalid_argument("zero iterations"));
    }
    // SAFETY: valid per the contract (null was refused by the caller).
    let dl_tensor = unsafe { &(*tensor).dl_tensor };
    // SAFETY: as above; checks the tensor once so the loops below measure successes.
    unsafe { StridedMemoryView::from_dltensor(dl_tensor) }?;

    let start = Instant::now();
    for _ in 0..iterations {
        // SAFETY: as above.
        let view = unsafe { StridedMemoryView::from_dltensor(black_box(dl_tensor)) };
        black_box(view.ok());
    }
    let borrowed = start.elapsed();

    let mut copy = DLManagedTensor {
        dl_tensor: *dl_tensor,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(keep),
    };
    let start = Instant::now();
    for _ in 0..iterations {
        // SAFETY: `copy` stays valid; its deleter only returns, so it may run any number of
        // times.
        let view = unsafe { StridedMemoryView::from_dlpack(black_box(&raw mut copy)) };
        black_box(view.ok());
    }
    let owned = start.elapsed();
    let per_view = |total: std::time::Duration| total.as_nanos() as f64 / iterations as f64;
    Ok((per_view(borrowed), per_view(owned)))
}

/// A deleter that frees nothing: the benchmark's struct lives on its stack.
unsafe extern "C" fn keep(_: *mut DLManagedTensor) {}
