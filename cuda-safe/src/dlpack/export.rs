//! Exporting views as DLPack tensors. The exported struct owns the view (and so its owner);
//! its deleter frees what the export allocated and releases the view, so the consumer must
//! call it exactly once.

use std::ffi::c_void;

use super::abi::{
    DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_MAJOR_VERSION,
    DLPACK_MINOR_VERSION, DLPackVersion, DLTensor,
};
use super::view::StridedMemoryView;
use crate::error::{Error, Result};

/// What [`StridedMemoryView::into_dlpack_versioned`] allocates: the struct handed out, then
/// the view whose shape and strides it points to.
#[repr(C)]
struct VersionedExport {
    managed: DLManagedTensorVersioned,
    view: StridedMemoryView,
}

/// What [`StridedMemoryView::into_dlpack`] allocates.
#[repr(C)]
struct LegacyExport {
    managed: DLManagedTensor,
    view: StridedMemoryView,
}

impl StridedMemoryView {
    /// Hands the view over as a DLPack 1.x tensor (for a `"dltensor_versioned"` capsule),
    /// read-only flagged when the view is. The view moves into the allocation; the struct's
    /// deleter frees it and releases the view's owner.
    ///
    /// The consumer must call the deleter exactly once (never calling it leaks the view and
    /// keeps its memory alive), and only once its own work on the data is done: releasing a
    /// crate buffer frees it in order on the buffer's stream, which knows nothing of the
    /// consumer's streams. Fails only for a CUDA ordinal past `i32::MAX`.
    pub fn into_dlpack_versioned(self) -> Result<*mut DLManagedTensorVersioned> {
        let dl_tensor = self.dl_tensor_header()?;
        let flags = if self.is_read_only() {
            DLPACK_FLAG_BITMASK_READ_ONLY
        } else {
            0
        };
        let export = Box::into_raw(Box::new(VersionedExport {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: DLPACK_MAJOR_VERSION,
                    minor: DLPACK_MINOR_VERSION,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_versioned),
                flags,
                dl_tensor,
            },
            view: self,
        }));
        // SAFETY: a fresh allocation nothing else references; the view's arrays live inside
        // it (or in its heap fallback) until the deleter frees it.
        unsafe {
            let export = &mut *export;
            export.managed.manager_ctx = (export as *mut VersionedExport).cast::<c_void>();
            point_at_dims(&mut export.managed.dl_tensor, &mut export.view);
        }
        Ok(export.cast::<DLManagedTensorVersioned>())
    }

    /// Hands the view over as a legacy DLPack tensor (for a `"dltensor"` capsule), as
    /// [`into_dlpack_versioned`](Self::into_dlpack_versioned) does. A read-only view is
    /// [`Error::InvalidArgument`]: the legacy struct cannot say so. On error the view is
    /// dropped.
    pub fn into_dlpack(self) -> Result<*mut DLManagedTensor> {
        if self.is_read_only() {
            return Err(Error::invalid_argument(
                "a read-only view cannot be exported as a legacy DLManagedTensor, which has no \
                 read-only flag; use into_dlpack_versioned",
            ));
        }
        let dl_tensor = self.dl_tensor_header()?;
        let export = Box::into_raw(Box::new(LegacyExport {
            managed: DLManagedTensor {
                dl_tensor,
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_legacy),
            },
            view: self,
        }));
        // SAFETY: as in `into_dlpack_versioned`.
        unsafe {
            let export = &mut *export;
            export.managed.manager_ctx = (export as *mut LegacyExport).cast::<c_void>();
            point_at_dims(&mut export.managed.dl_tensor, &mut export.view);
        }
        Ok(export.cast::<DLManagedTensor>())
    }

    /// The `DLTensor` of the view, with its shape and strides not set yet.
    fn dl_tensor_header(&self) -> Result<DLTensor> {
        Ok(DLTensor {
            data: self.ptr() as *mut c_void,
            device: self.device().to_dlpack()?,
            ndim: self.ndim() as i32, // at most MAX_NDIM
            dtype: self.dtype(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        })
    }
}

/// Points the tensor's shape and strides at the view's own arrays (null for 0 dimensions).
fn point_at_dims(tensor: &mut DLTensor, view: &mut StridedMemoryView) {
    if view.ndim() > 0 {
        let (shape, strides) = view.dims_mut().parts_mut();
        tensor.shape = shape.as_mut_ptr();
        tensor.strides = strides.as_mut_ptr();
    }
}

/// The deleter of [`StridedMemoryView::into_dlpack_versioned`]'s structs.
///
/// # Safety
///
/// `tensor` is null or came from `into_dlpack_versioned` and was not deleted yet.
unsafe extern "C" fn delete_versioned(tensor: *mut DLManagedTensorVersioned) {
    if !tensor.is_null() {
        // SAFETY: the struct is the first field of a boxed `VersionedExport`, freed once.
        let export = unsafe { Box::from_raw(tensor.cast::<VersionedExport>()) };
        drop_without_unwinding(export);
    }
}

/// The deleter of [`StridedMemoryView::into_dlpack`]'s structs.
///
/// # Safety
///
/// `tensor` is null or came from `into_dlpack` and was not deleted yet.
unsafe extern "C" fn delete_legacy(tensor: *mut DLManagedTensor) {
    if !tensor.is_null() {
        // SAFETY: the struct is the first field of a boxed `LegacyExport`, freed once.
        let export = unsafe { Box::from_raw(tensor.cast::<LegacyExport>()) };
        drop_without_unwinding(export);
    }
}

/// Drops what an export owns (which may run a memory resource's or another producer's code)
/// inside a C callback: a panic must not unwind into the foreign caller, so it is caught and
/// logged (what was being dropped is leaked).
fn drop_without_unwinding<T>(value: T) {
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(value)));
    if dropped.is_err() {
        log::error!("cuda-safe: a DLPack deleter panicked; the export is leaked");
    }
}
