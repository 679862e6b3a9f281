//! How a texture samples ([`TextureDescriptor`]), and the checks of every field against what
//! it reads and the device's limits, before `cuTexObjectCreate` sees them.

use super::limits::{TextureLimits, aligned, within};
use crate::error::{Error, Result};
use crate::memory::copies::{ArrayDescriptor, ArrayFlags, ArrayFormat};
use cuda_sys::{
    CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION, CU_TRSF_NORMALIZED_COORDINATES,
    CU_TRSF_READ_AS_INTEGER, CU_TRSF_SRGB, CUDA_TEXTURE_DESC, CUaddress_mode, CUfilter_mode,
};

/// What a fetch outside `[0, extent)` (or `[0, 1)` with normalized coordinates) reads, per
/// axis (`CUaddress_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum AddressMode {
    /// Wrap around (normalized coordinates only).
    Wrap,
    /// The nearest edge element (the default).
    #[default]
    Clamp,
    /// Mirror at every edge (normalized coordinates only).
    Mirror,
    /// The border colour.
    Border,
}

/// How a fetch between elements, or between mipmap levels, is filtered (`CUfilter_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FilterMode {
    /// The nearest element (the default).
    #[default]
    Point,
    /// Linear interpolation between the nearest elements: the fetch returns floats, so an
    /// integer format needs [`ReadMode::NormalizedFloat`].
    Linear,
}

/// What a fetch of integer data returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ReadMode {
    /// The element as stored (the default; `CU_TRSF_READ_AS_INTEGER` for integer formats).
    #[default]
    ElementType,
    /// 8- and 16-bit integers as floats in `[0, 1]` (unsigned) or `[-1, 1]` (signed).
    NormalizedFloat,
}

/// How a [`TextureObject`](crate::TextureObject) samples (`CUDA_TEXTURE_DESC`); the default
/// fetches elements as stored, at integer coordinates, clamped to the edges.
///
/// ```
/// use cuda_safe::{AddressMode, FilterMode, ReadMode, TextureDescriptor};
///
/// // Bilinear sampling of 8-bit images at coordinates in [0, 1), wrapping around.
/// let descriptor = TextureDescriptor::default()
///     .address_modes([AddressMode::Wrap; 3])
///     .filter(FilterMode::Linear)
///     .read_mode(ReadMode::NormalizedFloat)
///     .normalized_coordinates(true);
/// assert_eq!(descriptor.max_anisotropy, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct TextureDescriptor {
    /// What a fetch outside the texture reads, along x, y and z (the axes the resource has).
    pub address_modes: [AddressMode; 3],
    /// How fetches between elements are filtered.
    pub filter: FilterMode,
    /// What a fetch of integer data returns.
    pub read_mode: ReadMode,
    /// Coordinates in `[0, 1)` rather than `[0, extent)` (`CU_TRSF_NORMALIZED_COORDINATES`).
    pub normalized_coordinates: bool,
    /// sRGB to linear conversion of 8-bit unsigned data read as normalized floats
    /// (`CU_TRSF_SRGB`).
    pub srgb: bool,
    /// What [`AddressMode::Border`] reads, per channel.
    pub border_color: [f32; 4],
    /// The largest anisotropy of filtered fetches, 0 to 16 (0 and 1: none).
    pub max_anisotropy: u32,
    /// How fetches between mipmap levels are filtered (mipmapped arrays only).
    pub mipmap_filter: FilterMode,
    /// Added to the level a fetch computes (mipmapped arrays only).
    pub mipmap_level_bias: f32,
    /// The lowest level fetched (mipmapped arrays only).
    pub min_mipmap_level_clamp: f32,
    /// The highest level fetched; `None`: the array's last level (mipmapped arrays only).
    pub max_mipmap_level_clamp: Option<f32>,
    /// Turns off the trilinear optimisation, which may fetch one level where the filter
    /// blends two (`CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`).
    pub disable_trilinear_optimization: bool,
}

