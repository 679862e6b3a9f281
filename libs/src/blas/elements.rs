//! The element types cuBLAS and cuBLASLt compute on, as `cudaDataType`s, and what each GEMM
//! and vector operation takes for them: the compute type and the scalars' type.
//!
//! FP8 has no Rust type: [`F8E4M3`] and [`F8E5M2`] are this crate's own one-byte newtypes
//! (`#[repr(transparent)]` over the bits, `Pod`), with conversions from and to `f32` on the
//! host (round to nearest even, saturating to the largest finite value, as the GPU's
//! `cvt.rn.satfinite` does), so test data and references can be made on the CPU.

use bytemuck::{Pod, Zeroable};
use cublas_sys::{cublasComputeType_t, cudaDataType_t};

/// An element type cuBLAS and cuBLASLt read and write: each maps to one `cudaDataType`.
///
/// # Safety
///
/// [`DATA_TYPE`](Self::DATA_TYPE) must be the CUDA data type with this type's size and bit
/// layout: the libraries read and write the memory as that type.
pub unsafe trait BlasElement: Pod {
    /// The element's CUDA data type.
    const DATA_TYPE: cudaDataType_t;
    /// Its short name in messages and plan descriptions (`bf16`).
    const NAME: &'static str;
}

macro_rules! blas_elements {
    ($($rust:ty => $cuda:ident, $name:literal;)*) => {$(
        // SAFETY: the CUDA type has this Rust type's size and layout.
        unsafe impl BlasElement for $rust {
            const DATA_TYPE: cudaDataType_t = cudaDataType_t::$cuda;
            const NAME: &'static str = $name;
        }
    )*};
}

blas_elements! {
    f32 => CUDA_R_32F, "f32";
    f64 => CUDA_R_64F, "f64";
    F8E4M3 => CUDA_R_8F_E4M3, "e4m3";
    F8E5M2 => CUDA_R_8F_E5M2, "e5m2";
}

#[cfg(feature = "half")]
blas_elements! {
    half::f16 => CUDA_R_16F, "f16";
    half::bf16 => CUDA_R_16BF, "bf16";
}

/// A GEMM of `Self` inputs into `D` outputs that cuBLAS computes (`cublasGemmEx` and its
/// batched forms): the compute type and the type of the scalars alpha and beta. f16 and bf16
/// inputs compute in f32 (with f16, bf16 or f32 outputs), f32 in f32 (or TF32, opted in with
/// [`Blas::allow_tf32`](super::Blas::allow_tf32)), f64 in f64.
///
/// # Safety
///
/// [`COMPUTE`](Self::COMPUTE) and [`Scalar`](Self::Scalar) must be a combination cuBLAS
/// documents for `cublasGemmEx` with these input and output types: the library reads the
/// scalars as the compute type's scale type.
pub unsafe trait GemmInput<D: BlasElement>: BlasElement {
    /// The type of alpha and beta.
    type Scalar: Pod;
    /// The compute type.
    const COMPUTE: cublasComputeType_t;
    /// Whether TF32 tensor cores may stand in for f32 (f32 inputs only).
    const TF32_ELIGIBLE: bool = false;
}

// SAFETY: CUDA_R_32F in and out, CUBLAS_COMPUTE_32F, f32 scalars: a documented combination.
unsafe impl GemmInput<f32> for f32 {
    type Scalar = f32;
    const COMPUTE: cublasComputeType_t = cublasComputeType_t::CUBLAS_COMPUTE_32F;
    const TF32_ELIGIBLE: bool = true;
}

// SAFETY: CUDA_R_64F in and out, CUBLAS_COMPUTE_64F, f64 scalars: a documented combination.
unsafe impl GemmInput<f64> for f64 {
    type Scalar = f64;
    const COMPUTE: cublasComputeType_t = cublasComputeType_t::CUBLAS_COMPUTE_64F;
}

#[cfg(feature = "half")]
macro_rules! half_gemms {
    ($($input:ty => $output:ty;)*) => {$(
        // SAFETY: 16-bit floats in, 16-bit or f32 out, CUBLAS_COMPUTE_32F with f32 scalars: a
        // documented combination.
        unsafe impl GemmInput<$output> for $input {
            type Scalar = f32;
            const COMPUTE: cublasComputeType_t = cublasComputeType_t::CUBLAS_COMPUTE_32F;
        }
    )*};
}

#[cfg(feature = "half")]
half_gemms! {
    half::f16 => half::f16;
    half::f16 => f32;
    half::bf16 => half::bf16;
    half::bf16 => f32;
}

