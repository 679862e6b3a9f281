//! `MipmappedArray`: a CUDA array with a chain of levels, each half the one before
//! (`cuMipmappedArrayCreate`); every level is a [`CudaArray`] for copies in and out.

use std::fmt;
use std::sync::Arc;

use super::descriptor::extent;
use super::limits::{TextureLimits, within};
use super::release::{Mipmap, StreamObject};
use crate::error::{Error, Result, cu};
use crate::handle::{Owned, assert_send_sync};
use crate::memory::copies::{ArrayDescriptor, ArrayFlags, CudaArray, check_flags};
use crate::stream::Stream;
use cuda_sys::{CUarray, CUmipmappedArray};

/// A mipmapped array (`cuMipmappedArrayCreate`): level 0 of the descriptor's shape, and each
/// further level half the previous along every axis (at least 1). Levels are reached as
/// [`CudaArray`]s ([`level`](Self::level)), which copy like any array; textures over the
/// whole chain filter between levels ([`TextureObject::from_mipmapped`](crate::TextureObject::from_mipmapped)).
///
/// Dropping it waits for its stream, then destroys it, once every level and texture made from
/// it is gone too.
#[must_use = "a mipmapped array is destroyed when dropped"]
pub struct MipmappedArray {
    /// The handle, shared with its levels and the textures over it, the last of which
    /// destroys it.
    inner: Arc<Owned<StreamObject<Mipmap>>>,
    descriptor: ArrayDescriptor,
    levels: u32,
    flags: ArrayFlags,
}

/// The most levels a shape has: one more than the base-2 logarithm of its largest extent.
pub(super) fn most_levels(descriptor: &ArrayDescriptor) -> u32 {
    let largest = descriptor
        .width
        .max(descriptor.height)
        .max(descriptor.depth);
    usize::BITS - largest.max(1).leading_zeros()
}

/// The shape of level `level` of `base`: each extent halved `level` times, at least 1 (an
/// absent axis stays absent).
pub(super) fn level_shape(base: &ArrayDescriptor, level: u32) -> ArrayDescriptor {
    let halve = |extent: usize| match extent {
        0 => 0,
        extent => (extent >> level).max(1),
    };
    ArrayDescriptor {
        width: halve(base.width),
        height: halve(base.height),
        depth: halve(base.depth),
        ..*base
    }
}

/// Checks a mipmapped array's shape, level count and flags against `limits`.
fn check(
    descriptor: &ArrayDescriptor,
    levels: u32,
    flags: ArrayFlags,
    limits: &TextureLimits,
) -> Result<()> {
    check_flags(descriptor, flags)?;
    if flags.contains(ArrayFlags::TEXTURE_GATHER) {
        return Err(Error::invalid_argument(
            "a mipmapped array cannot take ArrayFlags::TEXTURE_GATHER",
        ));
    }
    let most = most_levels(descriptor);
    if levels == 0 || levels > most {
        return Err(Error::invalid_argument(format!(
            "a mipmapped array of {} x {} x {} has 1 to {most} levels, not {levels}",
            descriptor.width, descriptor.height, descriptor.depth
        )));
    }
    let extent = extent(descriptor);
    match descriptor.dimensions() {
        1 => within(
            "a 1-D mipmapped array",
            &extent,
            &[limits.texture_1d_mipmapped],
        ),
        2 => within(
            "a 2-D mipmapped array",
            &extent,
            &limits.texture_2d_mipmapped,
        ),
        _ => within("a 3-D mipmapped array", &extent, &limits.texture_3d),
    }
}

impl MipmappedArray {
    /// Creates a mipmapped array of `levels` levels, level 0 of `descriptor`'s shape, on
    /// `stream`'s device.
    ///
    #[doc = cuda_sys::api_doc!(cuMipmappedArrayCreate)]
    /// # Errors
    ///
    /// As [`with_flags`](Self::with_flags).
    #[doc(alias = "cuMipmappedArrayCreate")]
    pub fn new(stream: &Stream, descriptor: ArrayDescriptor, levels: u32) -> Result<Self> {
        Self::with_flags(stream, descriptor, levels, ArrayFlags::empty())
    }

    /// Creates a mipmapped array whose levels may also be used as `flags` say (surfaces).
    ///
    #[doc = cuda_sys::api_doc!(cuMipmappedArrayCreate)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a shape [`CudaArray::new`] refuses, a level count of 0
    /// or past the shape's (one more than the base-2 logarithm of its largest extent), an
    /// extent past the device's mipmapped-texture limits ([`TextureLimits`]) or texture
    /// gather; the driver's error.
    #[doc(alias = "cuMipmappedArrayCreate")]
    pub fn with_flags(
        stream: &Stream,
        descriptor: ArrayDescriptor,
        levels: u32,
        flags: ArrayFlags,
    ) -> Result<Self> {
        descriptor.check()?;
        check(
            &descriptor,
            levels,
            flags,
            &TextureLimits::of(stream.device())?,
        )?;
        let raw_descriptor = descriptor.raw(flags);
        let _current = stream.context().scoped()?;
        let mut raw: CUmipmappedArray = std::ptr::null_mut();
        // SAFETY: valid out-pointer and descriptor; the stream's context is current.
        unsafe {
            cu!(
                stream.driver(),
                cuMipmappedArrayCreate(&mut raw, &raw_descriptor, levels)
            )
        }?;
        Ok(Self {
            inner: Arc::new(Owned::new(StreamObject::new(raw, stream, None))),
            descriptor,
            levels,
            flags,
        })
    }

