//! `CudaArray`: an opaque, texture-layout array (`cuArray3DCreate`), as a copy side.

use std::fmt;

use super::extent::Shape;
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, Release, assert_send_sync};
use crate::stream::Stream;
use cuda_sys::{CUDA_ARRAY3D_DESCRIPTOR, CUarray, CUarray_format};

/// The element format of a [`CudaArray`]'s channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    fn raw(self) -> CUarray_format {
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

impl ArrayDescriptor {
    /// The bytes of one element.
    pub fn element_bytes(&self) -> usize {
        self.format.bytes() * self.channels as usize
    }

    fn check(&self) -> Result<()> {
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

/// A CUDA array (`cuArray3DCreate`): memory in the layout textures and surfaces read, reached
/// only through copies. Its copies are ordered on its stream; dropping it waits for that
/// stream, then destroys it.
#[must_use = "an array is destroyed when dropped"]
pub struct CudaArray {
    inner: Owned<ArrayHandle>,
}

struct ArrayHandle {
    raw: CUarray,
    descriptor: ArrayDescriptor,
    stream: Stream,
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
        descriptor.check()?;
        let raw_descriptor = CUDA_ARRAY3D_DESCRIPTOR {
            Width: descriptor.width,
            Height: descriptor.height,
            Depth: descriptor.depth,
            Format: descriptor.format.raw(),
            NumChannels: descriptor.channels,
            Flags: 0,
        };
        let _current = stream.context().scoped()?;
        let mut raw: CUarray = std::ptr::null_mut();
        // SAFETY: valid out-pointer and descriptor; the stream's context is current.
        unsafe {
            cu!(
                stream.driver(),
                cuArray3DCreate_v2(&mut raw, &raw_descriptor)
            )
        }?;
        Ok(Self {
            inner: Owned::new(ArrayHandle {
                raw,
                descriptor,
                stream: stream.clone(),
            }),
        })
    }

    /// The array's shape.
    pub fn descriptor(&self) -> &ArrayDescriptor {
        &self.inner.descriptor
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

    /// Waits for the stream, then destroys the array now, returning the driver's error.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

impl Release for ArrayHandle {
    const WHAT: &'static str = "CUDA array";

    fn release(&mut self) -> Result<()> {
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
}
