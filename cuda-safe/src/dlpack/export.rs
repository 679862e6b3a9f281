//! Exporting views as DLPack tensors. The exported struct owns the view (and so its owner);
//! its deleter frees what the export allocated and releases the view, so the consumer must
//! call it exactly once.
//!
//! Ordering follows DLPack's stream rule (`__dlpack__(stream=...)`): given the consumer's
//! stream, the export makes that stream wait for the producer's work on the view's buffer, and
//! the deleter makes the buffer's stream wait for everything the consumer queued before calling
//! it, so the buffer's stream-ordered free can never let the pool reuse memory a consumer
//! kernel still reads. Without a consumer stream the consumer must finish its own work before
//! calling the deleter (and wait for the producer before reading).

use std::ffi::c_void;

use super::abi::{
    DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_MAJOR_VERSION,
    DLPACK_MINOR_VERSION, DLPackVersion, DLTensor,
};
use super::view::StridedMemoryView;
use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::stream::Stream;

/// What [`StridedMemoryView::into_dlpack_versioned`] allocates: the struct handed out, then
/// the view whose shape and strides it points to, and the consumer's stream, if given.
#[repr(C)]
struct VersionedExport {
    managed: DLManagedTensorVersioned,
    view: StridedMemoryView,
    consumer: Option<Stream>,
}

/// What [`StridedMemoryView::into_dlpack`] allocates.
#[repr(C)]
struct LegacyExport {
    managed: DLManagedTensor,
    view: StridedMemoryView,
    consumer: Option<Stream>,
}

impl StridedMemoryView {
    /// Hands the view over as a DLPack 1.x tensor (for a `"dltensor_versioned"` capsule),
    /// read-only flagged when the view is. The view moves into the allocation; the struct's
    /// deleter frees it and releases the view's owner.
    ///
    /// `consumer` is the stream the consumer will use the data on (DLPack's `stream`
    /// argument; wrap a foreign handle with [`Stream::from_raw`]). For a view of a crate
    /// [`Buffer`], it is made to wait for the work queued on the buffer's stream now, and the
    /// deleter makes the buffer's stream wait for the work the consumer queued before deleting,
    /// so the buffer's free comes after it. With `None`, the consumer synchronizes itself: it
    /// must not read before the producer's work is done, and must call the deleter only once
    /// its own work on the data is finished.
    ///
    /// The consumer must call the deleter exactly once (never calling it leaks the view and
    /// keeps its memory alive).
    ///
    /// # Errors
    ///
    /// A CUDA ordinal past `i32::MAX`; the driver's error when ordering `consumer` fails (the
    /// view is dropped then, and nothing was handed out).
    pub fn into_dlpack_versioned(
        self,
        consumer: Option<&Stream>,
    ) -> Result<*mut DLManagedTensorVersioned> {
        let dl_tensor = self.dl_tensor_header()?;
        let consumer = self.order_consumer(consumer)?;
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
            consumer,
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

    /// Hands the view over as a legacy DLPack tensor (for a `"dltensor"` capsule), ordered
    /// with `consumer` as [`into_dlpack_versioned`](Self::into_dlpack_versioned) does.
    ///
    /// # Errors
    ///
    /// A read-only view is [`Error::InvalidArgument`]: the legacy struct cannot say so; the
    /// other errors are `into_dlpack_versioned`'s. On error the view is dropped.
    pub fn into_dlpack(self, consumer: Option<&Stream>) -> Result<*mut DLManagedTensor> {
        if self.is_read_only() {
            return Err(Error::invalid_argument(
                "a read-only view cannot be exported as a legacy DLManagedTensor, which has no \
                 read-only flag; use into_dlpack_versioned",
            ));
        }
        let dl_tensor = self.dl_tensor_header()?;
        let consumer = self.order_consumer(consumer)?;
        let export = Box::into_raw(Box::new(LegacyExport {
            managed: DLManagedTensor {
                dl_tensor,
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_legacy),
            },
            view: self,
            consumer,
        }));
        // SAFETY: as in `into_dlpack_versioned`.
        unsafe {
            let export = &mut *export;
            export.managed.manager_ctx = (export as *mut LegacyExport).cast::<c_void>();
            point_at_dims(&mut export.managed.dl_tensor, &mut export.view);
        }
        Ok(export.cast::<DLManagedTensor>())
    }

    /// Makes `consumer` wait for the work queued on the view's buffer (if the view has one);
    /// the stream to keep for the deleter.
    fn order_consumer(&self, consumer: Option<&Stream>) -> Result<Option<Stream>> {
        let Some(consumer) = consumer else {
            return Ok(None);
        };
        if let Some(buffer) = self.buffer() {
            consumer.wait_stream(buffer.stream())?;
        }
        Ok(Some(consumer.clone()))
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
        release(export.view, export.consumer);
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
        release(export.view, export.consumer);
    }
}

/// Releases what an export owns, inside its C deleter: first the view's buffer's stream is
/// made to wait for the consumer's queued work (so the buffer's stream-ordered free comes after
/// it; if that fails, the consumer's stream is synchronized instead, and the failure logged),
/// then the view is dropped. That may run a memory resource's or another producer's code: a
/// panic must not unwind into the foreign caller, so it is caught and logged (what was being
/// dropped is leaked).
fn release(view: StridedMemoryView, consumer: Option<Stream>) {
    let released = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        if let (Some(consumer), Some(buffer)) = (&consumer, view.buffer()) {
            order_release_after(buffer, consumer);
        }
        drop(view);
    }));
    if released.is_err() {
        log::error!("cuda-safe: a DLPack deleter panicked; the export is leaked");
    }
}

/// Makes `buffer`'s stream wait for the work queued on `consumer`; on failure waits for that
/// work on the host, so the free that follows is still safe.
fn order_release_after(buffer: &Buffer, consumer: &Stream) {
    if let Err(error) = buffer.stream().wait_stream(consumer) {
        log::error!(
            "cuda-safe: ordering a DLPack export's release after its consumer failed ({error}); \
             waiting for the consumer's stream instead"
        );
        if let Err(error) = consumer.sync() {
            log::error!("cuda-safe: and synchronizing the consumer's stream failed: {error}");
        }
    }
}
