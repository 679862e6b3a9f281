//! `CudaArray`: an opaque, texture-layout array (`cuArray3DCreate`), as a copy side, and the
//! source of textures and surfaces.

use std::fmt;
use std::sync::Arc;

use super::extent::Shape;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::stream::Stream;
use cuda_sys::{CUDA_ARRAY3D_DESCRIPTOR, CUarray, CUarray_format};

/// The element format of a [`CudaArray`]'s channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArrayFormat {
    /// `u8` channels.
    U8,
    /// `u16` channels.
    U16,
    /// `u32` channels.
    U32,
    /// `i8` channels.
    I8,
    /// `i16` channels.
    I16,
    /// `i32` channels.
    I32,
    /// Half-precision float channels.
    F16,
    /// `f32` channels.
    F32,
}

impl ArrayFormat {
    /// The driver's format.
    pub(crate) fn raw(self) -> CUarray_format {
        match self {
            Self::U8 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
            Self::U16 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16,
            Self::U32 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32,
            Self::I8 => CUarray_format::CU_AD_FORMAT_SIGNED_INT8,
            Self::I16 => CUarray_format::CU_AD_FORMAT_SIGNED_INT16,
            Self::I32 => CUarray_format::CU_AD_FORMAT_SIGNED_INT32,
            Self::F16 => CUarray_format::CU_AD_FORMAT_HALF,
            Self::F32 => CUarray_format::CU_AD_FORMAT_FLOAT,
        }
    }

    /// Whether the channels are floating point (`F16`, `F32`).
    pub fn is_float(self) -> bool {
        matches!(self, Self::F16 | Self::F32)
    }

    /// The bytes of one channel.
    pub fn bytes(self) -> usize {
        match self {
            Self::U8 | Self::I8 => 1,
            Self::U16 | Self::I16 | Self::F16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
        }
    }
}

/// The shape of a [`CudaArray`]: `width` elements per row, `height` rows (0 for a 1-D
/// array), `depth` slices (0 for a 1-D or 2-D array), each element `channels` (1, 2 or 4)
/// channels of `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArrayDescriptor {
    /// Elements per row.
    pub width: usize,
    /// Rows (0: a 1-D array).
    pub height: usize,
    /// Slices (0: a 1-D or 2-D array).
    pub depth: usize,
    /// The channels' format.
    pub format: ArrayFormat,
    /// Channels per element: 1, 2 or 4.
    pub channels: u32,
}

crate::setters::setters! {
    impl ArrayDescriptor {
        width: value usize,
        height: value usize,
        depth: value usize,
        format: value ArrayFormat,
        channels: value u32,
    }
}

impl ArrayDescriptor {
    /// A 1-D array of `width` elements of `channels` values of `format`; `height` and
    /// `depth` (zero) add the other axes.
    pub fn new(width: usize, format: ArrayFormat, channels: u32) -> Self {
        Self {
            width,
            height: 0,
            depth: 0,
            format,
            channels,
        }
    }

    /// The bytes of one element.
    pub fn element_bytes(&self) -> usize {
        self.format.bytes() * self.channels as usize
    }

    pub(crate) fn check(&self) -> Result<()> {
        if ![1, 2, 4].contains(&self.channels) {
            return Err(Error::invalid_argument(format!(
                "an array element has 1, 2 or 4 channels, not {}",
                self.channels
            )));
        }
        if self.width == 0 || (self.height == 0 && self.depth > 0) {
            return Err(Error::invalid_argument(format!(
                "an array of {} x {} x {} elements: the width must be at least 1, and a 3-D \
                 array needs a height",
                self.width, self.height, self.depth
            )));
        }
        self.width
            .checked_mul(self.element_bytes())
            .map(|_| ())
            .ok_or_else(|| Error::invalid_argument("the array's row overflows usize"))
    }
}

bitflags::bitflags! {
    /// What a [`CudaArray`] (or a mipmapped array) may be used for beyond copies and texture
    /// fetches (`CUDA_ARRAY3D_*`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct ArrayFlags: u32 {
        /// Surfaces may read and write it (`CUDA_ARRAY3D_SURFACE_LDST`), as a
        /// [`SurfaceObject`](crate::SurfaceObject) needs.
        const SURFACE_LOAD_STORE = cuda_sys::CUDA_ARRAY3D_SURFACE_LDST;
        /// 2-D texture gather (`tex2Dgather`) may read it (`CUDA_ARRAY3D_TEXTURE_GATHER`): a
        /// 2-D array only.
        const TEXTURE_GATHER = cuda_sys::CUDA_ARRAY3D_TEXTURE_GATHER;
    }
}

