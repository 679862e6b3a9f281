//! `SurfaceObject`: read and write access to a surface-capable array (`cuSurfObjectCreate`),
//! which keeps the array alive.

use std::fmt;

use super::descriptor::extent;
use super::limits::{TextureLimits, within};
use super::object::resource;
use super::release::{StreamObject, Surface};
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, assert_send_sync};
use crate::memory::copies::{ArrayDescriptor, ArrayFlags, CudaArray};
use crate::stream::Stream;
use cuda_sys::{
    CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 as ArrayResource, CUresourcetype,
    CUsurfObject,
};

/// A surface object (`cuSurfObjectCreate`): what kernels read and write an array through with
/// `surf2Dread`, `surf2Dwrite` and the others (x in bytes), passed to them as an argument (a
/// `cudaSurfaceObject_t`, an `unsigned long long`).
///
/// The array must have been made with [`ArrayFlags::SURFACE_LOAD_STORE`] (a mipmap level of
/// such a mipmapped array too). The surface keeps the array alive and is ordered on its
/// stream as a texture is: a launch taking it on another stream is ordered like one taking a
/// buffer, and dropping it waits for that stream.
#[must_use = "a surface object is destroyed when dropped"]
pub struct SurfaceObject {
    inner: Owned<StreamObject<Surface>>,
}

/// Checks that a surface can be made over an array of `descriptor`'s shape with `flags`.
fn check(descriptor: &ArrayDescriptor, flags: ArrayFlags, limits: &TextureLimits) -> Result<()> {
    if !flags.contains(ArrayFlags::SURFACE_LOAD_STORE) {
        return Err(Error::invalid_argument(
            "a surface needs an array made with ArrayFlags::SURFACE_LOAD_STORE",
        ));
    }
    let extent = extent(descriptor);
    match descriptor.dimensions() {
        1 => within("a 1-D surface", &extent, &[limits.surface_1d]),
        2 => within("a 2-D surface", &extent, &limits.surface_2d),
        _ => within("a 3-D surface", &extent, &limits.surface_3d),
    }
}

impl SurfaceObject {
    /// A surface over `array`.
    ///
    #[doc = cuda_sys::api_doc!(cuSurfObjectCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an array without [`ArrayFlags::SURFACE_LOAD_STORE`] or
    /// past the device's surface limits ([`TextureLimits`]); the driver's error.
    #[doc(alias = "cuSurfObjectCreate")]
    pub fn new(array: &CudaArray) -> Result<Self> {
        let stream = array.stream();
        check(
            array.descriptor(),
            array.flags(),
            &TextureLimits::of(stream.device())?,
        )?;
        let resource = resource(CUresourcetype::CU_RESOURCE_TYPE_ARRAY, |res| {
            res.array = ArrayResource {
                hArray: array.as_raw(),
            }
        });
        let _current = stream.context().scoped()?;
        let mut raw: CUsurfObject = 0;
        // SAFETY: valid out-pointer and description of a live, surface-capable array (kept by
        // the surface until it is destroyed).
        unsafe { cu!(stream.driver(), cuSurfObjectCreate(&mut raw, &resource)) }?;
        Ok(Self {
            inner: Owned::new(StreamObject::new(raw, stream, Some(array.keep()))),
        })
    }

    /// The raw handle, as kernels receive it (`cudaSurfaceObject_t`).
    pub fn as_raw(&self) -> CUsurfObject {
        self.inner.raw
    }

    /// The stream of the array, which its destruction is ordered on.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// Waits for the array's stream, then destroys the surface now, returning the driver's
    /// error (dropping does the same and only logs).
    #[doc = cuda_sys::api_doc!(cuSurfObjectDestroy)]
    #[doc(alias = "cuSurfObjectDestroy")]
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

impl fmt::Debug for SurfaceObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SurfaceObject")
            .field("raw", &self.inner.raw)
            .finish()
    }
}

assert_send_sync!(SurfaceObject);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::copies::ArrayFormat;
    use crate::memory::texture::limits::sm90_limits;

    #[test]
    fn surfaces_need_the_flag_and_fit_the_limits() {
        let shape = |width, height, depth| ArrayDescriptor {
            width,
            height,
            depth,
            format: ArrayFormat::U8,
            channels: 4,
        };
        let surface = ArrayFlags::SURFACE_LOAD_STORE;
        assert!(check(&shape(64, 64, 0), surface, &sm90_limits()).is_ok());
        let error = check(&shape(64, 64, 0), ArrayFlags::empty(), &sm90_limits()).unwrap_err();
        assert!(error.to_string().contains("SURFACE_LOAD_STORE"), "{error}");
        let error = check(&shape(32769, 0, 0), surface, &sm90_limits()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("a 1-D surface: a width of 32769"),
            "{error}"
        );
        assert!(check(&shape(64, 64, 16385), surface, &sm90_limits()).is_err());
    }
}
