//! dlpark's owning DLPack handles (`dlpark::versioned::Dlpack`, `dlpark::legacy::Dlpack`) as
//! views and back, without `unsafe`: a dlpark handle owns a valid managed tensor whose deleter
//! may run on any thread (dlpark's own contract), which is what
//! [`StridedMemoryView::from_dlpack_versioned`] asks of its caller. Through them, dlpark's
//! ndarray, candle, cudarc and pyo3 backends reach this crate's views.

use dlpark::ffi;

use super::abi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use super::view::StridedMemoryView;
use crate::error::{Error, Result};
use crate::stream::Stream;

// dlpark's structs are the same C structs as this crate's (DLPack 1.x): same size, alignment
// and field offsets, so a pointer to one is a pointer to the other.
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    type Ours = DLManagedTensorVersioned;
    type Theirs = ffi::DLManagedTensorVersioned;
    assert!(size_of::<Theirs>() == size_of::<Ours>());
    assert!(align_of::<Theirs>() == align_of::<Ours>());
    assert!(offset_of!(Theirs, version) == offset_of!(Ours, version));
    assert!(offset_of!(Theirs, manager_ctx) == offset_of!(Ours, manager_ctx));
    assert!(offset_of!(Theirs, deleter) == offset_of!(Ours, deleter));
    assert!(offset_of!(Theirs, flags) == offset_of!(Ours, flags));
    assert!(offset_of!(Theirs, dl_tensor) == offset_of!(Ours, dl_tensor));
    assert!(size_of::<ffi::DLManagedTensor>() == size_of::<DLManagedTensor>());
    assert!(align_of::<ffi::DLManagedTensor>() == align_of::<DLManagedTensor>());
    assert!(offset_of!(ffi::DLManagedTensor, dl_tensor) == offset_of!(DLManagedTensor, dl_tensor));
    assert!(
        offset_of!(ffi::DLManagedTensor, manager_ctx) == offset_of!(DLManagedTensor, manager_ctx)
    );
    assert!(offset_of!(ffi::DLManagedTensor, deleter) == offset_of!(DLManagedTensor, deleter));
    assert!(offset_of!(ffi::DLTensor, data) == offset_of!(DLTensor, data));
    assert!(offset_of!(ffi::DLTensor, device) == offset_of!(DLTensor, device));
    assert!(offset_of!(ffi::DLTensor, ndim) == offset_of!(DLTensor, ndim));
    assert!(offset_of!(ffi::DLTensor, dtype) == offset_of!(DLTensor, dtype));
    assert!(offset_of!(ffi::DLTensor, shape) == offset_of!(DLTensor, shape));
    assert!(offset_of!(ffi::DLTensor, strides) == offset_of!(DLTensor, strides));
    assert!(offset_of!(ffi::DLTensor, byte_offset) == offset_of!(DLTensor, byte_offset));
};

#[cfg_attr(docsrs, doc(cfg(feature = "dlpark")))]
impl StridedMemoryView {
    /// Hands the view to dlpark as an owning DLPack 1.x handle, ordered with `consumer` as
    /// [`into_dlpack_versioned`](Self::into_dlpack_versioned) does; dropping the handle (or the
    /// tensor a dlpark backend makes of it) calls the deleter.
    ///
    /// # Errors
    ///
    /// As [`into_dlpack_versioned`](Self::into_dlpack_versioned).
    pub fn into_dlpark(self, consumer: Option<&Stream>) -> Result<dlpark::versioned::Dlpack> {
        let raw = self.into_dlpack_versioned(consumer)?;
        // SAFETY: a fresh tensor this crate made and hands over (it owns it no more): its
        // shape and strides live in the allocation until the deleter, which runs once on any
        // thread and does not unwind; the version is this crate's major, 1.
        unsafe { dlpark::versioned::Dlpack::from_raw(raw.cast::<ffi::DLManagedTensorVersioned>()) }
            .map_err(|error| {
                Error::invalid_argument(format!("dlpark refused the exported tensor: {error}"))
            })
    }

    /// Takes a dlpark DLPack 1.x handle and views its tensor, read-only when the producer
    /// flagged it so; the view calls the deleter once, when the last view derived from it
    /// drops.
    ///
    /// # Errors
    ///
    /// As [`from_dlpack_versioned`](Self::from_dlpack_versioned) (the deleter is called).
    pub fn from_dlpark(tensor: dlpark::versioned::Dlpack) -> Result<Self> {
        let raw = tensor.into_raw().cast::<DLManagedTensorVersioned>();
        // SAFETY: dlpark's handle owned a valid managed tensor (its constructors' contract),
        // handed over here; its deleter may run on any thread (dlpark's `Send` handle).
        unsafe { Self::from_dlpack_versioned(raw) }
    }

    /// Takes a dlpark legacy (`DLManagedTensor`) handle and views its tensor, writable, as
    /// [`from_dlpack`](Self::from_dlpack) does.
    ///
    /// # Errors
    ///
    /// As [`from_dlpack`](Self::from_dlpack) (the deleter is called).
    pub fn from_dlpark_legacy(tensor: dlpark::legacy::Dlpack) -> Result<Self> {
        let raw = tensor.into_raw().cast::<DLManagedTensor>();
        // SAFETY: as for `from_dlpark`, with the legacy struct.
        unsafe { Self::from_dlpack(raw) }
    }
}
