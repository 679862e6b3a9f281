//! The description's checks and spans, without cuFFT.

use super::*;
use crate::fft::elements::{Complex32, Complex64};

fn refused(desc: FftDesc, needle: &str) {
    match desc.geometry() {
        Err(Error::InvalidArgument(message)) => {
            assert!(message.contains(needle), "{desc}: {message}")
        }
        other => panic!("{desc}: expected a refusal naming {needle:?}, got {other:?}"),
    }
}

#[test]
fn dense_descriptions_use_the_basic_layout_and_span_their_data() {
    let c2c = FftDesc::c2c::<Complex32>([4, 6, 8])
        .batch(3)
        .geometry()
        .unwrap();
    assert!(c2c.layouts.is_none());
    assert_eq!((c2c.rank, c2c.n, c2c.batch), (3, [4, 6, 8], 3));
    assert_eq!(c2c.spans, [3 * 192, 3 * 192]);
    let r2c = FftDesc::r2c::<f64>([5, 9]).batch(2).geometry().unwrap();
    assert_eq!(r2c.spans, [2 * 45, 2 * 25]);
    let c2r = FftDesc::c2r::<f32>(16).geometry().unwrap();
    assert_eq!(c2r.spans, [9, 16]);
}

#[test]
fn in_place_real_transforms_pad_the_real_side() {
    let desc = FftDesc::r2c::<f32>([3, 10]).batch(2).in_place();
    let geometry = desc.geometry().unwrap();
    let [real, complex] = geometry.layouts.expect("explicit layouts");
    assert_eq!((real.embed, real.stride, real.dist), ([3, 12, 0], 1, 36));
    assert_eq!((complex.embed, complex.dist), ([3, 6, 0], 18));
    assert_eq!(geometry.spans, [36 + 2 * 12 + 10, 18 + 18]);
    let c2r = FftDesc::c2r::<f64>(7).in_place().geometry().unwrap();
    assert_eq!(c2r.spans, [4, 7]);
    assert!(
        FftDesc::c2c::<Complex64>(7)
            .in_place()
            .geometry()
            .unwrap()
            .layouts
            .is_none()
    );
}

#[test]
fn advanced_layouts_span_their_strides_and_distances() {
    // Interleaved batches: transform b's element j at b + 4 j.
    let desc = FftDesc::c2c::<Complex32>(8)
        .batch(4)
        .input_layout(FftLayout::new(8, 4, 1))
        .output_layout(FftLayout::new(8, 4, 1));
    let geometry = desc.geometry().unwrap();
    assert_eq!(geometry.spans, [3 + 28 + 1, 32]);
    let [input, _] = geometry.layouts.unwrap();
    assert_eq!((input.stride, input.dist), (4, 1));
    // One side given: the other is dense, and both are passed.
    let desc = FftDesc::r2c::<f32>([4, 4]).output_layout(FftLayout::new([4, 5], 1, 20));
    let geometry = desc.geometry().unwrap();
    assert_eq!(geometry.spans, [16, 3 * 5 + 2 + 1]);
    let [input, _] = geometry.layouts.unwrap();
    assert_eq!((input.embed, input.dist), ([4, 4, 0], 16));
    assert_eq!(desc.output_len().unwrap(), 18);
}

#[test]
fn bad_descriptions_are_refused_with_the_reason() {
    refused(FftDesc::c2c::<Complex32>([4, 0]), "at least 1");
    refused(FftDesc::c2c::<Complex32>(4).batch(0), "at least 1");
    refused(
        FftDesc::new(FftKind::C2C, FftPrecision::Half, 12),
        "powers of 2",
    );
    refused(
        FftDesc::c2c::<Complex32>([4, 4]).input_layout(FftLayout::new(16, 1, 16)),
        "embeds 1 dimension(s), the transform has 2",
    );
    refused(
        FftDesc::c2c::<Complex32>([4, 4]).input_layout(FftLayout::new([4, 3], 1, 16)),
        "dimension 1: 3 < 4",
    );
    refused(
        FftDesc::r2c::<f32>(8).output_layout(FftLayout::new(5, 0, 5)),
        "stride and dist",
    );
    refused(
        FftDesc::c2c::<Complex32>(8)
            .in_place()
            .output_layout(FftLayout::new(8, 2, 16)),
        "same memory",
    );
    refused(
        FftDesc::c2c::<Complex32>(usize::MAX / 2).batch(4),
        "overflows",
    );
    refused(
        FftDesc::c2c::<Complex32>(usize::MAX),
        "exceeds cuFFT's sizes",
    );
}

#[test]
fn descriptions_hash_and_print_what_they_describe() {
    use std::collections::HashSet;
    let a = FftDesc::c2c::<Complex32>([2, 3]);
    let b = FftDesc::new(FftKind::C2C, FftPrecision::Single, FftShape::d2(2, 3));
    let c = a.batch(2);
    let set: HashSet<FftDesc> = [a, b, c].into_iter().collect();
    assert_eq!(set.len(), 2);
    assert_eq!(
        FftDesc::r2c::<f64>(8)
            .batch(2)
            .input_layout(FftLayout::new(8, 1, 10))
            .to_string(),
        "R2C f64 8, batch 2, input embed 8 stride 1 dist 10"
    );
    assert_eq!(FftShape::d3(1, 2, 3).dims(), [1, 2, 3]);
    assert_eq!(FftDirection::Inverse.as_raw(), 1);
}
