//! TMA tensor maps (compute capability 9.0 on): [`TensorMap`] encoded by
//! `cuTensorMapEncodeTiled` or `cuTensorMapEncodeIm2col` from a [`Buffer`] (or a
//! [`StridedMemoryView`](crate::dlpack::StridedMemoryView)), every documented rule checked
//! first, passed to kernels by value as a `const __grid_constant__ CUtensorMap` parameter.
//!
//! ```no_run
//! use cuda_safe::{Device, TensorMap, TensorMapDataType, TiledOptions};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! // A 1024 x 768 matrix of floats, rows 4096 bytes apart, read in 64 x 32 tiles.
//! let matrix = device.default_memory_resource()?.allocate(4096 * 768, &stream)?;
//! let map = TensorMap::tiled(
//!     &matrix,
//!     TensorMapDataType::F32,
//!     &[1024, 768], // innermost dimension first
//!     &[4096],      // the byte stride of each dimension but the innermost
//!     &TiledOptions::new(&[64, 32]),
//! )?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```

mod rules;

use std::ffi::c_void;

use rules::Global;
pub use rules::MAX_RANK;

use crate::abi::TENSOR_MAP_ALIGN;
use crate::driver::driver;
use crate::error::{Result, cu};
use crate::launch::{DeviceRepr, KernelArg};
use crate::memory::Buffer;
use cuda_sys::{
    CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
    CUtensorMapL2promotion, CUtensorMapSwizzle,
};

/// An encoded TMA descriptor: 128 opaque bytes, aligned as the driver needs (64 bytes under
/// CUDA 12, the header's 128 under CUDA 13). Pass it to a kernel by value (or as
/// `&TensorMap`) for a `const __grid_constant__ CUtensorMap` parameter. The parameter's type
/// must be 64-byte aligned (`CUtensorMap` is, as is a 128-byte `alignas(64)` struct): the
/// launch cannot check it, because the driver reports offsets within the parameter area and
/// where that area starts in constant memory is the architecture's (on sm_90 a correctly
/// aligned first parameter is at offset 48).
///
/// The map holds the tensor's address: the memory must stay allocated while kernels use it,
/// which `launch`'s safety contract already asks of every address a kernel reaches.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct TensorMap(CUtensorMap);

// SAFETY: `CUtensorMap` is plain data (16 u64) with the header's size and alignment, the C++
// parameter type it is passed as.
unsafe impl DeviceRepr for TensorMap {}

impl KernelArg for &TensorMap {
    type Repr = TensorMap;
    #[inline(always)]
    fn to_repr(&self) -> TensorMap {
        **self
    }
}

impl std::fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMap").finish_non_exhaustive()
    }
}

/// The element type of a tensor map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TensorMapDataType {
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// IEEE half precision.
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// bfloat16.
    Bf16,
    /// `f32`, denormals flushed to zero.
    F32Ftz,
    /// TF32 (stored as 32 bits).
    Tf32,
    /// TF32, denormals flushed to zero.
    Tf32Ftz,
}

impl TensorMapDataType {
    /// The size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Self::U8 => 1,
            Self::U16 | Self::F16 | Self::Bf16 => 2,
            Self::U32 | Self::I32 | Self::F32 | Self::F32Ftz | Self::Tf32 | Self::Tf32Ftz => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
        }
    }

    /// Whether it is a floating-point type (which the NaN out-of-bounds fill needs).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Self::F16
                | Self::F32
                | Self::F64
                | Self::Bf16
                | Self::F32Ftz
                | Self::Tf32
                | Self::Tf32Ftz
        )
    }

    fn raw(self) -> CUtensorMapDataType {
        use CUtensorMapDataType as Raw;
        match self {
            Self::U8 => Raw::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            Self::U16 => Raw::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            Self::U32 => Raw::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            Self::I32 => Raw::CU_TENSOR_MAP_DATA_TYPE_INT32,
            Self::U64 => Raw::CU_TENSOR_MAP_DATA_TYPE_UINT64,
            Self::I64 => Raw::CU_TENSOR_MAP_DATA_TYPE_INT64,
            Self::F16 => Raw::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            Self::F32 => Raw::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            Self::F64 => Raw::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            Self::Bf16 => Raw::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            Self::F32Ftz => Raw::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
            Self::Tf32 => Raw::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
            Self::Tf32Ftz => Raw::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
        }
    }
}

/// An interleaved layout (`NC/8HWC8` is 16 bytes, `NC/16HWC16` 32).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Interleave {
    /// Not interleaved (the default).
    #[default]
    None,
    /// 16-byte interleave.
    B16,
    /// 32-byte interleave (needs the 32-byte swizzle).
    B32,
}

