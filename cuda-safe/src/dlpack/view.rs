//! [`StridedMemoryView`]: a strided, typed window on memory, keeping its owner alive.

use std::any::Any;
use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::abi::DLDataType;
use super::device::ViewDevice;
use super::dims::Dims;
use super::dtype::Element;
use super::layout;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::launch::KernelArg;
use crate::memory::Buffer;
use crate::stream::Stream;
use cuda_sys::CUdeviceptr;

/// The most dimensions a view may have (NumPy's and PyTorch's limit).
pub const MAX_NDIM: usize = 64;

/// What keeps a view's memory alive: a [`Buffer`], an imported DLPack tensor (whose deleter
/// runs when the last view of it drops), or anything else shared.
pub type Owner = Arc<dyn Any + Send + Sync>;

/// How a [`Buffer`]'s bytes are laid out as a tensor, for [`StridedMemoryView::from_buffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout<'a> {
    /// Compact row-major, starting at the buffer's first byte.
    C,
    /// Compact column-major, starting at the buffer's first byte.
    F,
    /// Explicit strides (in elements, negative allowed) from an element `byte_offset` bytes
    /// into the buffer.
    Strided {
        /// One stride per dimension, in elements.
        strides: &'a [i64],
        /// Where the element at index `[0, 0, ...]` starts, in bytes from the buffer's start.
        byte_offset: usize,
    },
}

/// A strided view of typed memory: address, shape, strides (in elements), element type,
/// device, a read-only flag, and the owner that keeps the memory alive.
///
/// Views are built from a [`Buffer`] ([`from_buffer`](Self::from_buffer)), from DLPack
/// ([`from_dlpack`](Self::from_dlpack) and friends) or from raw parts; every constructor
/// checks the layout (no overflowing stride arithmetic, no null data with elements, at most
/// [`MAX_NDIM`] dimensions, a span inside the buffer) and allocates nothing on the heap for
/// up to 8 dimensions. Slicing, permuting and reshaping make new views of the same memory,
/// sharing the owner. Cloning is cheap.
#[derive(Clone)]
pub struct StridedMemoryView {
    /// The address of the element at index `[0, 0, ...]` (any DLPack `byte_offset` applied).
    ptr: u64,
    dims: Dims,
    dtype: DLDataType,
    item_size: usize,
    device: ViewDevice,
    read_only: bool,
    count: usize,
    span: (i64, i64),
    owner: Option<Owner>,
}

