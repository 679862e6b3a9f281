//! Zero-copy tensor views and DLPack: [`StridedMemoryView`] and the DLPack 1.x C ABI.
//!
//! A view is an address, a shape, strides in elements, an element type ([`DLDataType`]), a
//! device ([`ViewDevice`]), a read-only flag and an owner that keeps the memory alive. Views
//! come from a crate [`Buffer`](crate::Buffer), from another library's DLPack tensor, or from
//! raw parts, and go back out as DLPack. Slicing, transposing, permuting and reshaping make
//! new views of the same memory; a view passes its address to a kernel as `&view`.
//!
//! ```no_run
//! use cuda_safe::dlpack::{DLDataType, Layout, StridedMemoryView};
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let buffer = device.default_memory_resource()?.allocate(4 * 64 * 48, &stream)?;
//! let view = StridedMemoryView::from_buffer(buffer, &[64, 48], Layout::C, DLDataType::F32)?;
//! let columns = view.slice(1, 8..24)?.transpose(0, 1)?; // 16 x 64, strides [1, 48]
//! assert_eq!(columns.shape(), &[16, 64]);
//! assert!(!columns.is_c_contiguous());
//!
//! // Hand it to another library working on `stream`: that stream waits for the buffer's
//! // work now, and the deleter orders the buffer's free after the consumer's queued work.
//! let exported = columns.into_dlpack_versioned(Some(&stream))?;
//! // Take it back: the view owns the tensor and calls its deleter once, when dropped.
//! // SAFETY: `exported` came from `into_dlpack_versioned` and is handed over here.
//! let back = unsafe { StridedMemoryView::from_dlpack_versioned(exported) }?;
//! assert_eq!(back.strides(), &[1, 48]);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! Ownership across DLPack follows the standard: whoever holds a `DLManagedTensor*` (or the
//! versioned struct) owns it and calls its deleter exactly once. The `from_dlpack*` functions
//! take ownership (and delete on every error path too); `from_dltensor` and
//! `borrow_dlpack_versioned` only borrow; `into_dlpack*` hand ownership to the consumer.

mod abi;
mod device;
mod dims;
#[cfg(feature = "dlpark")]
mod dlpark_bridge;
mod dtype;
mod export;
mod import;
mod layout;
mod tma;
mod view;

pub use abi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION, DLPackVersion,
    DLTensor,
};
pub use device::ViewDevice;
pub use dtype::Element;
pub use view::{Layout, MAX_NDIM, Owner, StridedMemoryView};