/// A CUDA array (`cuArray3DCreate`): memory in the layout textures and surfaces read, reached
/// only through copies. Its copies are ordered on its stream; dropping it waits for that
/// stream, then destroys it (when the last texture or surface made over it is gone too).
///
/// A level of a [`MipmappedArray`](crate::MipmappedArray) is a `CudaArray` as well, which
/// keeps its mipmapped array alive and is freed with it.
#[must_use = "an array is destroyed when dropped"]
pub struct CudaArray {
    inner: Arc<Owned<ArrayHandle>>,
}

struct ArrayHandle {
    raw: CUarray,
    descriptor: ArrayDescriptor,
    flags: ArrayFlags,
    stream: Stream,
    /// For a level of a mipmapped array: that array, which owns the level and frees it.
    parent: Option<Arc<dyn Send + Sync>>,
}

// SAFETY: a CUarray may be used from any thread; the handle is immutable after creation.
unsafe impl Send for ArrayHandle {}
// SAFETY: as above.
unsafe impl Sync for ArrayHandle {}

impl CudaArray {
    /// Creates an array of `descriptor`'s shape on `stream`'s device.
    ///
    #[doc = cuda_sys::api_doc!(cuArray3DCreate)]
    #[doc = cuda_sys::api_doc!(cuArray3DCreate_v2)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for another channel count, a zero width, or a depth without
    /// a height; the driver's (a shape past the device's limits, out of memory).
    #[doc(alias = "cuArray3DCreate", alias = "cuArray3DCreate_v2")]
    pub fn new(stream: &Stream, descriptor: ArrayDescriptor) -> Result<Self> {
        Self::with_flags(stream, descriptor, ArrayFlags::empty())
    }

    /// Creates an array of `descriptor`'s shape on `stream`'s device that may also be used as
    /// `flags` say (a surface's, texture gather).
    ///
    #[doc = cuda_sys::api_doc!(cuArray3DCreate)]
    #[doc = cuda_sys::api_doc!(cuArray3DCreate_v2)]
    /// # Errors
    ///
    /// As [`new`](Self::new), and [`Error::InvalidArgument`] for texture gather on an array
    /// that is not 2-D.
    #[doc(alias = "cuArray3DCreate", alias = "cuArray3DCreate_v2")]
    pub fn with_flags(
        stream: &Stream,
        descriptor: ArrayDescriptor,
        flags: ArrayFlags,
    ) -> Result<Self> {
        descriptor.check()?;
        check_flags(&descriptor, flags)?;
        let raw_descriptor = descriptor.raw(flags);
        let _current = stream.context().scoped()?;
        let mut raw: CUarray = std::ptr::null_mut();
        // SAFETY: valid out-pointer and descriptor; the stream's context is current.
        unsafe {
            cu!(
                stream.driver(),
                cuArray3DCreate_v2(&mut raw, &raw_descriptor)
            )
        }?;
        Ok(Self::from_parts(raw, descriptor, flags, stream, None))
    }

    /// An array for `raw`; with `parent`, a level that `parent` owns (and this keeps alive).
    pub(crate) fn from_parts(
        raw: CUarray,
        descriptor: ArrayDescriptor,
        flags: ArrayFlags,
        stream: &Stream,
        parent: Option<Arc<dyn Send + Sync>>,
    ) -> Self {
        Self {
            inner: Arc::new(Owned::new(ArrayHandle {
                raw,
                descriptor,
                flags,
                stream: stream.clone(),
                parent,
            })),
        }
    }

    /// The array's shape.
    pub fn descriptor(&self) -> &ArrayDescriptor {
        &self.inner.descriptor
    }

    /// What the array may be used for beyond copies and texture fetches.
    pub fn flags(&self) -> ArrayFlags {
        self.inner.flags
    }

    /// Whether this array is a level of a mipmapped array.
    pub fn is_mipmap_level(&self) -> bool {
        self.inner.parent.is_some()
    }

    /// A share of the array's handle, which a texture or surface over it keeps: the array is
    /// destroyed when the last share is gone.
    pub(crate) fn keep(&self) -> Arc<dyn Send + Sync> {
        self.inner.clone()
    }

    /// The raw handle.
    pub fn as_raw(&self) -> CUarray {
        self.inner.raw
    }