/// The shared-memory bank swizzle of a box.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Swizzle {
    /// None (the default).
    #[default]
    None,
    /// 16-byte chunks within a 32-byte span.
    B32,
    /// 16-byte chunks within a 64-byte span.
    B64,
    /// 16-byte chunks within a 128-byte span.
    B128,
}

impl Swizzle {
    /// The span in bytes a box's inner dimension must fit, if any.
    fn span(self) -> Option<u64> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }
}

/// The L2 fetch granularity of the map's loads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum L2Promotion {
    /// None (the default).
    #[default]
    None,
    /// 64 bytes.
    B64,
    /// 128 bytes.
    B128,
    /// 256 bytes.
    B256,
}

/// What both kinds of map take beside their box.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TensorOptions {
    /// The step along each dimension, innermost first (1 to 8; empty: all 1).
    pub element_strides: Vec<u32>,
    /// The interleaved layout.
    pub interleave: Interleave,
    /// The shared-memory swizzle.
    pub swizzle: Swizzle,
    /// The L2 promotion.
    pub l2_promotion: L2Promotion,
    /// Fill out-of-bounds elements with a NaN that FMA treats as zero, instead of zeros
    /// (floating-point types only).
    pub oob_fill_nan: bool,
}

crate::setters::setters! {
    impl TensorOptions {
        element_strides: items u32,
        interleave: value Interleave,
        swizzle: value Swizzle,
        l2_promotion: value L2Promotion,
        oob_fill_nan: value bool,
    }
}

/// A tiled map's box and options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TiledOptions {
    /// The box: elements along each dimension, innermost first (1 to 256 each).
    pub box_dims: Vec<u32>,
    /// The rest.
    pub common: TensorOptions,
}

crate::setters::setters! {
    impl TiledOptions {
        box_dims: items u32,
        common: value TensorOptions,
    }
}

impl TiledOptions {
    /// A box of `box_dims` (innermost first), every other option at its default.
    pub fn new(box_dims: &[u32]) -> Self {
        Self {
            box_dims: box_dims.to_vec(),
            common: TensorOptions::default(),
        }
    }
}

/// An im2col map's pixel box and options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Im2colOptions {
    /// The box's lower corner offsets `{D, H, W}` (rank - 2 of them, innermost spatial first).
    pub lower_corner: Vec<i32>,
    /// The box's upper corner offsets.
    pub upper_corner: Vec<i32>,
    /// Elements read along C per pixel (1 to 256).
    pub channels_per_pixel: u32,
    /// Pixels read along N, D, H, W per column (1 to 1024).
    pub pixels_per_column: u32,
    /// The rest.
    pub common: TensorOptions,
}

crate::setters::setters! {
    impl Im2colOptions {
        lower_corner: items i32,
        upper_corner: items i32,
        channels_per_pixel: value u32,
        pixels_per_column: value u32,
        common: value TensorOptions,
    }
}

impl TensorMap {
    /// A tiled map of the tensor at the start of `buffer`: `dims` elements along each
    /// dimension and `strides` bytes between the starts of consecutive rows of each dimension
    /// but the innermost, innermost first, read in `options.box_dims` boxes.
    ///
    #[doc = cuda_sys::api_doc!(cuTensorMapEncodeTiled)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the rule broken (rank,
    /// alignment, dimension, stride multiple of 16, layout, extent past the buffer's end, box
    /// limits, box inner bytes multiple of 16, swizzle span, element strides, out-of-bounds
    /// fill); the driver's error
    /// (a GPU before compute capability 9.0 has no TMA).
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn tiled(
        buffer: &Buffer,
        dtype: TensorMapDataType,
        dims: &[u64],
        strides: &[u64],
        options: &TiledOptions,
    ) -> Result<Self> {
        let global = Global {
            dtype,
            address: buffer.as_raw(),
            dims,
            strides,
        };
        rules::check_tiled(&global, options, Some(buffer.len() as u64))?;
        encode_tiled(&global, options)
    }

    /// An im2col map of the tensor at the start of `buffer` (`dims` and `strides` as for
    /// [`tiled`](Self::tiled); dimension 0 is C, then W, H, D, N).
    ///
    #[doc = cuda_sys::api_doc!(cuTensorMapEncodeIm2col)]
    /// # Errors
    ///
    /// As [`tiled`](Self::tiled), with the im2col rules: rank 3 to 5, corner offsets in the
    /// rank's range, channels per pixel and pixels per column within their limits.
    #[doc(alias = "cuTensorMapEncodeIm2col")]
    pub fn im2col(
        buffer: &Buffer,
        dtype: TensorMapDataType,
        dims: &[u64],
        strides: &[u64],
        options: &Im2colOptions,
    ) -> Result<Self> {
        let global = Global {
            dtype,
            address: buffer.as_raw(),
            dims,
            strides,
        };
        rules::check_im2col(&global, options, Some(buffer.len() as u64))?;
        encode_im2col(&global, options)
    }

