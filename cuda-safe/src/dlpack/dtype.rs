//! Element types: the common [`DLDataType`]s, their sizes, and the Rust types that match them.

use super::abi::{DLDataType, DLDataTypeCode};
use crate::error::{Error, Result};

impl DLDataType {
    /// A scalar (one-lane) type.
    pub const fn scalar(code: DLDataTypeCode, bits: u8) -> Self {
        Self {
            code,
            bits,
            lanes: 1,
        }
    }

    /// `bool` (8 bits).
    pub const BOOL: Self = Self::scalar(DLDataTypeCode::BOOL, 8);
    /// `int8`.
    pub const I8: Self = Self::scalar(DLDataTypeCode::INT, 8);
    /// `int16`.
    pub const I16: Self = Self::scalar(DLDataTypeCode::INT, 16);
    /// `int32`.
    pub const I32: Self = Self::scalar(DLDataTypeCode::INT, 32);
    /// `int64`.
    pub const I64: Self = Self::scalar(DLDataTypeCode::INT, 64);
    /// `uint8`.
    pub const U8: Self = Self::scalar(DLDataTypeCode::UINT, 8);
    /// `uint16`.
    pub const U16: Self = Self::scalar(DLDataTypeCode::UINT, 16);
    /// `uint32`.
    pub const U32: Self = Self::scalar(DLDataTypeCode::UINT, 32);
    /// `uint64`.
    pub const U64: Self = Self::scalar(DLDataTypeCode::UINT, 64);
    /// `float16`.
    pub const F16: Self = Self::scalar(DLDataTypeCode::FLOAT, 16);
    /// `bfloat16`.
    pub const BF16: Self = Self::scalar(DLDataTypeCode::BFLOAT, 16);
    /// `float32`.
    pub const F32: Self = Self::scalar(DLDataTypeCode::FLOAT, 32);
    /// `float64`.
    pub const F64: Self = Self::scalar(DLDataTypeCode::FLOAT, 64);
    /// `complex64` (two `float32`).
    pub const C64: Self = Self::scalar(DLDataTypeCode::COMPLEX, 64);
    /// `complex128` (two `float64`).
    pub const C128: Self = Self::scalar(DLDataTypeCode::COMPLEX, 128);

    /// The size of one element in bytes, after checking the type: a code DLPack 1.x defines,
    /// at least one bit and one lane, and a whole number of bytes.
    ///
    /// An unknown code, zero bits or zero lanes is [`Error::InvalidArgument`]; a sub-byte
    /// element (the packed 4- and 6-bit floats) is [`Error::Unsupported`].
    pub fn item_size(&self) -> Result<usize> {
        if !self.code.is_known() {
            return Err(Error::invalid_argument(format!(
                "DLPack type code {} is not defined by DLPack 1.x",
                self.code.0
            )));
        }
        if self.bits == 0 || self.lanes == 0 {
            return Err(Error::invalid_argument(format!(
                "element type {self:?} has no bits or no lanes"
            )));
        }
        let bits = usize::from(self.bits) * usize::from(self.lanes);
        if bits % 8 != 0 {
            return Err(Error::unsupported(
                "sub-byte DLPack elements",
                format!("{self:?} is {bits} bits, not a whole number of bytes"),
            ));
        }
        Ok(bits / 8)
    }
}

/// A Rust type whose values are elements of one [`DLDataType`], so a view of that type can be
/// handed out as `*mut Self`.
///
/// # Safety
///
/// `Self` must have exactly the size and bit layout of [`Self::DTYPE`]'s elements.
pub unsafe trait Element: Copy + 'static {
    /// The DLPack type of the elements.
    const DTYPE: DLDataType;
}

macro_rules! element {
    ($($ty:ty => $dtype:ident),* $(,)?) => {$(
        // SAFETY: a primitive with the size and layout of the same-named DLPack type.
        unsafe impl Element for $ty {
            const DTYPE: DLDataType = DLDataType::$dtype;
        }
    )*};
}

element!(
    bool => BOOL, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64,
);

#[cfg(feature = "half")]
element!(half::f16 => F16, half::bf16 => BF16);