    /// The stream its copies and its destruction are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    pub(super) fn shape(&self) -> Shape {
        let descriptor = &self.inner.descriptor;
        Shape::Array {
            width_bytes: descriptor.width * descriptor.element_bytes(),
            height: descriptor.height.max(1),
            depth: descriptor.depth.max(1),
            element: descriptor.element_bytes(),
        }
    }

    /// Whether the array has slices (so only the 3-D copy reaches it).
    pub(super) fn is_3d(&self) -> bool {
        self.inner.descriptor.depth > 0
    }

    /// Waits for the stream, then destroys the array now, returning the driver's error. While a
    /// texture or surface made over it lives, that one destroys it last (logging a failure)
    /// and this returns `Ok(())`; a mipmap level is freed with its mipmapped array.
    #[doc = cuda_sys::api_doc!(cuArrayDestroy)]
    #[doc(alias = "cuArrayDestroy")]
    pub fn close(self) -> Result<()> {
        match Arc::try_unwrap(self.inner) {
            Ok(owned) => owned.close(),
            Err(_shared) => Ok(()),
        }
    }
}

impl ArrayDescriptor {
    /// The driver's description of this shape with `flags`.
    pub(crate) fn raw(&self, flags: ArrayFlags) -> CUDA_ARRAY3D_DESCRIPTOR {
        CUDA_ARRAY3D_DESCRIPTOR {
            Width: self.width,
            Height: self.height,
            Depth: self.depth,
            Format: self.format.raw(),
            NumChannels: self.channels,
            Flags: flags.bits(),
        }
    }

    /// How many axes the shape has: 1, 2 or 3.
    pub fn dimensions(&self) -> usize {
        match (self.height, self.depth) {
            (0, _) => 1,
            (_, 0) => 2,
            _ => 3,
        }
    }
}

/// Refuses flags the shape cannot take: texture gather on an array that is not 2-D, and bits
/// this crate does not name.
pub(crate) fn check_flags(descriptor: &ArrayDescriptor, flags: ArrayFlags) -> Result<()> {
    if flags.contains(ArrayFlags::TEXTURE_GATHER) && descriptor.dimensions() != 2 {
        return Err(Error::invalid_argument(format!(
            "ArrayFlags::TEXTURE_GATHER needs a 2-D array, not a {}-D one",
            descriptor.dimensions()
        )));
    }
    Ok(())
}

impl Release for ArrayHandle {
    const WHAT: &'static str = "CUDA array";

    fn release(&mut self) -> Result<()> {
        if self.parent.is_some() {
            // A mipmap level: its mipmapped array frees it (kept alive until now by `parent`).
            return Ok(());
        }
        self.stream.drain()?;
        let _current = self.stream.context().scoped()?;
        // SAFETY: the array made by cuArray3DCreate, destroyed once, after its stream drained.
        unsafe { cu!(self.stream.driver(), cuArrayDestroy(self.raw)) }
    }
}

impl fmt::Debug for CudaArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaArray")
            .field("descriptor", &self.inner.descriptor)
            .field("flags", &self.inner.flags)
            .field("mipmap_level", &self.is_mipmap_level())
            .finish()
    }
}

assert_send_sync!(CudaArray);

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(width: usize, height: usize, depth: usize, channels: u32) -> ArrayDescriptor {
        ArrayDescriptor {
            width,
            height,
            depth,
            format: ArrayFormat::F32,
            channels,
        }
    }

    #[test]
    fn descriptors_are_checked() {
        assert!(descriptor(16, 8, 4, 4).check().is_ok());
        assert_eq!(descriptor(16, 8, 4, 4).element_bytes(), 16);
        assert!(descriptor(16, 0, 0, 1).check().is_ok());
        assert!(descriptor(16, 8, 4, 3).check().is_err());
        assert!(descriptor(0, 8, 0, 1).check().is_err());
        assert!(descriptor(16, 0, 4, 1).check().is_err());
        assert!(descriptor(usize::MAX, 1, 0, 4).check().is_err());
        assert_eq!(ArrayFormat::F16.bytes(), 2);
    }

    #[test]
    fn flags_are_checked_against_the_shape() {
        let gather = ArrayFlags::TEXTURE_GATHER;
        assert!(check_flags(&descriptor(16, 8, 0, 1), gather).is_ok());
        let error = check_flags(&descriptor(16, 8, 4, 1), gather).unwrap_err();
        assert!(
            error.to_string().contains("2-D array, not a 3-D"),
            "{error}"
        );
        assert!(check_flags(&descriptor(16, 0, 0, 1), gather).is_err());
        let surface = ArrayFlags::SURFACE_LOAD_STORE;
        assert!(check_flags(&descriptor(16, 8, 4, 1), surface).is_ok());
        assert_eq!(descriptor(16, 8, 4, 1).raw(surface).Flags, 2);
        assert_eq!(
            [
                descriptor(4, 0, 0, 1).dimensions(),
                descriptor(4, 4, 0, 1).dimensions(),
                descriptor(4, 4, 4, 1).dimensions()
            ],
            [1, 2, 3]
        );
    }
}