crate::setters::setters! {
    impl TextureDescriptor {
        address_modes: value [AddressMode; 3],
        filter: value FilterMode,
        read_mode: value ReadMode,
        normalized_coordinates: value bool,
        srgb: value bool,
        border_color: value [f32; 4],
        max_anisotropy: value u32,
        mipmap_filter: value FilterMode,
        mipmap_level_bias: value f32,
        min_mipmap_level_clamp: value f32,
        max_mipmap_level_clamp: some f32,
        disable_trilinear_optimization: value bool,
    }
}

/// What a texture reads, as its checks see it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Source {
    /// A CUDA array (a mipmap level included).
    Array {
        descriptor: ArrayDescriptor,
        flags: ArrayFlags,
    },
    /// A mipmapped array of `levels` levels, `descriptor` its level 0.
    Mipmapped {
        descriptor: ArrayDescriptor,
        levels: u32,
    },
    /// `bytes` bytes of linear memory at `ptr`, read by `tex1Dfetch`.
    Linear {
        ptr: u64,
        bytes: usize,
        format: ArrayFormat,
        channels: u32,
    },
    /// `height` rows of `width` elements, `pitch` bytes apart, at `ptr`.
    Pitch2d {
        ptr: u64,
        width: usize,
        height: usize,
        pitch: usize,
        format: ArrayFormat,
        channels: u32,
    },
}

impl Source {
    /// The element format and channels.
    fn element(&self) -> (ArrayFormat, u32) {
        match *self {
            Self::Array { descriptor, .. } | Self::Mipmapped { descriptor, .. } => {
                (descriptor.format, descriptor.channels)
            }
            Self::Linear {
                format, channels, ..
            }
            | Self::Pitch2d {
                format, channels, ..
            } => (format, channels),
        }
    }

    /// How many axes the texture has.
    fn dimensions(&self) -> usize {
        match self {
            Self::Array { descriptor, .. } | Self::Mipmapped { descriptor, .. } => {
                descriptor.dimensions()
            }
            Self::Linear { .. } => 1,
            Self::Pitch2d { .. } => 2,
        }
    }

    /// The extent and shape against the device's limits.
    fn check_limits(&self, limits: &TextureLimits) -> Result<()> {
        match *self {
            Self::Array { descriptor, flags } => {
                let extent = extent(&descriptor);
                match descriptor.dimensions() {
                    1 => within("a 1-D texture", &extent, &[limits.texture_1d]),
                    2 if flags.contains(ArrayFlags::TEXTURE_GATHER) => {
                        within("a 2-D gather texture", &extent, &limits.texture_2d_gather)
                    }
                    2 => within("a 2-D texture", &extent, &limits.texture_2d),
                    _ => within("a 3-D texture", &extent, &limits.texture_3d),
                }
            }
            Self::Mipmapped { descriptor, .. } => {
                let extent = extent(&descriptor);
                match descriptor.dimensions() {
                    1 => within(
                        "a 1-D mipmapped texture",
                        &extent,
                        &[limits.texture_1d_mipmapped],
                    ),
                    2 => within(
                        "a 2-D mipmapped texture",
                        &extent,
                        &limits.texture_2d_mipmapped,
                    ),
                    _ => within("a 3-D mipmapped texture", &extent, &limits.texture_3d),
                }
            }
            Self::Linear {
                ptr,
                bytes,
                format,
                channels,
            } => {
                let element = format.bytes() * channels as usize;
                if bytes == 0 || !bytes.is_multiple_of(element) {
                    return Err(Error::invalid_argument(format!(
                        "a linear texture of {bytes} bytes is not a whole, non-zero number of \
                         {element}-byte elements"
                    )));
                }
                within(
                    "a linear texture",
                    &[bytes / element],
                    &[limits.texture_1d_linear],
                )?;
                aligned("a linear texture's address", ptr, limits.texture_alignment)
            }
            Self::Pitch2d {
                ptr,
                width,
                height,
                pitch,
                format,
                channels,
            } => {
                let row = width.saturating_mul(format.bytes() * channels as usize);
                if width == 0 || height == 0 || row > pitch {
                    return Err(Error::invalid_argument(format!(
                        "a pitched texture of {width} x {height} elements ({row}-byte rows) \
                         does not fit a {pitch}-byte pitch"
                    )));
                }
                let [most_width, most_height, most_pitch] = limits.texture_2d_linear;
                within(
                    "a pitched texture",
                    &[width, height],
                    &[most_width, most_height],
                )?;
                if pitch > most_pitch {
                    return Err(Error::invalid_argument(format!(
                        "a pitched texture: a pitch of {pitch} bytes is past the device's limit \
                         of {most_pitch}"
                    )));
                }
                aligned("a pitched texture's address", ptr, limits.texture_alignment)?;
                aligned(
                    "a pitched texture's pitch",
                    pitch as u64,
                    limits.texture_pitch_alignment,
                )
            }
        }
    }
}

