//! TMA tensor maps on a GPU (sm_90): valid descriptors of every kind encode, invalid ones are
//! refused by the rule they break before the driver sees them, the tile copy of
//! `cuda-safe/examples/tma/copy.cu` is correct on random data (from a buffer and from a
//! view).

#[path = "../../cuda-safe/examples/tma/common.rs"]
mod common;

use common::Matrix;
use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::dlpack::{DLDataType, Layout, StridedMemoryView};
use cuda_safe::{
    Buffer, Device, Error, Im2colOptions, Interleave, L2Promotion, Stream, Swizzle, TensorMap,
    TensorMapDataType as T, TensorOptions, TiledOptions,
};

fn setup() -> (Device, Stream) {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    (device, stream)
}

fn buffer(device: &Device, stream: &Stream, bytes: usize) -> Buffer {
    device
        .default_memory_resource()
        .unwrap()
        .allocate(bytes, stream)
        .unwrap()
}

fn options(box_dims: &[u32], common: TensorOptions) -> TiledOptions {
    TiledOptions::default()
        .box_dims(box_dims.to_vec())
        .common(common)
}

fn valid_descriptors_encode() {
    let (device, stream) = setup();
    let memory = buffer(&device, &stream, 64 << 20);
    let tiled = |dtype, dims: &[u64], strides: &[u64], options: &TiledOptions| {
        TensorMap::tiled(&memory, dtype, dims, strides, options)
            .unwrap_or_else(|error| panic!("{dtype:?} {dims:?} {strides:?} {options:?}: {error}"))
    };
    tiled(T::F32, &[1 << 20], &[], &TiledOptions::new(&[256]));
    tiled(T::F32, &[1000, 777], &[4096], &TiledOptions::new(&[64, 32]));
    tiled(T::U8, &[4096, 256], &[4096], &TiledOptions::new(&[128, 16]));
    tiled(
        T::F16,
        &[64, 64, 64],
        &[128, 8192],
        &TiledOptions::new(&[64, 8, 4]),
    );
    tiled(
        T::Bf16,
        &[32, 8, 8, 8],
        &[64, 512, 4096],
        &TiledOptions::new(&[32, 8, 8, 2]),
    );
    tiled(
        T::F64,
        &[16, 4, 4, 4, 4],
        &[128, 512, 2048, 8192],
        &TiledOptions::new(&[16, 4, 4, 4, 4]),
    );
    for (swizzle, inner) in [(Swizzle::B32, 8), (Swizzle::B64, 16), (Swizzle::B128, 32)] {
        let swizzled = options(
            &[inner, 32],
            TensorOptions::default()
                .swizzle(swizzle)
                .l2_promotion(L2Promotion::B128)
                .oob_fill_nan(true),
        );
        tiled(T::F32, &[1000, 777], &[4096], &swizzled);
    }
    let strided = options(
        &[64, 32],
        TensorOptions::default()
            .element_strides(vec![1, 2])
            .l2_promotion(L2Promotion::B256),
    );
    tiled(T::F32, &[1000, 777], &[4096], &strided);
    // NC/8HWC8 and NC/16HWC16 of half floats: 16 and 32 bytes of channels innermost.
    let interleaved = |interleave, swizzle, channels| {
        options(
            &[channels, 16, 16],
            TensorOptions::default()
                .interleave(interleave)
                .swizzle(swizzle),
        )
    };
    let b16 = interleaved(Interleave::B16, Swizzle::None, 8);
    tiled(T::F16, &[8, 64, 64], &[16, 1024], &b16);
    let b32 = interleaved(Interleave::B32, Swizzle::B32, 16);
    tiled(T::F16, &[16, 64, 64], &[32, 2048], &b32);
    // im2col of an NHWC tensor: C = 32 floats, W = H = 16, N = 4.
    let im2col = Im2colOptions::default()
        .lower_corner(vec![-1, -1])
        .upper_corner(vec![-1, -1])
        .channels_per_pixel(32)
        .pixels_per_column(64)
        .common(TensorOptions::default());
    TensorMap::im2col(
        &memory,
        T::F32,
        &[32, 16, 16, 4],
        &[128, 2048, 32_768],
        &im2col,
    )
    .unwrap();
}