/// An element type of the vector operations (`cublasAxpyEx`, `cublasScalEx`, `cublasDotEx`,
/// `cublasNrm2Ex`): the type they execute in, which is also the scalars' type (f32 for the
/// 16-bit floats).
///
/// # Safety
///
/// [`EXECUTION`](Self::EXECUTION) must be the CUDA data type of [`Scalar`](Self::Scalar), and
/// a combination the `...Ex` functions document for this element type.
pub unsafe trait VectorElement: BlasElement {
    /// The type of the scalar alpha.
    type Scalar: Pod;
    /// The execution type (`CUDA_R_32F` for f16 and bf16).
    const EXECUTION: cudaDataType_t;
}

// SAFETY: f32 executes in f32 with f32 scalars.
unsafe impl VectorElement for f32 {
    type Scalar = f32;
    const EXECUTION: cudaDataType_t = cudaDataType_t::CUDA_R_32F;
}

// SAFETY: f64 executes in f64 with f64 scalars.
unsafe impl VectorElement for f64 {
    type Scalar = f64;
    const EXECUTION: cudaDataType_t = cudaDataType_t::CUDA_R_64F;
}

#[cfg(feature = "half")]
// SAFETY: f16 executes in f32 with f32 scalars, as the `...Ex` functions document.
unsafe impl VectorElement for half::f16 {
    type Scalar = f32;
    const EXECUTION: cudaDataType_t = cudaDataType_t::CUDA_R_32F;
}

#[cfg(feature = "half")]
// SAFETY: bf16 executes in f32 with f32 scalars, as the `...Ex` functions document.
unsafe impl VectorElement for half::bf16 {
    type Scalar = f32;
    const EXECUTION: cudaDataType_t = cudaDataType_t::CUDA_R_32F;
}

/// An FP8 number in the E4M3 format (1 sign bit, 4 exponent bits of bias 7, 3 mantissa bits):
/// finite up to ±448, no infinities, one NaN pattern per sign (`0x7f`, `0xff`). The bits are
/// the value; [`from_f32`](Self::from_f32) and [`to_f32`](Self::to_f32) convert on the host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F8E4M3(pub u8);

/// An FP8 number in the E5M2 format (1 sign bit, 5 exponent bits of bias 15, 2 mantissa bits,
/// IEEE-like with infinities and NaNs): finite up to ±57344.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F8E5M2(pub u8);

// SAFETY: a transparent wrapper of a u8: every bit pattern is valid, zero included.
unsafe impl Zeroable for F8E4M3 {}
// SAFETY: as above; no padding, `Copy`, `'static`.
unsafe impl Pod for F8E4M3 {}
// SAFETY: a transparent wrapper of a u8: every bit pattern is valid, zero included.
unsafe impl Zeroable for F8E5M2 {}
// SAFETY: as above; no padding, `Copy`, `'static`.
unsafe impl Pod for F8E5M2 {}

/// An FP8 format: exponent and mantissa widths, the bias, the largest finite pattern and the
/// NaN pattern (both without the sign bit), and whether the all-ones exponent is infinite/NaN
/// (E5M2) or still finite (E4M3, where only all ones is NaN).
struct Format {
    mantissa: u32,
    bias: i32,
    max_finite: u8,
    nan: u8,
    ieee: bool,
}

const E4M3: Format = Format {
    mantissa: 3,
    bias: 7,
    max_finite: 0x7e,
    nan: 0x7f,
    ieee: false,
};

const E5M2: Format = Format {
    mantissa: 2,
    bias: 15,
    max_finite: 0x7b,
    nan: 0x7e,
    ieee: true,
};

impl Format {
    /// `value` rounded to nearest even, saturating (infinities too) to the largest finite.
    fn encode(&self, value: f32) -> u8 {
        let sign = if value.is_sign_negative() { 0x80 } else { 0 };
        if value.is_nan() {
            return sign | self.nan;
        }
        let magnitude = f64::from(value.abs());
        if magnitude == 0.0 {
            return sign;
        }
        let min_exponent = 1 - self.bias;
        // The f32's own binade (its subnormals lie far below every FP8 subnormal).
        let biased = ((value.to_bits() >> 23) & 0xff) as i32;
        let exponent = (biased - 127).max(min_exponent);
        // The mantissa as an integer at this exponent: exact, a power-of-two scaling.
        let scaled = magnitude / 2f64.powi(exponent - self.mantissa as i32);
        let rounded = scaled.round_ties_even();
        let bits = if rounded >= f64::from(2u32 << self.mantissa) {
            // Rounded up into the next binade.
            ((exponent + 1 + self.bias) as u64) << self.mantissa
        } else if rounded < f64::from(1u32 << self.mantissa) {
            // Subnormal (only at the smallest exponent): the field is the integer itself.
            rounded as u64
        } else {
            (((exponent + self.bias) as u64) << self.mantissa)
                | (rounded as u64 - (1u64 << self.mantissa))
        };
        sign | bits.min(u64::from(self.max_finite)) as u8
    }

