//! `TextureObject`: a texture over an array, a mipmapped array, linear or pitched memory
//! (`cuTexObjectCreate`), which keeps what it reads alive.

use std::fmt;
use std::sync::Arc;

use super::descriptor::{Source, TextureDescriptor};
use super::limits::TextureLimits;
use super::mipmapped::MipmappedArray;
use super::release::{StreamObject, Texture};
use crate::error::{Result, cu};
use crate::handle::{Owned, assert_send_sync};
use crate::memory::Buffer;
use crate::memory::copies::{ArrayFormat, CudaArray, PitchedBuffer};
use crate::stream::Stream;
use cuda_sys::{
    CUDA_RESOURCE_DESC, CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 as ArrayResource,
    CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_2 as MipmapResource,
    CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 as LinearResource,
    CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4 as Pitch2dResource, CUresourcetype,
    CUtexObject,
};

/// A texture object (`cuTexObjectCreate`): what kernels sample with `tex1Dfetch`, `tex2D`,
/// `tex2DLod`, `tex3D` and the others, passed to them as an argument (a
/// `cudaTextureObject_t`, an `unsigned long long`).
///
/// It keeps what it reads alive (the array, mipmapped array or buffer), and is ordered on that
/// resource's stream: a launch on another stream that takes the texture as an argument is
/// ordered like a launch taking a buffer, and dropping the texture waits for that stream, then
/// destroys it. Every field of its [`TextureDescriptor`] is checked against the resource and
/// the device's [`TextureLimits`] before the driver sees it.
#[must_use = "a texture object is destroyed when dropped"]
pub struct TextureObject {
    inner: Owned<StreamObject<Texture>>,
    descriptor: TextureDescriptor,
}

impl TextureObject {
    /// A texture over `array` (a mipmap level included), sampled as `descriptor` says.
    ///
    #[doc = cuda_sys::api_doc!(cuTexObjectCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the field and the rule
    /// or limit broken (see [`TextureDescriptor`]); the driver's error.
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_array(array: &CudaArray, descriptor: &TextureDescriptor) -> Result<Self> {
        let source = Source::Array {
            descriptor: *array.descriptor(),
            flags: array.flags(),
        };
        let resource = resource(CUresourcetype::CU_RESOURCE_TYPE_ARRAY, |res| {
            res.array = ArrayResource {
                hArray: array.as_raw(),
            }
        });
        let integer = !array.descriptor().format.is_float();
        Self::create(
            array.stream(),
            &source,
            &resource,
            descriptor,
            (1, integer),
            array.keep(),
        )
    }

    /// A texture over every level of `array`, filtered between levels as `descriptor`'s
    /// mipmap fields say (`tex2DLod`, `tex2DGrad`).
    ///
    #[doc = cuda_sys::api_doc!(cuTexObjectCreate)]
    /// # Errors
    ///
    /// As [`from_array`](Self::from_array), and for level clamps past the array's last level.
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_mipmapped(array: &MipmappedArray, descriptor: &TextureDescriptor) -> Result<Self> {
        let source = Source::Mipmapped {
            descriptor: *array.descriptor(),
            levels: array.levels(),
        };
        let resource = resource(CUresourcetype::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY, |res| {
            res.mipmap = MipmapResource {
                hMipmappedArray: array.as_raw(),
            }
        });
        let integer = !array.descriptor().format.is_float();
        Self::create(
            array.stream(),
            &source,
            &resource,
            descriptor,
            (array.levels(), integer),
            array.keep(),
        )
    }

    /// A 1-D texture over the whole of `buffer`, read as elements of `channels` (1, 2 or 4)
    /// channels of `format` with `tex1Dfetch` (no filtering, no address modes: `descriptor`
    /// chooses the read mode only).
    ///
    #[doc = cuda_sys::api_doc!(cuTexObjectCreate)]
    /// # Errors
    ///
    /// As [`from_array`](Self::from_array): a buffer that is not a whole number of elements,
    /// past the device's linear-texture width or not aligned to its texture alignment.
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_linear(
        buffer: &Arc<Buffer>,
        format: ArrayFormat,
        channels: u32,
        descriptor: &TextureDescriptor,
    ) -> Result<Self> {
        check_channels(channels)?;
        let source = Source::Linear {
            ptr: buffer.as_raw(),
            bytes: buffer.len(),
            format,
            channels,
        };
        let resource = resource(CUresourcetype::CU_RESOURCE_TYPE_LINEAR, |res| {
            res.linear = LinearResource {
                devPtr: buffer.as_raw(),
                format: format.raw(),
                numChannels: channels,
                sizeInBytes: buffer.len(),
            }
        });
        let keep: Arc<dyn Send + Sync> = buffer.clone();
        Self::create(
            buffer.stream(),
            &source,
            &resource,
            descriptor,
            (1, !format.is_float()),
            keep,
        )
    }