impl StridedMemoryView {
    /// A view of `buffer` with this shape, layout and element type, checked against the
    /// buffer's length: the span must lie inside it, and the first element must be aligned
    /// for the element type. The view keeps the buffer alive; pass an `Arc<Buffer>` to keep
    /// using it elsewhere.
    ///
    /// The device is the buffer's: CUDA memory of its device, pinned host memory (a
    /// host-accessible resource without a device) or managed memory (host-accessible with a
    /// device).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a span outside the buffer, a misaligned first element, a
    /// shape or strides that are negative, mismatched or overflowing, or an unknown element
    /// type; [`Error::Unsupported`] for sub-byte element types.
    pub fn from_buffer(
        buffer: impl Into<Arc<Buffer>>,
        shape: &[i64],
        layout: Layout<'_>,
        dtype: DLDataType,
    ) -> Result<Self> {
        let buffer: Arc<Buffer> = buffer.into();
        let device = buffer_device(&buffer)?;
        let item_size = dtype.item_size()?;
        let (dims, byte_offset) = match layout {
            Layout::C => (compact_dims(shape, layout::fill_c_strides)?, 0),
            Layout::F => (compact_dims(shape, layout::fill_f_strides)?, 0),
            Layout::Strided {
                strides,
                byte_offset,
            } => (dims_from(shape, Some(strides))?, byte_offset),
        };
        let alignment = (item_size & item_size.wrapping_neg()).min(16);
        let start = buffer
            .as_raw()
            .checked_add(byte_offset as u64)
            .filter(|_| byte_offset <= buffer.len())
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "byte offset {byte_offset} is past the buffer's {} bytes",
                    buffer.len()
                ))
            })?;
        if start % alignment as u64 != 0 {
            return Err(Error::invalid_argument(format!(
                "the first element at byte offset {byte_offset} is not aligned to {alignment} \
                 bytes for {dtype:?}"
            )));
        }
        let view = Self::build(start, dims, dtype, device, false)?;
        let (low, high) = view.span;
        let offset = byte_offset as i64; // at most the buffer's length, so in range
        let inside = view.count == 0
            || (offset + low >= 0 && (offset as i128 + high as i128) <= buffer.len() as i128);
        if !inside {
            return Err(Error::invalid_argument(format!(
                "shape {shape:?} with strides {:?} spans bytes [{}, {}) of a {}-byte buffer",
                view.strides(),
                offset as i128 + low as i128,
                offset as i128 + high as i128,
                buffer.len()
            )));
        }
        Ok(view.with_owner(buffer))
    }

    /// A view of memory this crate did not allocate: `ptr` is the address of the element at
    /// index `[0, 0, ...]`, `strides` `None` means compact row-major, and `owner` (if any) is
    /// kept alive as long as the view or any view derived from it.
    ///
    /// # Safety
    ///
    /// Every element the shape and strides reach from `ptr` must lie in one allocation on
    /// `device` that stays valid while the view, its clones and derived views live (`owner`
    /// may be what guarantees it).
    pub unsafe fn from_raw_parts(
        ptr: u64,
        shape: &[i64],
        strides: Option<&[i64]>,
        dtype: DLDataType,
        device: ViewDevice,
        owner: Option<Owner>,
    ) -> Result<Self> {
        let dims = match strides {
            Some(strides) => dims_from(shape, Some(strides))?,
            None => compact_dims(shape, layout::fill_c_strides)?,
        };
        let view = Self::build(ptr, dims, dtype, device, false)?;
        Ok(match owner {
            Some(owner) => view.with_owner(owner),
            None => view,
        })
    }

    /// Checks a layout and makes an ownerless view of it.
    #[inline]
    pub(crate) fn build(
        ptr: u64,
        dims: Dims,
        dtype: DLDataType,
        device: ViewDevice,
        read_only: bool,
    ) -> Result<Self> {
        let item_size = dtype.item_size()?;
        let count = layout::element_count(dims.shape())?;
        let span = layout::byte_span(dims.shape(), dims.strides(), item_size)?;
        if count > 0 {
            if ptr == 0 {
                return Err(Error::invalid_argument(format!(
                    "null data pointer for {count} elements"
                )));
            }
            let fits = ptr.checked_add_signed(span.0).is_some()
                && ptr.checked_add_signed(span.1).is_some();
            if !fits {
                return Err(Error::invalid_argument(format!(
                    "address {ptr:#x} with byte span [{}, {}) leaves the address space",
                    span.0, span.1
                )));
            }
        }
        Ok(Self {
            ptr,
            dims,
            dtype,
            item_size,
            device,
            read_only,
            count,
            span,
            owner: None,
        })
    }

    /// The same view, kept alive by `owner`.
    #[inline]
    pub(crate) fn with_owner(mut self, owner: Owner) -> Self {
        self.owner = Some(owner);
        self
    }

    /// The shape and strides, writable (for the export, which points at them).
    #[inline]
    pub(super) fn dims_mut(&mut self) -> &mut Dims {
        &mut self.dims
    }

    /// A view of the same memory with another layout, sharing the owner.
    fn derive(&self, ptr: u64, dims: Dims) -> Result<Self> {
        let mut view = Self::build(ptr, dims, self.dtype, self.device, self.read_only)?;
        view.owner = self.owner.clone();
        Ok(view)
    }

    /// The address of the element at index `[0, 0, ...]` (a device address for device memory).
    #[inline]
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The extents.
    #[inline]
    pub fn shape(&self) -> &[i64] {
        self.dims.shape()
    }

    /// The strides, in elements.
    #[inline]
    pub fn strides(&self) -> &[i64] {
        self.dims.strides()
    }

    /// The number of dimensions.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.dims.ndim()
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DLDataType {
        self.dtype
    }

    /// The size of one element in bytes.
    #[inline]
    pub fn item_size(&self) -> usize {
        self.item_size
    }

    /// Where the memory lives.
    #[inline]
    pub fn device(&self) -> ViewDevice {
        self.device
    }

    /// Whether the producer forbade writes (DLPack's read-only flag).
    #[inline]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The same view, marked read-only.
    pub fn into_read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the view has no element.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes the elements cover, `[low, high)` relative to [`ptr`](Self::ptr): `low` is
    /// negative when a stride is; `(0, 0)` for an empty view.
    #[inline]
    pub fn byte_span(&self) -> (i64, i64) {
        self.span
    }

    /// `high - low` of [`byte_span`](Self::byte_span): the extent of memory the view touches.
    #[inline]
    pub fn span_len(&self) -> usize {
        // Computed without overflow whatever the offsets; on a 64-bit target it fits usize.
        usize::try_from(self.span.1.abs_diff(self.span.0)).unwrap_or(usize::MAX)
    }

    /// What keeps the memory alive, if anything (views from raw parts may have no owner).
    pub fn owner(&self) -> Option<&Owner> {
        self.owner.as_ref()
    }

    /// The buffer the view was built on, for views from [`from_buffer`](Self::from_buffer).
    pub fn buffer(&self) -> Option<&Buffer> {
        self.owner.as_ref()?.downcast_ref::<Buffer>()
    }

    /// Whether the layout is compact row-major (extents of 1 may have any stride; a view
    /// without elements is contiguous).
    pub fn is_c_contiguous(&self) -> bool {
        layout::is_c_contiguous(self.shape(), self.strides())
    }

    /// Whether the layout is compact column-major, by the same rules.
    pub fn is_f_contiguous(&self) -> bool {
        layout::is_f_contiguous(self.shape(), self.strides())
    }

    /// The elements whose index along `axis` lies in `range`, as a view of the same memory.
    pub fn slice(&self, axis: usize, range: impl RangeBounds<usize>) -> Result<Self> {
        let extent = self.axis_extent(axis)?;
        let start = match range.start_bound() {
            Bound::Included(&start) => Some(start),
            Bound::Excluded(&start) => start.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let end = match range.end_bound() {
            Bound::Included(&end) => end.checked_add(1),
            Bound::Excluded(&end) => Some(end),
            Bound::Unbounded => Some(extent),
        };
        let (start, end) = match (start, end) {
            (Some(start), Some(end)) if start <= end && end <= extent => (start, end),
            _ => {
                return Err(Error::invalid_argument(format!(
                    "range {:?}..{:?} of axis {axis}, whose extent is {extent}",
                    range.start_bound(),
                    range.end_bound()
                )));
            }
        };
        let mut dims = self.dims.clone();
        let (shape, strides) = dims.parts_mut();
        shape[axis] = (end - start) as i64; // at most the old extent, an i64
        let ptr = if end > start {
            let bytes = (start as i64)
                .checked_mul(strides[axis])
                .and_then(|elements| elements.checked_mul(self.item_size as i64));
            bytes
                .and_then(|bytes| self.ptr.checked_add_signed(bytes))
                .ok_or_else(|| Error::invalid_argument("slice offset overflows"))?
        } else {
            self.ptr
        };
        self.derive(ptr, dims)
    }

    /// The view with axes `a` and `b` swapped.
    pub fn transpose(&self, a: usize, b: usize) -> Result<Self> {
        self.axis_extent(a)?;
        self.axis_extent(b)?;
        let mut dims = self.dims.clone();
        let (shape, strides) = dims.parts_mut();
        shape.swap(a, b);
        strides.swap(a, b);
        self.derive(self.ptr, dims)
    }

    /// The view with its axes reordered: axis `i` of the result is axis `axes[i]` of this
    /// view; `axes` must name every axis exactly once.
    pub fn permute(&self, axes: &[usize]) -> Result<Self> {
        let ndim = self.ndim();
        let mut seen = 0u64; // MAX_NDIM is 64: one bit per axis
        let valid = axes.len() == ndim
            && axes.iter().all(|&axis| {
                let fresh = axis < ndim && seen & (1 << axis) == 0;
                seen |= 1u64.checked_shl(axis as u32).unwrap_or(0);
                fresh
            });
        if !valid {
            return Err(Error::invalid_argument(format!(
                "{axes:?} is not a permutation of the {ndim} axes"
            )));
        }
        let mut dims = self.dims.clone();
        let (shape, strides) = dims.parts_mut();
        for (index, &axis) in axes.iter().enumerate() {
            shape[index] = self.shape()[axis];
            strides[index] = self.strides()[axis];
        }
        self.derive(self.ptr, dims)
    }

    /// The same elements in row-major order with another shape; at most one extent may be
    /// `-1`, inferred from the element count. Only C-contiguous views can be reshaped.
    pub fn reshape(&self, shape: &[i64]) -> Result<Self> {
        if !self.is_c_contiguous() {
            return Err(Error::invalid_argument(format!(
                "only C-contiguous views can be reshaped; shape {:?} has strides {:?}",
                self.shape(),
                self.strides()
            )));
        }
        let mismatch = || {
            Error::invalid_argument(format!(
                "cannot reshape {} elements of shape {:?} into {shape:?}",
                self.count,
                self.shape()
            ))
        };
        let mut dims = dims_from(shape, None)?;
        let (new_shape, strides) = dims.parts_mut();
        let mut inferred = None;
        for (axis, &extent) in new_shape.iter().enumerate() {
            if extent == -1 {
                if inferred.is_some() {
                    return Err(mismatch());
                }
                inferred = Some(axis);
            }
        }
        if let Some(axis) = inferred {
            new_shape[axis] = 1;
            let known = layout::element_count(new_shape)? as i64;
            if known == 0 || self.count as i64 % known != 0 {
                return Err(mismatch());
            }
            new_shape[axis] = self.count as i64 / known;
        }
        if layout::element_count(new_shape)? != self.count {
            return Err(mismatch());
        }
        layout::fill_c_strides(new_shape, strides)?;
        self.derive(self.ptr, dims)
    }

    /// The address as `*mut T`, after checking that `T` is the element type and that the
    /// address is aligned for it. For device memory the pointer is a device address: pass it
    /// to a kernel, never dereference it on the host.
    pub fn typed_ptr<T: Element>(&self) -> Result<*mut T> {
        if self.dtype != T::DTYPE {
            return Err(Error::invalid_argument(format!(
                "the view holds {:?}, not {} ({:?})",
                self.dtype,
                std::any::type_name::<T>(),
                T::DTYPE
            )));
        }
        if !self.ptr.is_multiple_of(align_of::<T>() as u64) {
            return Err(Error::invalid_argument(format!(
                "address {:#x} is not aligned for {}",
                self.ptr,
                std::any::type_name::<T>()
            )));
        }
        Ok(self.ptr as *mut T)
    }

    /// Checks that kernels on `device` can reach the memory: CUDA memory of that device,
    /// pinned or managed memory; pageable host memory or another device's memory is
    /// [`Error::InvalidArgument`].
    pub fn require_device(&self, device: &Device) -> Result<()> {
        if self.device.is_accessible_from(device.ordinal()) {
            return Ok(());
        }
        Err(Error::invalid_argument(format!(
            "a view of {:?} memory is not reachable from CUDA device {}",
            self.device,
            device.ordinal()
        )))
    }

    /// The extent of `axis`, or an error naming the axis count.
    fn axis_extent(&self, axis: usize) -> Result<usize> {
        self.shape()
            .get(axis)
            .map(|&extent| extent as usize) // extents were checked non-negative
            .ok_or_else(|| {
                Error::invalid_argument(format!("axis {axis} of a {}-d view", self.ndim()))
            })
    }
}