/// The extent of `descriptor` along its axes.
pub(super) fn extent(descriptor: &ArrayDescriptor) -> Vec<usize> {
    [descriptor.width, descriptor.height, descriptor.depth][..descriptor.dimensions()].to_vec()
}

fn invalid(what: impl Into<String>) -> Result<()> {
    Err(Error::invalid_argument(format!(
        "texture descriptor: {}",
        what.into()
    )))
}

impl TextureDescriptor {
    /// Checks every field against `source` and `limits`, naming the field and the rule.
    pub(super) fn check(&self, source: &Source, limits: &TextureLimits) -> Result<()> {
        source.check_limits(limits)?;
        let (format, _) = source.element();
        let dimensions = source.dimensions();
        if let Source::Linear { .. } = source {
            return self.check_linear();
        }
        for (axis, mode) in self.address_modes.iter().take(dimensions).enumerate() {
            if matches!(mode, AddressMode::Wrap | AddressMode::Mirror)
                && !self.normalized_coordinates
            {
                return invalid(format!(
                    "address_modes[{axis}] = {mode:?} needs normalized_coordinates"
                ));
            }
        }
        if self.read_mode == ReadMode::NormalizedFloat && (format.is_float() || format.bytes() > 2)
        {
            return invalid(format!(
                "read_mode NormalizedFloat converts 8- and 16-bit integers, not {format:?}"
            ));
        }
        let floats = format.is_float() || self.read_mode == ReadMode::NormalizedFloat;
        if self.filter == FilterMode::Linear && !floats {
            return invalid(format!(
                "filter Linear returns floats: {format:?} needs read_mode NormalizedFloat"
            ));
        }
        if self.srgb && (format != ArrayFormat::U8 || self.read_mode != ReadMode::NormalizedFloat) {
            return invalid(format!(
                "srgb needs U8 data read as NormalizedFloat, not {format:?} read as {:?}",
                self.read_mode
            ));
        }
        if let Some(channel) = self.border_color.iter().find(|value| !value.is_finite()) {
            return invalid(format!("border_color holds {channel}, which is not finite"));
        }
        if self.max_anisotropy > 16 {
            return invalid(format!("max_anisotropy {} is past 16", self.max_anisotropy));
        }
        match *source {
            Source::Mipmapped { levels, .. } => self.check_mipmaps(levels, floats),
            _ => self.check_no_mipmaps(),
        }
    }