    /// Level `level` (0 is the largest) as a [`CudaArray`], for copies in and out and for
    /// surfaces; it keeps this mipmapped array alive.
    ///
    #[doc = cuda_sys::api_doc!(cuMipmappedArrayGetLevel)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a level past the last; the driver's error.
    #[doc(alias = "cuMipmappedArrayGetLevel")]
    pub fn level(&self, level: u32) -> Result<CudaArray> {
        let descriptor = self.level_descriptor(level)?;
        let stream = &self.inner.stream;
        let _current = stream.context().scoped()?;
        let mut raw: CUarray = std::ptr::null_mut();
        // SAFETY: a live mipmapped array and a level below its count; valid out-pointer.
        unsafe {
            cu!(
                stream.driver(),
                cuMipmappedArrayGetLevel(&mut raw, self.inner.raw, level)
            )
        }?;
        let parent: Arc<dyn Send + Sync> = self.inner.clone();
        Ok(CudaArray::from_parts(
            raw,
            descriptor,
            self.flags,
            stream,
            Some(parent),
        ))
    }

    /// The shape of level `level`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a level past the last.
    pub fn level_descriptor(&self, level: u32) -> Result<ArrayDescriptor> {
        if level >= self.levels {
            return Err(Error::invalid_argument(format!(
                "level {level} of a mipmapped array of {} levels",
                self.levels
            )));
        }
        Ok(level_shape(&self.descriptor, level))
    }

    /// The shape of level 0.
    pub fn descriptor(&self) -> &ArrayDescriptor {
        &self.descriptor
    }

    /// How many levels it has.
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// What its levels may be used for.
    pub fn flags(&self) -> ArrayFlags {
        self.flags
    }

    /// The raw handle.
    pub fn as_raw(&self) -> CUmipmappedArray {
        self.inner.raw
    }

    /// The stream its copies and its destruction are ordered on.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// A share of the handle, which a texture over it keeps.
    pub(super) fn keep(&self) -> Arc<dyn Send + Sync> {
        self.inner.clone()
    }

    /// Waits for the stream, then destroys the array now, returning the driver's error. While
    /// one of its levels or a texture over it lives, the last of them destroys it (logging a
    /// failure) and this returns `Ok(())`.
    #[doc = cuda_sys::api_doc!(cuMipmappedArrayDestroy)]
    #[doc(alias = "cuMipmappedArrayDestroy")]
    pub fn close(self) -> Result<()> {
        match Arc::try_unwrap(self.inner) {
            Ok(owned) => owned.close(),
            Err(_shared) => Ok(()),
        }
    }
}

impl fmt::Debug for MipmappedArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MipmappedArray")
            .field("descriptor", &self.descriptor)
            .field("levels", &self.levels)
            .field("flags", &self.flags)
            .finish()
    }
}

assert_send_sync!(MipmappedArray);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::copies::ArrayFormat;
    use crate::memory::texture::limits::sm90_limits;

    fn shape(width: usize, height: usize, depth: usize) -> ArrayDescriptor {
        ArrayDescriptor {
            width,
            height,
            depth,
            format: ArrayFormat::F32,
            channels: 1,
        }
    }

    #[test]
    fn levels_halve_every_axis_down_to_one() {
        assert_eq!(most_levels(&shape(256, 64, 0)), 9);
        assert_eq!(most_levels(&shape(1, 0, 0)), 1);
        assert_eq!(most_levels(&shape(300, 0, 0)), 9);
        let base = shape(256, 64, 0);
        assert_eq!(level_shape(&base, 0), base);
        assert_eq!(level_shape(&base, 3), shape(32, 8, 0));
        assert_eq!(level_shape(&base, 8), shape(1, 1, 0));
        assert_eq!(level_shape(&shape(8, 8, 8), 2), shape(2, 2, 2));
    }

    #[test]
    fn counts_extents_and_flags_are_checked() {
        let none = ArrayFlags::empty();
        assert!(check(&shape(256, 64, 0), 9, none, &sm90_limits()).is_ok());
        let error = check(&shape(256, 64, 0), 10, none, &sm90_limits()).unwrap_err();
        assert!(
            error.to_string().contains("1 to 9 levels, not 10"),
            "{error}"
        );
        assert!(check(&shape(256, 64, 0), 0, none, &sm90_limits()).is_err());
        let error = check(&shape(40000, 64, 0), 2, none, &sm90_limits()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("a 2-D mipmapped array: a width of 40000"),
            "{error}"
        );
        let error = check(
            &shape(64, 64, 0),
            2,
            ArrayFlags::TEXTURE_GATHER,
            &sm90_limits(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("TEXTURE_GATHER"), "{error}");
        assert!(
            check(
                &shape(64, 64, 64),
                7,
                ArrayFlags::SURFACE_LOAD_STORE,
                &sm90_limits()
            )
            .is_ok()
        );
    }
}
