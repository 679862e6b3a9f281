//! Importing DLPack tensors as views: owned (the view calls the producer's deleter exactly
//! once, when the last view derived from it drops) or borrowed (the caller keeps the producer's
//! tensor alive and disposes of it).

use std::ptr::NonNull;

use super::abi::{
    DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_MAJOR_VERSION, DLTensor,
};
use super::device::ViewDevice;
use super::dims::Dims;
use super::view::{MAX_NDIM, StridedMemoryView};
use crate::error::{Error, Result};

/// An imported managed tensor; dropping it calls the producer's deleter, once.
enum Imported {
    /// A `DLManagedTensor`.
    Legacy(NonNull<DLManagedTensor>),
    /// A `DLManagedTensorVersioned`, of any major version.
    Versioned(NonNull<DLManagedTensorVersioned>),
}

// SAFETY: the importing functions require that the producer's tensor may be used and deleted
// from any thread (their safety contract), and nothing here mutates it.
unsafe impl Send for Imported {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        match *self {
            Imported::Legacy(tensor) => {
                // SAFETY: the producer's struct is valid until its deleter runs, which is here.
                if let Some(deleter) = unsafe { (*tensor.as_ptr()).deleter } {
                    // SAFETY: called once, with the pointer the producer gave.
                    unsafe { deleter(tensor.as_ptr()) };
                }
            }
            Imported::Versioned(tensor) => {
                // SAFETY: valid until deleted; the deleter sits at the same offset in every
                // major version (dlpack.h: the fields up to `flags` stay stable).
                if let Some(deleter) = unsafe { (*tensor.as_ptr()).deleter } {
                    // SAFETY: called once, with the pointer the producer gave.
                    unsafe { deleter(tensor.as_ptr()) };
                }
            }
        }
    }
}

impl StridedMemoryView {
    /// Takes ownership of a legacy DLPack tensor (the struct in a `"dltensor"` capsule) and
    /// views it; the view is writable (the legacy struct has no read-only flag).
    ///
    /// The deleter is called exactly once: when the last view derived from this one drops, or
    /// before returning an error for a refused tensor.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidArgument`] for a null pointer (nothing is deleted), and for a tensor
    ///   with an unknown element or device type, more than [`MAX_NDIM`] dimensions, a shape or
    ///   strides whose arithmetic overflows, or null data with elements;
    /// - [`Error::Unsupported`] for sub-byte element types.
    ///
    /// # Safety
    ///
    /// `tensor` must be null or a valid `DLManagedTensor` that the caller owns and hands over
    /// (a Python consumer renames the capsule to `"used_dltensor"` first); its `ndim` shape and
    /// stride entries must be readable, its memory valid until the deleter runs, and its
    /// deleter callable from any thread.
    #[doc(alias = "from_dlpack_legacy")]
    pub unsafe fn from_dlpack(tensor: *mut DLManagedTensor) -> Result<Self> {
        let tensor = NonNull::new(tensor)
            .ok_or_else(|| Error::invalid_argument("null DLManagedTensor pointer"))?;
        let imported = Imported::Legacy(tensor);
        // SAFETY: valid per the contract; dropping `imported` on error deletes it.
        let view = unsafe { Self::read_dltensor(&(*tensor.as_ptr()).dl_tensor, false) }?;
        Ok(view.with_owner(std::sync::Arc::new(imported)))
    }

    /// Takes ownership of a DLPack 1.x tensor (the struct in a `"dltensor_versioned"`
    /// capsule) and views it, read-only when the producer set `DLPACK_FLAG_BITMASK_READ_ONLY`.
    ///
    /// The deleter is called exactly once, as for [`from_dlpack`](Self::from_dlpack).
    ///
    /// # Errors
    ///
    /// As [`from_dlpack`](Self::from_dlpack); [`Error::Unsupported`] for a major version
    /// other than 1 (the deleter is called, the only field the spec lets a consumer touch
    /// then) and for padded sub-byte elements.
    ///
    /// # Safety
    ///
    /// As for [`from_dlpack`](Self::from_dlpack), with `DLManagedTensorVersioned` (a Python
    /// consumer renames the capsule to `"used_dltensor_versioned"`).
    pub unsafe fn from_dlpack_versioned(tensor: *mut DLManagedTensorVersioned) -> Result<Self> {
        let tensor = NonNull::new(tensor)
            .ok_or_else(|| Error::invalid_argument("null DLManagedTensorVersioned pointer"))?;
        let imported = Imported::Versioned(tensor);
        // SAFETY: valid per the contract; dropping `imported` on error deletes it.
        let view = unsafe { Self::read_versioned(tensor.as_ptr()) }?;
        Ok(view.with_owner(std::sync::Arc::new(imported)))
    }