    /// A 2-D texture over the first slice of `buffer`: its rows as elements of `channels`
    /// channels of `format` (`width_bytes` must hold whole elements), its pitch the driver's.
    ///
    #[doc = cuda_sys::api_doc!(cuTexObjectCreate)]
    /// # Errors
    ///
    /// As [`from_array`](Self::from_array): rows that are not whole elements, an extent or
    /// pitch past the device's pitched-texture limits, a misaligned address or pitch.
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_pitched(
        buffer: &Arc<PitchedBuffer>,
        format: ArrayFormat,
        channels: u32,
        descriptor: &TextureDescriptor,
    ) -> Result<Self> {
        check_channels(channels)?;
        let element = format.bytes() * channels as usize;
        if !buffer.width_bytes().is_multiple_of(element) {
            return Err(crate::error::Error::invalid_argument(format!(
                "a pitched texture's rows of {} bytes are not whole {element}-byte elements",
                buffer.width_bytes()
            )));
        }
        let width = buffer.width_bytes() / element;
        let source = Source::Pitch2d {
            ptr: buffer.as_raw(),
            width,
            height: buffer.height(),
            pitch: buffer.pitch(),
            format,
            channels,
        };
        let resource = resource(CUresourcetype::CU_RESOURCE_TYPE_PITCH2D, |res| {
            res.pitch2D = Pitch2dResource {
                devPtr: buffer.as_raw(),
                format: format.raw(),
                numChannels: channels,
                width,
                height: buffer.height(),
                pitchInBytes: buffer.pitch(),
            }
        });
        let keep: Arc<dyn Send + Sync> = buffer.clone();
        Self::create(
            buffer.stream(),
            &source,
            &resource,
            descriptor,
            (1, !format.is_float()),
            keep,
        )
    }

    /// Checks `descriptor` against `source` and the device, then creates the texture.
    fn create(
        stream: &Stream,
        source: &Source,
        resource: &CUDA_RESOURCE_DESC,
        descriptor: &TextureDescriptor,
        (levels, integer): (u32, bool),
        keep: Arc<dyn Send + Sync>,
    ) -> Result<Self> {
        descriptor.check(source, &TextureLimits::of(stream.device())?)?;
        let raw_descriptor = descriptor.raw(levels, integer);
        let _current = stream.context().scoped()?;
        let mut raw: CUtexObject = 0;
        // SAFETY: valid out-pointer and descriptions (checked above); the resource is alive
        // (kept by `keep`, which the texture holds until it is destroyed); no view.
        unsafe {
            cu!(
                stream.driver(),
                cuTexObjectCreate(&mut raw, resource, &raw_descriptor, std::ptr::null())
            )
        }?;
        Ok(Self {
            inner: Owned::new(StreamObject::new(raw, stream, Some(keep))),
            descriptor: *descriptor,
        })
    }

    /// The raw handle, as kernels receive it (`cudaTextureObject_t`).
    pub fn as_raw(&self) -> CUtexObject {
        self.inner.raw
    }

    /// How it samples.
    pub fn descriptor(&self) -> &TextureDescriptor {
        &self.descriptor
    }

    /// The stream of the resource it reads, which its destruction is ordered on.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Waits for the resource's stream, then destroys the texture now, returning the driver's
    /// error (dropping does the same and only logs).
    #[doc = cuda_sys::api_doc!(cuTexObjectDestroy)]
    #[doc(alias = "cuTexObjectDestroy")]
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

/// A resource description of `kind`, its union filled by `fill`.
pub(super) fn resource(
    kind: CUresourcetype,
    fill: impl FnOnce(&mut cuda_sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1),
) -> CUDA_RESOURCE_DESC {
    let mut resource = CUDA_RESOURCE_DESC {
        resType: kind,
        ..Default::default()
    };
    fill(&mut resource.res);
    resource
}

/// Refuses a channel count other than 1, 2 or 4.
fn check_channels(channels: u32) -> Result<()> {
    if ![1, 2, 4].contains(&channels) {
        return Err(crate::error::Error::invalid_argument(format!(
            "a texture element has 1, 2 or 4 channels, not {channels}"
        )));
    }
    Ok(())
}

impl fmt::Debug for TextureObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextureObject")
            .field("raw", &self.inner.raw)
            .field("descriptor", &self.descriptor)
            .finish()
    }
}

assert_send_sync!(TextureObject);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_descriptions_name_their_kind() {
        let linear = resource(CUresourcetype::CU_RESOURCE_TYPE_LINEAR, |res| {
            res.linear = LinearResource {
                devPtr: 0x1000,
                format: ArrayFormat::F32.raw(),
                numChannels: 2,
                sizeInBytes: 64,
            }
        });
        assert_eq!(linear.resType, CUresourcetype::CU_RESOURCE_TYPE_LINEAR);
        assert_eq!(linear.flags, 0);
        // SAFETY: the union was filled through `linear`.
        let (ptr, bytes) = unsafe { (linear.res.linear.devPtr, linear.res.linear.sizeInBytes) };
        assert_eq!((ptr, bytes), (0x1000, 64));
        assert!(check_channels(3).is_err());
        assert!(check_channels(4).is_ok());
    }
}
