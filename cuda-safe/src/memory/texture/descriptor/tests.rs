//! Every rule of a texture descriptor, against each kind of source.

use super::*;
use crate::memory::texture::limits::sm90_limits;

fn array(width: usize, height: usize, depth: usize, format: ArrayFormat) -> Source {
    Source::Array {
        descriptor: ArrayDescriptor {
            width,
            height,
            depth,
            format,
            channels: 1,
        },
        flags: ArrayFlags::empty(),
    }
}

fn refused(descriptor: &TextureDescriptor, source: &Source, words: &str) {
    let error = descriptor.check(source, &sm90_limits()).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains(words), "{words:?} in {error}");
}

#[test]
fn the_default_samples_any_array() {
    let plain = TextureDescriptor::default();
    for format in [ArrayFormat::U8, ArrayFormat::I32, ArrayFormat::F32] {
        assert!(
            plain
                .check(&array(64, 64, 0, format), &sm90_limits())
                .is_ok()
        );
    }
    assert!(
        plain
            .check(&array(64, 0, 0, ArrayFormat::F32), &sm90_limits())
            .is_ok()
    );
    assert!(
        plain
            .check(&array(64, 8, 8, ArrayFormat::F32), &sm90_limits())
            .is_ok()
    );
}

#[test]
fn extents_are_held_against_each_kind_of_limit() {
    let plain = TextureDescriptor::default();
    refused(
        &plain,
        &array(131073, 0, 0, ArrayFormat::F32),
        "a 1-D texture: a width of 131073",
    );
    refused(
        &plain,
        &array(64, 65537, 0, ArrayFormat::F32),
        "a 2-D texture: a height of 65537",
    );
    refused(
        &plain,
        &array(64, 64, 16385, ArrayFormat::F32),
        "a 3-D texture: a depth of 16385",
    );
    let gather = Source::Array {
        descriptor: ArrayDescriptor {
            width: 40000,
            height: 4,
            depth: 0,
            format: ArrayFormat::U8,
            channels: 4,
        },
        flags: ArrayFlags::TEXTURE_GATHER,
    };
    refused(&plain, &gather, "a 2-D gather texture: a width of 40000");
    let mipmapped = Source::Mipmapped {
        descriptor: ArrayDescriptor {
            width: 40000,
            height: 4,
            depth: 0,
            format: ArrayFormat::F32,
            channels: 1,
        },
        levels: 2,
    };
    refused(
        &plain,
        &mipmapped,
        "a 2-D mipmapped texture: a width of 40000",
    );
}

#[test]
fn linear_memory_is_fetched_at_offsets_only() {
    let linear = |ptr: u64, bytes: usize| Source::Linear {
        ptr,
        bytes,
        format: ArrayFormat::F32,
        channels: 2,
    };
    let plain = TextureDescriptor::default();
    assert!(
        plain
            .check(&linear(0x1000, 8 * 100), &sm90_limits())
            .is_ok()
    );
    refused(
        &plain,
        &linear(0x1000, 12),
        "whole, non-zero number of 8-byte",
    );
    refused(
        &plain,
        &linear(0x1100 + 8, 8),
        "not a multiple of the device's 512",
    );
    refused(
        &plain,
        &linear(0x1000, 8 * 268435457),
        "a linear texture: a width of 268435457",
    );
    for (descriptor, field) in [
        (
            TextureDescriptor {
                filter: FilterMode::Linear,
                ..plain
            },
            "filter",
        ),
        (
            TextureDescriptor {
                normalized_coordinates: true,
                ..plain
            },
            "normalized_coordinates",
        ),
        (
            TextureDescriptor {
                address_modes: [AddressMode::Border; 3],
                ..plain
            },
            "address_modes",
        ),
        (
            TextureDescriptor {
                read_mode: ReadMode::NormalizedFloat,
                ..plain
            },
            "read_mode",
        ),
        (
            TextureDescriptor {
                mipmap_level_bias: 1.0,
                ..plain
            },
            "mipmapped arrays only",
        ),
    ] {
        refused(&descriptor, &linear(0x1000, 64), field);
    }
}

#[test]
fn pitched_memory_is_checked_for_pitch_and_alignment() {
    let pitched = |ptr: u64, width: usize, pitch: usize| Source::Pitch2d {
        ptr,
        width,
        height: 16,
        pitch,
        format: ArrayFormat::F32,
        channels: 1,
    };
    let plain = TextureDescriptor::default();
    assert!(
        plain
            .check(&pitched(0x2000, 100, 512), &sm90_limits())
            .is_ok()
    );
    refused(
        &plain,
        &pitched(0x2000, 200, 512),
        "does not fit a 512-byte pitch",
    );
    refused(&plain, &pitched(0x2000, 100, 520), "pitch 0x208");
    refused(&plain, &pitched(0x2010, 100, 512), "address 0x2010");
    refused(
        &plain,
        &pitched(0x2000, 100, 2097152),
        "a pitch of 2097152 bytes is past",
    );
}