    /// A tiled map of the tensor at `address`, whose memory the caller vouches for.
    ///
    #[doc = cuda_sys::api_doc!(cuTensorMapEncodeTiled)]
    /// # Errors
    ///
    /// As [`tiled`](Self::tiled), less the extent check.
    ///
    /// # Safety
    ///
    /// `address` must start device memory that holds the whole tensor `dims` and `strides`
    /// describe, for as long as kernels use the map.
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub unsafe fn tiled_at(
        address: u64,
        dtype: TensorMapDataType,
        dims: &[u64],
        strides: &[u64],
        options: &TiledOptions,
    ) -> Result<Self> {
        let global = Global {
            dtype,
            address,
            dims,
            strides,
        };
        rules::check_tiled(&global, options, None)?;
        encode_tiled(&global, options)
    }

    /// The raw descriptor.
    pub fn as_raw(&self) -> &CUtensorMap {
        &self.0
    }
}

/// Every option as the driver takes it.
fn raw_options(
    options: &TensorOptions,
) -> (
    [u32; MAX_RANK],
    CUtensorMapInterleave,
    CUtensorMapSwizzle,
    CUtensorMapL2promotion,
    CUtensorMapFloatOOBfill,
) {
    let mut element_strides = [1u32; MAX_RANK];
    for (slot, &stride) in element_strides.iter_mut().zip(&options.element_strides) {
        *slot = stride;
    }
    let interleave = match options.interleave {
        Interleave::None => CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
        Interleave::B16 => CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_16B,
        Interleave::B32 => CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_32B,
    };
    let swizzle = match options.swizzle {
        Swizzle::None => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        Swizzle::B32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        Swizzle::B64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        Swizzle::B128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
    };
    let l2 = match options.l2_promotion {
        L2Promotion::None => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        L2Promotion::B64 => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        L2Promotion::B128 => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        L2Promotion::B256 => CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    };
    let fill = if options.oob_fill_nan {
        CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    } else {
        CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    };
    (element_strides, interleave, swizzle, l2, fill)
}

/// A zeroed map, aligned as the type requires.
fn blank() -> TensorMap {
    const { assert!(align_of::<CUtensorMap>() == TENSOR_MAP_ALIGN) };
    TensorMap(CUtensorMap { opaque: [0; 16] })
}

/// Encodes a checked tiled map.
fn encode_tiled(global: &Global<'_>, options: &TiledOptions) -> Result<TensorMap> {
    let driver = driver()?;
    let rank = global.dims.len();
    let (element_strides, interleave, swizzle, l2, fill) = raw_options(&options.common);
    let mut map = blank();
    // SAFETY: `map` is a valid, aligned CUtensorMap to write; the arrays hold `rank` (strides
    // `rank - 1`) entries, checked by `check_tiled`; the address is only encoded.
    unsafe {
        cu!(
            driver,
            cuTensorMapEncodeTiled(
                &mut map.0,
                global.dtype.raw(),
                rank as u32,
                global.address as usize as *mut c_void,
                global.dims.as_ptr(),
                global.strides.as_ptr(),
                options.box_dims.as_ptr(),
                element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                fill,
            )
        )
    }?;
    Ok(map)
}

/// Encodes a checked im2col map.
fn encode_im2col(global: &Global<'_>, options: &Im2colOptions) -> Result<TensorMap> {
    let driver = driver()?;
    let rank = global.dims.len();
    let (element_strides, interleave, swizzle, l2, fill) = raw_options(&options.common);
    let mut map = blank();
    // SAFETY: as in `encode_tiled`; the corners hold `rank - 2` offsets (checked).
    unsafe {
        cu!(
            driver,
            cuTensorMapEncodeIm2col(
                &mut map.0,
                global.dtype.raw(),
                rank as u32,
                global.address as usize as *mut c_void,
                global.dims.as_ptr(),
                global.strides.as_ptr(),
                options.lower_corner.as_ptr(),
                options.upper_corner.as_ptr(),
                options.channels_per_pixel,
                options.pixels_per_column,
                element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                fill,
            )
        )
    }?;
    Ok(map)
}