/// The device of a buffer's memory, from its resource.
fn buffer_device(buffer: &Buffer) -> Result<ViewDevice> {
    match (
        buffer.is_host_accessible(),
        buffer.memory_resource().device(),
    ) {
        (false, Some(device)) => Ok(ViewDevice::Cuda(device.ordinal())),
        (true, None) if !buffer.is_device_accessible() => Ok(ViewDevice::Host),
        (true, None) => Ok(ViewDevice::CudaHost),
        (true, Some(_)) => Ok(ViewDevice::CudaManaged),
        (false, None) => Err(Error::invalid_argument(
            "the buffer's memory resource names no device and is not host-accessible",
        )),
    }
}

/// Checks the dimension count and copies the shape and the strides (`None`: left zero, for
/// the caller to fill).
#[inline]
pub(crate) fn dims_from(shape: &[i64], strides: Option<&[i64]>) -> Result<Dims> {
    let ndim = shape.len();
    if ndim > MAX_NDIM {
        return Err(Error::invalid_argument(format!(
            "{ndim} dimensions, more than the {MAX_NDIM} a view may have"
        )));
    }
    let mut dims = Dims::zeroed(ndim);
    let (own_shape, own_strides) = dims.parts_mut();
    own_shape.copy_from_slice(shape);
    match strides {
        Some(strides) if strides.len() == ndim => own_strides.copy_from_slice(strides),
        Some(strides) => {
            return Err(Error::invalid_argument(format!(
                "{} strides for {ndim} dimensions",
                strides.len()
            )));
        }
        None => {}
    }
    Ok(dims)
}

/// Dims of `shape` with compact strides from `fill`.
fn compact_dims(shape: &[i64], fill: fn(&[i64], &mut [i64]) -> Result<()>) -> Result<Dims> {
    let mut dims = dims_from(shape, None)?;
    let (shape, strides) = dims.parts_mut();
    fill(shape, strides)?;
    Ok(dims)
}

/// A view passes the address of its element at index `[0, 0, ...]` (any DLPack byte offset
/// applied); a view of a [`Buffer`] is ordered on the buffer's stream, as the buffer would be.
impl KernelArg for &StridedMemoryView {
    type Repr = CUdeviceptr;
    #[inline(always)]
    fn to_repr(&self) -> CUdeviceptr {
        self.ptr
    }
    #[inline(always)]
    fn stream(&self) -> Option<&Stream> {
        self.buffer().map(Buffer::stream)
    }
}

impl fmt::Debug for StridedMemoryView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StridedMemoryView")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("dtype", &self.dtype)
            .field("device", &self.device)
            .field("read_only", &self.read_only)
            .field("owned", &self.owner.is_some())
            .finish()
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<StridedMemoryView>();
};