/// The rule a refusal names (the text after `tensor map: `, up to the colon).
fn rule_of(error: Error) -> String {
    let text = error.to_string();
    assert!(matches!(error, Error::InvalidArgument(_)), "{text}");
    let rest = text
        .split("tensor map: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    rest.split(':').next().unwrap().to_owned()
}

fn invalid_descriptors_are_refused_by_rule() {
    let (device, stream) = setup();
    let memory = buffer(&device, &stream, 4096 * 777);
    let map = |dims: &[u64], strides: &[u64], options: &TiledOptions| {
        TensorMap::tiled(&memory, T::F32, dims, strides, options).unwrap_err()
    };
    let tile = TiledOptions::new(&[64, 32]);
    let cases = [
        (map(&[], &[], &TiledOptions::new(&[])), "rank"),
        (
            map(
                &[2; 6],
                &[16, 32, 64, 128, 256],
                &TiledOptions::new(&[1; 6]),
            ),
            "rank",
        ),
        (map(&[0, 777], &[4096], &tile), "dimension"),
        (map(&[1000, 777], &[4008], &tile), "stride multiple of 16"),
        (map(&[1000, 777], &[3984], &tile), "layout"),
        (map(&[1000, 778], &[4096], &tile), "extent"),
        (
            map(&[1000, 777], &[4096], &TiledOptions::new(&[64, 257])),
            "box limits",
        ),
        (
            map(&[1000, 777], &[4096], &TiledOptions::new(&[6, 32])),
            "box inner bytes multiple of 16",
        ),
        (
            map(
                &[1000, 777],
                &[4096],
                &options(&[64, 32], TensorOptions::default().swizzle(Swizzle::B128)),
            ),
            "swizzle span",
        ),
        (
            map(
                &[1000, 777],
                &[4096],
                &options(
                    &[64, 32],
                    TensorOptions::default().element_strides(vec![1, 9]),
                ),
            ),
            "element strides",
        ),
    ];
    for (error, rule) in cases {
        assert_eq!(rule_of(error), rule);
    }
    // SAFETY: refused before anything is encoded: the address is not 16-byte aligned.
    let misaligned =
        unsafe { TensorMap::tiled_at(memory.as_raw() + 4, T::F32, &[1000, 777], &[4096], &tile) };
    assert_eq!(rule_of(misaligned.unwrap_err()), "alignment");
    let integer_nan = TensorMap::tiled(
        &memory,
        T::U32,
        &[1000, 777],
        &[4096],
        &options(&[64, 32], TensorOptions::default().oob_fill_nan(true)),
    );
    assert_eq!(rule_of(integer_nan.unwrap_err()), "out-of-bounds fill");
    let corners = Im2colOptions::default()
        .lower_corner(vec![-200, 0])
        .upper_corner(vec![0, 0])
        .channels_per_pixel(32)
        .pixels_per_column(64)
        .common(TensorOptions::default());
    let im2col = TensorMap::im2col(
        &memory,
        T::F32,
        &[32, 16, 16, 4],
        &[128, 2048, 32_768],
        &corners,
    );
    assert_eq!(rule_of(im2col.unwrap_err()), "pixel box corners");
}

/// Random words (as floats' bits).
fn random(words: usize, mut seed: u64) -> Vec<u32> {
    (0..words)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u32
        })
        .collect()
}

const SENTINEL: u32 = 0xDEAD_BEEF;

/// Checks that `copied` holds `source` inside the matrix and the sentinel in the row padding.
fn check_copy(matrix: &Matrix, source: &[u32], copied: &[u32]) {
    let row = (matrix.pitch / 4) as usize;
    for y in 0..matrix.height as usize {
        for x in 0..row {
            let at = y * row + x;
            let expected = if x < matrix.width as usize {
                source[at]
            } else {
                SENTINEL
            };
            assert_eq!(copied[at], expected, "element ({x}, {y})");
        }
    }
}

fn tma_copy_is_correct_on_random_data() {
    let (device, stream) = setup();
    // Edge tiles on both axes: 1000 = 15 x 64 + 40, 777 = 24 x 32 + 9.
    let matrix = Matrix {
        width: 1000,
        height: 777,
        pitch: 4096,
    };
    let config = matrix.config();
    assert_eq!(
        (config.grid.x, config.grid.y),
        (
            1000u32.div_ceil(common::BOX_W),
            777u32.div_ceil(common::BOX_H)
        )
    );
    let pool = device.default_memory_resource().unwrap();
    let kernel = common::kernel(&device).unwrap();
    for seed in [1u64, 2, 3] {
        let source = random(matrix.bytes() / 4, seed);
        let src = pool.allocate_from_host(&source, &stream).unwrap();
        let sentinels = vec![SENTINEL; source.len()];
        let dst = pool.allocate_from_host(&sentinels, &stream).unwrap();
        let mut reference = pool.allocate_from_host(&sentinels, &stream).unwrap();
        let (src_map, dst_map) = (matrix.map(&src).unwrap(), matrix.map(&dst).unwrap());
        // SAFETY: the maps describe `src` and `dst`, alive until `to_vec` synchronises.
        unsafe { common::copy(&stream, &kernel, &matrix, &src_map, &dst_map) }.unwrap();
        common::memcpy_2d(&stream, &matrix, &src, &mut reference).unwrap();
        let copied = dst.to_vec::<u32>().unwrap();
        check_copy(&matrix, &source, &copied);
        assert_eq!(
            copied,
            reference.to_vec::<u32>().unwrap(),
            "TMA and cuMemcpy2DAsync differ"
        );
    }
}

fn a_views_map_copies_the_same() {
    let (device, stream) = setup();
    let matrix = Matrix {
        width: 1000,
        height: 777,
        pitch: 4096,
    };
    let pool = device.default_memory_resource().unwrap();
    let source = random(matrix.bytes() / 4, 7);
    let src = pool.allocate_from_host(&source, &stream).unwrap();
    let dst = pool
        .allocate_from_host(&vec![SENTINEL; source.len()], &stream)
        .unwrap();
    // The whole padded buffer as a 777 x 1024 view, then its first 1000 columns.
    let view = StridedMemoryView::from_buffer(src, &[777, 1024], Layout::C, DLDataType::F32)
        .unwrap()
        .slice(1, 0..1000)
        .unwrap();
    let src_map = view
        .tensor_map(&[common::BOX_H, common::BOX_W], &TiledOptions::default())
        .unwrap();
    let dst_map = matrix.map(&dst).unwrap();
    let kernel = common::kernel(&device).unwrap();
    // SAFETY: the view keeps the source buffer alive, `dst` lives until `to_vec`.
    unsafe { common::copy(&stream, &kernel, &matrix, &src_map, &dst_map) }.unwrap();
    check_copy(&matrix, &source, &dst.to_vec::<u32>().unwrap());
    // A transposed view has no contiguous innermost dimension: refused, not encoded.
    let error = view
        .transpose(0, 1)
        .unwrap()
        .tensor_map(&[64, 32], &TiledOptions::default());
    assert!(error.unwrap_err().to_string().contains("contiguous"));
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    valid_descriptors_encode,
    invalid_descriptors_are_refused_by_rule,
    tma_copy_is_correct_on_random_data,
    a_views_map_copies_the_same,
];
