//! The element types of the transforms: the complex numbers ([`Complex32`], [`Complex64`],
//! and with `half` `ComplexF16`), laid out as cuFFT's `cufftComplex` (`float2`),
//! `cufftDoubleComplex` (`double2`) and `half2`, and the traits that tie a real type to its
//! complex one and to cuFFT's precision ([`FftReal`], [`FftComplex`], [`FftPrecision`]).

use std::fmt;

use bytemuck::{Pod, Zeroable};
use cufft_sys::cudaDataType;

/// The precision of a transform: cuFFT's types C2C/R2C/C2R (single), Z2Z/D2Z/Z2D (double),
/// and the half-precision transforms of `cufftXtMakePlanMany` (`CUDA_C_16F`, `CUDA_R_16F`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FftPrecision {
    /// f16 (`half::f16` and `ComplexF16`, feature `half`). cuFFT takes only sizes that are
    /// powers of 2, on sm_53 and later.
    Half,
    /// f32 and [`Complex32`].
    Single,
    /// f64 and [`Complex64`].
    Double,
}

impl FftPrecision {
    /// The bytes of one real element.
    pub const fn real_bytes(self) -> usize {
        match self {
            Self::Half => 2,
            Self::Single => 4,
            Self::Double => 8,
        }
    }

    /// The bytes of one complex element, which is also the alignment cuFFT needs of every
    /// address it is given (real data too: an in-place real transform reads it as complex).
    pub const fn complex_bytes(self) -> usize {
        2 * self.real_bytes()
    }

    /// The `cudaDataType` of a real element (`CUDA_R_16F`, `CUDA_R_32F`, `CUDA_R_64F`).
    pub const fn real_type(self) -> cudaDataType {
        match self {
            Self::Half => cudaDataType::CUDA_R_16F,
            Self::Single => cudaDataType::CUDA_R_32F,
            Self::Double => cudaDataType::CUDA_R_64F,
        }
    }

    /// The `cudaDataType` of a complex element (`CUDA_C_16F`, `CUDA_C_32F`, `CUDA_C_64F`).
    pub const fn complex_type(self) -> cudaDataType {
        match self {
            Self::Half => cudaDataType::CUDA_C_16F,
            Self::Single => cudaDataType::CUDA_C_32F,
            Self::Double => cudaDataType::CUDA_C_64F,
        }
    }
}

impl fmt::Display for FftPrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Half => "f16",
            Self::Single => "f32",
            Self::Double => "f64",
        })
    }
}

/// Keeps [`FftReal`] and [`FftComplex`] to the types cuFFT transforms.
mod sealed {
    pub trait Sealed {}
}

/// A real element type cuFFT transforms: f32, f64, and with `half` `half::f16`. Sealed.
pub trait FftReal: Pod + sealed::Sealed {
    /// The complex type of the same precision.
    type Complex: FftComplex<Real = Self>;
    /// The precision.
    const PRECISION: FftPrecision;
}

/// A complex element type cuFFT transforms: [`Complex32`], [`Complex64`], and with `half`
/// `ComplexF16`. Sealed.
pub trait FftComplex: Pod + sealed::Sealed {
    /// The real type of the same precision.
    type Real: FftReal<Complex = Self>;
    /// The precision.
    const PRECISION: FftPrecision;
}

macro_rules! complex {
    ($(#[$doc:meta])* $name:ident, $real:ty, $align:literal, $precision:ident, $c:literal) => {
        $(#[$doc])*
        #[doc = concat!("Laid out as cuFFT's `", $c, "`: the real part, then the imaginary")]
        #[doc = concat!("part, aligned to ", $align, " bytes (the alignment cuFFT reads it at).")]
        #[repr(C, align($align))]
        #[derive(Debug, Clone, Copy, Default, PartialEq)]
        pub struct $name {
            /// The real part.
            pub re: $real,
            /// The imaginary part.
            pub im: $real,
        }

        impl $name {
            /// The number `re + i im`.
            pub const fn new(re: $real, im: $real) -> Self {
                Self { re, im }
            }
        }

        const _: () = assert!(
            std::mem::size_of::<$name>() == $align && std::mem::align_of::<$name>() == $align
        );

        // SAFETY: two fields of one `Pod` type under `repr(C)`, whose size is twice the
        // field's and equal to the alignment (asserted above): no padding, every bit pattern
        // valid, all zeros a number.
        unsafe impl Zeroable for $name {}
        // SAFETY: as above.
        unsafe impl Pod for $name {}

        impl sealed::Sealed for $name {}
        impl sealed::Sealed for $real {}

        impl FftComplex for $name {
            type Real = $real;
            const PRECISION: FftPrecision = FftPrecision::$precision;
        }

        impl FftReal for $real {
            type Complex = $name;
            const PRECISION: FftPrecision = FftPrecision::$precision;
        }
    };
}

complex!(
    /// A single-precision complex number.
    Complex32, f32, 8, Single, "cufftComplex"
);
complex!(
    /// A double-precision complex number.
    Complex64, f64, 16, Double, "cufftDoubleComplex"
);
#[cfg(feature = "half")]
complex!(
    /// A half-precision complex number (feature `half`).
    ComplexF16, half::f16, 4, Half, "half2"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_numbers_are_laid_out_as_cuffts() {
        let values = [Complex32::new(1.0, 2.0), Complex32::new(3.0, 4.0)];
        assert_eq!(
            bytemuck::cast_slice::<_, f32>(&values),
            [1.0, 2.0, 3.0, 4.0]
        );
        assert_eq!(std::mem::align_of::<Complex64>(), 16);
        assert_eq!(
            FftPrecision::Double.complex_bytes(),
            std::mem::size_of::<Complex64>()
        );
        assert_eq!(<f32 as FftReal>::PRECISION, FftPrecision::Single);
        assert_eq!(FftPrecision::Half.to_string(), "f16");
    }
}
