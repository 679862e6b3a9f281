//! The device's texture and surface limits (`CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE*`,
//! `..._SURFACE*`, the alignments), read once per object made and held against every
//! descriptor field before the driver sees it.

use crate::device::Device;
use crate::error::{Error, Result};
use cuda_sys::CUdevice_attribute;

/// What a device's textures and surfaces may be: the largest extent along each axis for each
/// kind of resource, in elements (a pitch in bytes), and the alignments linear memory needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TextureLimits {
    /// A 1-D texture over an array: its width.
    pub texture_1d: usize,
    /// A 2-D texture over an array: width and height.
    pub texture_2d: [usize; 2],
    /// A 3-D texture over an array: width, height and depth.
    pub texture_3d: [usize; 3],
    /// A 2-D texture gather (`tex2Dgather`): width and height.
    pub texture_2d_gather: [usize; 2],
    /// A 1-D texture over linear memory (`tex1Dfetch`): its width.
    pub texture_1d_linear: usize,
    /// A 2-D texture over pitched memory: width, height and pitch (bytes).
    pub texture_2d_linear: [usize; 3],
    /// A 1-D texture over a mipmapped array: its width.
    pub texture_1d_mipmapped: usize,
    /// A 2-D texture over a mipmapped array: width and height.
    pub texture_2d_mipmapped: [usize; 2],
    /// The alignment of a linear or pitched texture's first address (bytes).
    pub texture_alignment: usize,
    /// The alignment of a pitched texture's pitch (bytes).
    pub texture_pitch_alignment: usize,
    /// A 1-D surface: its width.
    pub surface_1d: usize,
    /// A 2-D surface: width and height.
    pub surface_2d: [usize; 2],
    /// A 3-D surface: width, height and depth.
    pub surface_3d: [usize; 3],
}

impl TextureLimits {
    /// The limits of `device` (one `cuDeviceGetAttribute` each).
    ///
    #[doc = cuda_sys::api_doc!(cuDeviceGetAttribute)]
    /// # Errors
    ///
    /// The driver's error.
    #[doc(alias = "cuDeviceGetAttribute")]
    pub fn of(device: &Device) -> Result<Self> {
        use CUdevice_attribute as A;
        let get = |attribute| {
            device
                .attribute(attribute)
                .map(|value| usize::try_from(value).unwrap_or(0))
        };
        Ok(Self {
            texture_1d: get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH)?,
            texture_2d: [
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT)?,
            ],
            texture_3d: [
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH)?,
            ],
            texture_2d_gather: [
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT)?,
            ],
            texture_1d_linear: get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH)?,
            texture_2d_linear: [
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH)?,
            ],
            texture_1d_mipmapped: get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH)?,
            texture_2d_mipmapped: [
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT)?,
            ],
            texture_alignment: get(A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)?,
            texture_pitch_alignment: get(A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)?,
            surface_1d: get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH)?,
            surface_2d: [
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT)?,
            ],
            surface_3d: [
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH)?,
            ],
        })
    }
}

/// The axes' names, for errors.
const AXES: [&str; 3] = ["width", "height", "depth"];

/// Refuses `extent` (one value per axis used) past `limit` on any axis, naming `what`, the
/// axis, the extent and the limit.
pub(super) fn within(what: &str, extent: &[usize], limit: &[usize]) -> Result<()> {
    for ((axis, &have), &most) in AXES.iter().zip(extent).zip(limit) {
        if have > most {
            return Err(Error::invalid_argument(format!(
                "{what}: a {axis} of {have} is past the device's limit of {most}"
            )));
        }
    }
    Ok(())
}

/// Refuses `value` (an address or pitch, `what`) that is not a multiple of `alignment`.
pub(super) fn aligned(what: &str, value: u64, alignment: usize) -> Result<()> {
    let alignment = alignment.max(1) as u64;
    if !value.is_multiple_of(alignment) {
        return Err(Error::invalid_argument(format!(
            "{what} {value:#x} is not a multiple of the device's {alignment}-byte alignment"
        )));
    }
    Ok(())
}

#[cfg(test)]
/// Limits of the sizes an sm_90 device reports, for the checks' tests.
pub(super) fn sm90_limits() -> TextureLimits {
    TextureLimits {
        texture_1d: 131072,
        texture_2d: [131072, 65536],
        texture_3d: [16384, 16384, 16384],
        texture_2d_gather: [32768, 32768],
        texture_1d_linear: 268435456,
        texture_2d_linear: [131072, 65000, 2097120],
        texture_1d_mipmapped: 32768,
        texture_2d_mipmapped: [32768, 32768],
        texture_alignment: 512,
        texture_pitch_alignment: 32,
        surface_1d: 32768,
        surface_2d: [131072, 65536],
        surface_3d: [16384, 16384, 16384],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_and_alignments_are_checked() {
        assert!(within("a 2-D texture", &[10, 20], &[10, 20]).is_ok());
        let error = within("a 2-D texture", &[10, 21], &[10, 20]).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)));
        assert!(
            error
                .to_string()
                .contains("a 2-D texture: a height of 21 is past the device's limit of 20"),
            "{error}"
        );
        assert!(aligned("the address", 1024, 512).is_ok());
        let error = aligned("the pitch", 48, 32).unwrap_err();
        assert!(error.to_string().contains("0x30"), "{error}");
        assert!(aligned("anything", 3, 0).is_ok());
    }
}