#[test]
fn sampling_rules_follow_the_format() {
    let u8_image = array(64, 64, 0, ArrayFormat::U8);
    let float_image = array(64, 64, 0, ArrayFormat::F32);
    let int_image = array(64, 64, 0, ArrayFormat::I32);
    let linear = TextureDescriptor {
        filter: FilterMode::Linear,
        ..Default::default()
    };
    assert!(linear.check(&float_image, &sm90_limits()).is_ok());
    refused(&linear, &u8_image, "needs read_mode NormalizedFloat");
    let normalized = TextureDescriptor {
        read_mode: ReadMode::NormalizedFloat,
        ..linear
    };
    assert!(normalized.check(&u8_image, &sm90_limits()).is_ok());
    refused(
        &normalized,
        &int_image,
        "converts 8- and 16-bit integers, not I32",
    );
    refused(&normalized, &float_image, "not F32");
    let srgb = TextureDescriptor {
        srgb: true,
        ..normalized
    };
    assert!(srgb.check(&u8_image, &sm90_limits()).is_ok());
    refused(
        &TextureDescriptor {
            srgb: true,
            ..Default::default()
        },
        &u8_image,
        "srgb needs U8 data read as NormalizedFloat",
    );
    let wrap = TextureDescriptor {
        address_modes: [AddressMode::Wrap; 3],
        ..Default::default()
    };
    refused(
        &wrap,
        &float_image,
        "address_modes[0] = Wrap needs normalized_coordinates",
    );
    let mirror_on_z = TextureDescriptor {
        address_modes: [AddressMode::Clamp, AddressMode::Clamp, AddressMode::Mirror],
        ..Default::default()
    };
    assert!(
        mirror_on_z.check(&float_image, &sm90_limits()).is_ok(),
        "a 2-D texture has no z axis"
    );
    let border = TextureDescriptor {
        address_modes: [AddressMode::Border; 3],
        border_color: [f32::NAN, 0.0, 0.0, 1.0],
        ..Default::default()
    };
    refused(&border, &float_image, "border_color holds NaN");
    let anisotropic = TextureDescriptor {
        max_anisotropy: 17,
        ..Default::default()
    };
    refused(&anisotropic, &float_image, "max_anisotropy 17 is past 16");
}

#[test]
fn mipmap_fields_are_checked_against_the_levels() {
    let mipmapped = Source::Mipmapped {
        descriptor: ArrayDescriptor {
            width: 256,
            height: 256,
            depth: 0,
            format: ArrayFormat::F32,
            channels: 1,
        },
        levels: 9,
    };
    let trilinear = TextureDescriptor {
        filter: FilterMode::Linear,
        mipmap_filter: FilterMode::Linear,
        normalized_coordinates: true,
        min_mipmap_level_clamp: 1.0,
        max_mipmap_level_clamp: Some(8.0),
        mipmap_level_bias: -0.5,
        ..Default::default()
    };
    assert!(trilinear.check(&mipmapped, &sm90_limits()).is_ok());
    let raw = trilinear.raw(9, false);
    assert_eq!(raw.flags, CU_TRSF_NORMALIZED_COORDINATES);
    assert_eq!(
        (raw.minMipmapLevelClamp, raw.maxMipmapLevelClamp),
        (1.0, 8.0)
    );
    let unclamped = TextureDescriptor::default().raw(9, true);
    assert_eq!(unclamped.maxMipmapLevelClamp, 8.0, "None is the last level");
    assert_eq!(unclamped.flags, CU_TRSF_READ_AS_INTEGER);
    refused(
        &TextureDescriptor {
            max_mipmap_level_clamp: Some(9.0),
            ..trilinear
        },
        &mipmapped,
        "must lie in 0 to 8",
    );
    refused(
        &TextureDescriptor {
            min_mipmap_level_clamp: 5.0,
            max_mipmap_level_clamp: Some(4.0),
            ..trilinear
        },
        &mipmapped,
        "the lowest first",
    );
    refused(
        &TextureDescriptor {
            mipmap_level_bias: 20.0,
            ..trilinear
        },
        &mipmapped,
        "mipmap_level_bias 20 is outside",
    );
    refused(
        &TextureDescriptor {
            mipmap_filter: FilterMode::Linear,
            ..Default::default()
        },
        &array(64, 64, 0, ArrayFormat::F32),
        "mipmapped arrays only",
    );
}

#[test]
fn the_drivers_description_carries_every_field() {
    let descriptor = TextureDescriptor {
        address_modes: [AddressMode::Wrap, AddressMode::Mirror, AddressMode::Border],
        filter: FilterMode::Linear,
        read_mode: ReadMode::NormalizedFloat,
        normalized_coordinates: true,
        srgb: true,
        border_color: [0.25, 0.5, 0.75, 1.0],
        max_anisotropy: 8,
        disable_trilinear_optimization: true,
        ..Default::default()
    };
    let raw = descriptor.raw(1, true);
    assert_eq!(
        raw.addressMode,
        [
            CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
            CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER
        ]
    );
    assert_eq!(raw.filterMode, CUfilter_mode::CU_TR_FILTER_MODE_LINEAR);
    assert_eq!(
        raw.flags,
        CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION,
        "normalized floats are not read as integers"
    );
    assert_eq!(raw.maxAnisotropy, 8);
    assert_eq!(raw.borderColor, [0.25, 0.5, 0.75, 1.0]);
    assert_eq!(raw.maxMipmapLevelClamp, 0.0);
}