    /// A linear texture (`tex1Dfetch`) reads elements at integer offsets: nothing else applies.
    fn check_linear(&self) -> Result<()> {
        let ignored = [
            ("filter", self.filter != FilterMode::Point),
            ("normalized_coordinates", self.normalized_coordinates),
            (
                "address_modes",
                self.address_modes != [AddressMode::Clamp; 3],
            ),
            ("srgb", self.srgb),
            ("max_anisotropy", self.max_anisotropy > 1),
        ];
        if let Some((field, _)) = ignored.iter().find(|(_, set)| *set) {
            return invalid(format!(
                "{field} does not apply to a linear texture (tex1Dfetch reads elements at \
                 integer offsets); leave it at its default"
            ));
        }
        if self.read_mode == ReadMode::NormalizedFloat {
            return invalid("read_mode NormalizedFloat does not apply to a linear texture");
        }
        self.check_no_mipmaps()
    }

    /// The mipmap fields of a texture over one level.
    fn check_no_mipmaps(&self) -> Result<()> {
        if self.mipmap_filter != FilterMode::Point
            || self.mipmap_level_bias != 0.0
            || self.min_mipmap_level_clamp != 0.0
            || self.max_mipmap_level_clamp.is_some()
        {
            return invalid(
                "mipmap_filter, mipmap_level_bias and the level clamps apply to mipmapped \
                 arrays only",
            );
        }
        Ok(())
    }

    /// The mipmap fields against an array of `levels` levels.
    fn check_mipmaps(&self, levels: u32, floats: bool) -> Result<()> {
        let last = levels.saturating_sub(1) as f32;
        let (min, max) = (
            self.min_mipmap_level_clamp,
            self.max_mipmap_level_clamp.unwrap_or(last),
        );
        if !(min.is_finite() && max.is_finite() && 0.0 <= min && min <= max && max <= last) {
            return invalid(format!(
                "the level clamps {min} to {max} must lie in 0 to {last} (the array's last \
                 level), the lowest first"
            ));
        }
        if !self.mipmap_level_bias.is_finite() || self.mipmap_level_bias.abs() > last.max(1.0) {
            return invalid(format!(
                "mipmap_level_bias {} is outside -{last} to {last}",
                self.mipmap_level_bias
            ));
        }
        if self.mipmap_filter == FilterMode::Linear && !floats {
            return invalid("mipmap_filter Linear returns floats: use read_mode NormalizedFloat");
        }
        Ok(())
    }

    /// The driver's description, for a source of `levels` mipmap levels (1 for others) and
    /// `integer` data.
    pub(super) fn raw(&self, levels: u32, integer: bool) -> CUDA_TEXTURE_DESC {
        let mut flags = 0;
        if integer && self.read_mode == ReadMode::ElementType {
            flags |= CU_TRSF_READ_AS_INTEGER;
        }
        if self.normalized_coordinates {
            flags |= CU_TRSF_NORMALIZED_COORDINATES;
        }
        if self.srgb {
            flags |= CU_TRSF_SRGB;
        }
        if self.disable_trilinear_optimization {
            flags |= CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
        }
        CUDA_TEXTURE_DESC {
            addressMode: self.address_modes.map(address_mode),
            filterMode: filter_mode(self.filter),
            flags,
            maxAnisotropy: self.max_anisotropy,
            mipmapFilterMode: filter_mode(self.mipmap_filter),
            mipmapLevelBias: self.mipmap_level_bias,
            minMipmapLevelClamp: self.min_mipmap_level_clamp,
            maxMipmapLevelClamp: self
                .max_mipmap_level_clamp
                .unwrap_or(levels.saturating_sub(1) as f32),
            borderColor: self.border_color,
            reserved: [0; 12],
        }
    }
}

fn address_mode(mode: AddressMode) -> CUaddress_mode {
    match mode {
        AddressMode::Wrap => CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
        AddressMode::Clamp => CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        AddressMode::Mirror => CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
        AddressMode::Border => CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
    }
}

fn filter_mode(mode: FilterMode) -> CUfilter_mode {
    match mode {
        FilterMode::Point => CUfilter_mode::CU_TR_FILTER_MODE_POINT,
        FilterMode::Linear => CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
    }
}

#[cfg(test)]
mod tests;
