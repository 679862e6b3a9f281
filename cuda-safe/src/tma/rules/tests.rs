//! One refusal per rule, and the shapes that pass.

use super::*;
use crate::tma::{L2Promotion, TensorMapDataType as T};

/// A 1000 x 777 float matrix, rows 4096 bytes apart, at a 256-byte aligned address.
const DIMS: [u64; 2] = [1000, 777];
const STRIDES: [u64; 1] = [4096];
const BYTES: u64 = 4096 * 777;

fn global<'a>(dims: &'a [u64], strides: &'a [u64]) -> Global<'a> {
    Global {
        dtype: T::F32,
        address: 0x7f00_0000_0100,
        dims,
        strides,
    }
}

fn tiled(box_dims: &[u32]) -> TiledOptions {
    TiledOptions::new(box_dims)
}

/// The rule a refusal names.
fn rule(result: Result<()>) -> String {
    match result {
        Err(Error::InvalidArgument(message)) => message.into_owned(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn valid_tiled_shapes_pass() {
    let base = global(&DIMS, &STRIDES);
    check_tiled(&base, &tiled(&[64, 32]), Some(BYTES)).unwrap();
    // The last element ends 776 rows and 4000 bytes in: exactly that much memory suffices.
    check_tiled(&base, &tiled(&[64, 32]), Some(776 * 4096 + 4000)).unwrap();
    check_tiled(&base, &tiled(&[4, 256]), Some(BYTES)).unwrap();
    let swizzled = TiledOptions {
        common: TensorOptions {
            swizzle: Swizzle::B128,
            l2_promotion: L2Promotion::B256,
            oob_fill_nan: true,
            element_strides: vec![1, 2],
            ..Default::default()
        },
        ..tiled(&[32, 64])
    };
    check_tiled(&base, &swizzled, Some(BYTES)).unwrap();
    let dims = [16u64, 8, 4, 2, 2];
    let strides = [64u64, 512, 2048, 4096];
    check_tiled(&global(&dims, &strides), &tiled(&[16, 8, 4, 2, 2]), None).unwrap();
    check_tiled(&global(&[1024], &[]), &tiled(&[256]), Some(4096)).unwrap();
}

#[test]
fn each_tiled_rule_has_its_refusal() {
    let base = global(&DIMS, &STRIDES);
    let cases: Vec<(Global<'_>, TiledOptions, Option<u64>, &str)> = vec![
        (global(&[], &[]), tiled(&[]), None, "rank"),
        (
            global(&[2; 6], &[16, 32, 64, 128, 256]),
            tiled(&[1; 6]),
            None,
            "rank",
        ),
        (
            Global {
                address: 0x7f00_0000_0108,
                ..base
            },
            tiled(&[64, 32]),
            None,
            "alignment",
        ),
        (
            global(&[0, 777], &STRIDES),
            tiled(&[64, 32]),
            None,
            "dimension",
        ),
        (
            global(&[1000, (1 << 31) + 1], &STRIDES),
            tiled(&[64, 32]),
            None,
            "dimension",
        ),
        (global(&DIMS, &[]), tiled(&[64, 32]), None, "strides"),
        (
            global(&DIMS, &[4008]),
            tiled(&[64, 32]),
            None,
            "stride multiple of 16",
        ),
        (global(&DIMS, &[1 << 40]), tiled(&[64, 32]), None, "stride"),
        (global(&DIMS, &[3984]), tiled(&[64, 32]), None, "layout"),
        (base, tiled(&[64, 32]), Some(776 * 4096 + 3999), "extent"),
        (base, tiled(&[64]), None, "box"),
        (base, tiled(&[64, 0]), None, "box limits"),
        (base, tiled(&[64, 257]), None, "box limits"),
        (
            base,
            tiled(&[6, 32]),
            None,
            "box inner bytes multiple of 16",
        ),
        (
            base,
            TiledOptions {
                common: TensorOptions {
                    swizzle: Swizzle::B64,
                    ..Default::default()
                },
                ..tiled(&[32, 32])
            },
            None,
            "swizzle span",
        ),
        (
            base,
            TiledOptions {
                common: TensorOptions {
                    element_strides: vec![1, 9],
                    ..Default::default()
                },
                ..tiled(&[64, 32])
            },
            None,
            "element strides",
        ),
        (
            base,
            TiledOptions {
                common: TensorOptions {
                    element_strides: vec![1],
                    ..Default::default()
                },
                ..tiled(&[64, 32])
            },
            None,
            "element strides",
        ),
        (
            base,
            TiledOptions {
                common: TensorOptions {
                    interleave: Interleave::B16,
                    ..Default::default()
                },
                ..tiled(&[64, 32])
            },
            None,
            "rank",
        ),
        (
            Global {
                dtype: T::U32,
                ..base
            },
            TiledOptions {
                common: TensorOptions {
                    oob_fill_nan: true,
                    ..Default::default()
                },
                ..tiled(&[64, 32])
            },
            None,
            "out-of-bounds fill",
        ),
    ];
    for (global, options, available, expected) in cases {
        let message = rule(check_tiled(&global, &options, available));
        assert!(
            message.starts_with(&format!("invalid argument: tensor map: {expected}:"))
                || message.starts_with(&format!("tensor map: {expected}:")),
            "expected rule `{expected}`, got: {message}"
        );
    }
}

#[test]
fn interleaved_layouts_follow_their_rules() {
    let dims = [64u64, 16, 16];
    let strides = [256u64, 4096];
    let b32 = |swizzle| TiledOptions {
        common: TensorOptions {
            interleave: Interleave::B32,
            swizzle,
            ..Default::default()
        },
        ..tiled(&[64, 16, 16])
    };
    check_tiled(&global(&dims, &strides), &b32(Swizzle::B32), None).unwrap();
    let message = rule(check_tiled(
        &global(&dims, &strides),
        &b32(Swizzle::None),
        None,
    ));
    assert!(message.contains("swizzle"), "{message}");
    let message = rule(check_tiled(
        &global(&dims, &[272, 4352]),
        &b32(Swizzle::B32),
        None,
    ));
    assert!(message.contains("multiple of 32"), "{message}");
    let message = rule(check_tiled(
        &Global {
            address: 0x7f00_0000_0110,
            ..global(&dims, &strides)
        },
        &b32(Swizzle::B32),
        None,
    ));
    assert!(message.contains("32-byte aligned"), "{message}");
}

fn im2col(rank: usize) -> Im2colOptions {
    Im2colOptions {
        lower_corner: vec![-1; rank - 2],
        upper_corner: vec![1; rank - 2],
        channels_per_pixel: 32,
        pixels_per_column: 64,
        common: TensorOptions::default(),
    }
}

#[test]
fn im2col_rules_have_their_refusals() {
    // NHWC: C = 32 floats, W = 16, H = 16, N = 4.
    let dims = [32u64, 16, 16, 4];
    let strides = [128u64, 2048, 32_768];
    let nhwc = global(&dims, &strides);
    check_im2col(&nhwc, &im2col(4), Some(4 * 32_768)).unwrap();
    let cases: Vec<(Global<'_>, Im2colOptions, &str)> = vec![
        (global(&DIMS, &STRIDES), im2col(3), "rank"),
        (nhwc, im2col(3), "pixel box corners"),
        (
            nhwc,
            Im2colOptions {
                lower_corner: vec![-129, 0],
                ..im2col(4)
            },
            "pixel box corners",
        ),
        (
            nhwc,
            Im2colOptions {
                channels_per_pixel: 0,
                ..im2col(4)
            },
            "box limits",
        ),
        (
            nhwc,
            Im2colOptions {
                channels_per_pixel: 257,
                ..im2col(4)
            },
            "box limits",
        ),
        (
            nhwc,
            Im2colOptions {
                pixels_per_column: 1025,
                ..im2col(4)
            },
            "box limits",
        ),
        (
            nhwc,
            Im2colOptions {
                channels_per_pixel: 3,
                ..im2col(4)
            },
            "box inner bytes multiple of 16",
        ),
    ];
    for (global, options, expected) in cases {
        let message = rule(check_im2col(&global, &options, None));
        assert!(
            message.contains(&format!("tensor map: {expected}:")),
            "expected `{expected}`: {message}"
        );
    }
    assert_eq!(corner_range(3), (-32_768, 32_767));
    assert_eq!(corner_range(5), (-16, 15));
}