    /// The value of `bits`.
    fn decode(&self, bits: u8) -> f32 {
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let magnitude = bits & 0x7f;
        let exponent = i32::from(magnitude >> self.mantissa);
        let fraction = f64::from(magnitude & ((1 << self.mantissa) - 1));
        let all_ones = (1 << (7 - self.mantissa)) - 1;
        if self.ieee && exponent == all_ones {
            return if fraction == 0.0 {
                sign * f32::INFINITY
            } else {
                f32::NAN
            };
        }
        if !self.ieee && magnitude == self.nan {
            return f32::NAN;
        }
        let unit = f64::from(1u32 << self.mantissa);
        let value = if exponent == 0 {
            fraction / unit * 2f64.powi(1 - self.bias)
        } else {
            (1.0 + fraction / unit) * 2f64.powi(exponent - self.bias)
        };
        sign * value as f32
    }
}

impl F8E4M3 {
    /// `value` rounded to the nearest E4M3 (ties to even), saturating at ±448 (infinities
    /// too); NaN stays NaN.
    pub fn from_f32(value: f32) -> Self {
        Self(E4M3.encode(value))
    }

    /// The value as an `f32` (exact).
    pub fn to_f32(self) -> f32 {
        E4M3.decode(self.0)
    }
}

impl F8E5M2 {
    /// `value` rounded to the nearest E5M2 (ties to even), saturating at ±57344 (infinities
    /// too); NaN stays NaN.
    pub fn from_f32(value: f32) -> Self {
        Self(E5M2.encode(value))
    }

    /// The value as an `f32` (exact).
    pub fn to_f32(self) -> f32 {
        E5M2.decode(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_rounds_to_nearest_even_and_saturates() {
        assert_eq!(F8E4M3::from_f32(0.0).0, 0x00);
        assert_eq!(F8E4M3::from_f32(-0.0).0, 0x80);
        assert_eq!(F8E4M3::from_f32(1.0).0, 0x38);
        assert_eq!(F8E4M3::from_f32(448.0).0, 0x7e);
        assert_eq!(F8E4M3::from_f32(1e6).0, 0x7e);
        assert_eq!(F8E4M3::from_f32(f32::NEG_INFINITY).0, 0xfe);
        assert!(F8E4M3::from_f32(f32::NAN).to_f32().is_nan());
        // 1.0625 is halfway between 1.0 and 1.125: ties to the even mantissa, 1.0.
        assert_eq!(F8E4M3::from_f32(1.0625).to_f32(), 1.0);
        assert_eq!(F8E4M3::from_f32(1.1875).to_f32(), 1.25);
        // The smallest subnormal, 2^-9, and half of it (ties to 0).
        assert_eq!(F8E4M3::from_f32(2f32.powi(-9)).0, 0x01);
        assert_eq!(F8E4M3::from_f32(2f32.powi(-10)).0, 0x00);
        // The largest subnormal rounds up into the smallest normal, 2^-6.
        assert_eq!(F8E4M3::from_f32(0.99 * 2f32.powi(-6)).0, 0x08);
    }

    #[test]
    fn e5m2_keeps_infinities_in_decoding_and_saturates_in_encoding() {
        assert_eq!(F8E5M2::from_f32(1.0).0, 0x3c);
        assert_eq!(F8E5M2::from_f32(57344.0).0, 0x7b);
        assert_eq!(F8E5M2::from_f32(f32::INFINITY).0, 0x7b);
        assert_eq!(F8E5M2(0x7c).to_f32(), f32::INFINITY);
        assert_eq!(F8E5M2(0xfc).to_f32(), f32::NEG_INFINITY);
        assert!(F8E5M2(0x7f).to_f32().is_nan());
        assert_eq!(F8E5M2::from_f32(-1.5).to_f32(), -1.5);
    }

    #[test]
    fn every_finite_pattern_round_trips() {
        for bits in 0..=255u8 {
            let e4m3 = F8E4M3(bits).to_f32();
            if !e4m3.is_nan() {
                assert_eq!(F8E4M3::from_f32(e4m3).0 & 0x7f, bits & 0x7f, "{bits:#x}");
            }
            let e5m2 = F8E5M2(bits).to_f32();
            if e5m2.is_finite() {
                assert_eq!(F8E5M2::from_f32(e5m2).0 & 0x7f, bits & 0x7f, "{bits:#x}");
            }
        }
    }

    #[test]
    fn data_types_are_cudas() {
        assert_eq!(f32::DATA_TYPE, cudaDataType_t::CUDA_R_32F);
        assert_eq!(F8E4M3::DATA_TYPE.0, 28);
        assert_eq!(F8E5M2::DATA_TYPE.0, 29);
        assert_eq!(<f32 as GemmInput<f32>>::COMPUTE.0, 68);
        #[cfg(feature = "half")]
        {
            assert_eq!(half::bf16::DATA_TYPE.0, 14);
            assert_eq!(<half::bf16 as GemmInput<f32>>::COMPUTE.0, 68);
            assert_eq!(<half::f16 as VectorElement>::EXECUTION.0, 0);
        }
    }
}