    /// Views a `DLTensor` without owning it: nothing is deleted, ever. The view is writable.
    /// This is how a consumer borrows a tensor for the length of a call (the producer's
    /// capsule keeps ownership).
    ///
    /// # Errors
    ///
    /// As [`from_dlpack`](Self::from_dlpack), deleting nothing.
    ///
    /// # Safety
    ///
    /// `tensor` must be null (an error) or a valid `DLTensor` whose shape and strides are
    /// readable during the call, and whose memory stays valid while the view, its clones and
    /// the views derived from it live.
    pub unsafe fn from_dltensor(tensor: *const DLTensor) -> Result<Self> {
        if tensor.is_null() {
            return Err(Error::invalid_argument("null DLTensor pointer"));
        }
        // SAFETY: non-null and valid per the contract.
        unsafe { Self::read_dltensor(&*tensor, false) }
    }

    /// Views a DLPack 1.x tensor without owning it (its deleter is never called here),
    /// honouring the version and the read-only flag as
    /// [`from_dlpack_versioned`](Self::from_dlpack_versioned) does.
    ///
    /// # Errors
    ///
    /// As [`from_dlpack_versioned`](Self::from_dlpack_versioned), deleting nothing.
    ///
    /// # Safety
    ///
    /// As for [`from_dltensor`](Self::from_dltensor), with a `DLManagedTensorVersioned`.
    pub unsafe fn borrow_dlpack_versioned(tensor: *const DLManagedTensorVersioned) -> Result<Self> {
        if tensor.is_null() {
            return Err(Error::invalid_argument(
                "null DLManagedTensorVersioned pointer",
            ));
        }
        // SAFETY: non-null and valid per the contract.
        unsafe { Self::read_versioned(tensor) }
    }

    /// Checks the version, reads the flags and views the tensor of a versioned struct.
    ///
    /// # Safety
    ///
    /// `tensor` is valid and its shape and strides readable.
    #[inline]
    unsafe fn read_versioned(tensor: *const DLManagedTensorVersioned) -> Result<Self> {
        // SAFETY: valid per the contract; `version` is readable in every major version.
        let version = unsafe { (*tensor).version };
        if version.major != DLPACK_MAJOR_VERSION {
            return Err(Error::unsupported(
                "DLPack tensors of another major version",
                format!(
                    "the tensor is DLPack {}.{}, this crate reads {DLPACK_MAJOR_VERSION}.x",
                    version.major, version.minor
                ),
            ));
        }
        // SAFETY: a 1.x struct, so `flags` and `dl_tensor` have this layout.
        let (flags, dl_tensor) = unsafe { ((*tensor).flags, &(*tensor).dl_tensor) };
        if flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0 && dl_tensor.dtype.bits < 8 {
            // Padded sub-byte elements take a byte each, which the element size would miss.
            return Err(Error::unsupported(
                "padded sub-byte DLPack elements",
                format!("{:?} with the padded flag", dl_tensor.dtype),
            ));
        }
        let read_only = flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0;
        // SAFETY: valid per the contract.
        unsafe { Self::read_dltensor(dl_tensor, read_only) }
    }

    /// Checks a `DLTensor` and copies its layout into an ownerless view.
    ///
    /// # Safety
    ///
    /// `tensor.shape` and `tensor.strides` (when non-null) point to `tensor.ndim` readable
    /// entries.
    #[inline]
    unsafe fn read_dltensor(tensor: &DLTensor, read_only: bool) -> Result<Self> {
        let ndim = usize::try_from(tensor.ndim)
            .ok()
            .filter(|&ndim| ndim <= MAX_NDIM)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "DLPack ndim {} is outside 0..={MAX_NDIM}",
                    tensor.ndim
                ))
            })?;
        let device = ViewDevice::from_dlpack(tensor.device)?;
        let mut dims = Dims::zeroed(ndim);
        if ndim > 0 {
            if tensor.shape.is_null() {
                return Err(Error::invalid_argument(
                    "DLPack shape is null with ndim > 0",
                ));
            }
            let (shape, strides) = dims.parts_mut();
            // SAFETY: non-null, `ndim` readable entries per the contract.
            shape.copy_from_slice(unsafe { std::slice::from_raw_parts(tensor.shape, ndim) });
            if tensor.strides.is_null() {
                // Before DLPack 1.2, null strides meant compact row-major.
                super::layout::fill_c_strides(shape, strides)?;
            } else {
                // SAFETY: non-null, `ndim` readable entries per the contract.
                strides
                    .copy_from_slice(unsafe { std::slice::from_raw_parts(tensor.strides, ndim) });
            }
        }
        let ptr = (tensor.data as u64)
            .checked_add(tensor.byte_offset)
            .ok_or_else(|| Error::invalid_argument("DLPack data + byte_offset overflows"))?;
        Self::build(ptr, dims, tensor.dtype, device, read_only)
    }
}
