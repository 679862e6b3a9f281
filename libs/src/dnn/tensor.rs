//! What a graph's tensors are: [`DataType`], the element types of this crate's buffers
//! ([`DnnElement`]), and [`TensorDesc`] (dims, strides, type, alignment), checked before any
//! cuDNN call.

use std::fmt;

use bytemuck::Pod;
use cuda_safe::{Error, Result};
use cudnn_sys::cudnnDataType_t;

use super::scalar::{Scalar, Storage};

/// The element types a graph's tensors and its computations use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `f32` (`CUDNN_DATA_FLOAT`). As a compute type it allows TF32 tensor cores unless the
    /// graph asks otherwise.
    F32,
    /// `f64` (`CUDNN_DATA_DOUBLE`).
    F64,
    /// IEEE half (`CUDNN_DATA_HALF`).
    F16,
    /// bfloat16 (`CUDNN_DATA_BFLOAT16`).
    BF16,
    /// `i8` (`CUDNN_DATA_INT8`).
    I8,
    /// `u8` (`CUDNN_DATA_UINT8`).
    U8,
    /// `i32` (`CUDNN_DATA_INT32`).
    I32,
    /// `i64` (`CUDNN_DATA_INT64`).
    I64,
    /// FP8 E4M3 (`CUDNN_DATA_FP8_E4M3`, one byte).
    Fp8E4M3,
    /// FP8 E5M2 (`CUDNN_DATA_FP8_E5M2`, one byte).
    Fp8E5M2,
    /// A truth value (`CUDNN_DATA_BOOLEAN`): the result of a comparison inside a graph (a
    /// mask), never in a buffer.
    Boolean,
}

impl DataType {
    /// cuDNN's value.
    pub fn as_raw(self) -> cudnnDataType_t {
        match self {
            Self::F32 => cudnnDataType_t::CUDNN_DATA_FLOAT,
            Self::F64 => cudnnDataType_t::CUDNN_DATA_DOUBLE,
            Self::F16 => cudnnDataType_t::CUDNN_DATA_HALF,
            Self::BF16 => cudnnDataType_t::CUDNN_DATA_BFLOAT16,
            Self::I8 => cudnnDataType_t::CUDNN_DATA_INT8,
            Self::U8 => cudnnDataType_t::CUDNN_DATA_UINT8,
            Self::I32 => cudnnDataType_t::CUDNN_DATA_INT32,
            Self::I64 => cudnnDataType_t::CUDNN_DATA_INT64,
            Self::Fp8E4M3 => cudnnDataType_t::CUDNN_DATA_FP8_E4M3,
            Self::Fp8E5M2 => cudnnDataType_t::CUDNN_DATA_FP8_E5M2,
            Self::Boolean => cudnnDataType_t::CUDNN_DATA_BOOLEAN,
        }
    }

    /// The bytes of one element.
    pub fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 | Self::Fp8E4M3 | Self::Fp8E5M2 | Self::Boolean => 1,
            Self::F16 | Self::BF16 => 2,
            Self::F32 | Self::I32 => 4,
            Self::F64 | Self::I64 => 8,
        }
    }

    /// Whether it is a floating-point type.
    pub fn is_float(self) -> bool {
        !matches!(
            self,
            Self::I8 | Self::U8 | Self::I32 | Self::I64 | Self::Boolean
        )
    }

    /// Whether it is one of the FP8 types.
    pub fn is_fp8(self) -> bool {
        matches!(self, Self::Fp8E4M3 | Self::Fp8E5M2)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::I8 => "i8",
            Self::U8 => "u8",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::Fp8E4M3 => "fp8_e4m3",
            Self::Fp8E5M2 => "fp8_e5m2",
            Self::Boolean => "bool",
        })
    }
}

/// A Rust element type of a buffer bound to a graph's tensor, with its [`DataType`]: the
/// primitive types, `half`'s `f16` and `bf16` (feature `half`), and the FP8 types of the `blas`
/// module (feature `blas`).
pub trait DnnElement: Pod {
    /// The tensor data type it is.
    const DATA_TYPE: DataType;
}

macro_rules! elements {
    ($($rust:ty => $kind:ident),* $(,)?) => {$(
        impl DnnElement for $rust {
            const DATA_TYPE: DataType = DataType::$kind;
        }
    )*};
}

elements! { f32 => F32, f64 => F64, i8 => I8, u8 => U8, i32 => I32, i64 => I64 }

#[cfg(feature = "half")]
elements! { half::f16 => F16, half::bf16 => BF16 }

#[cfg(feature = "blas")]
elements! { crate::blas::F8E4M3 => Fp8E4M3, crate::blas::F8E5M2 => Fp8E5M2 }

/// The most dimensions a tensor has (cuDNN's `CUDNN_DIM_MAX`).
pub const MAX_DIMS: usize = 8;

/// A tensor of a graph: its dims and strides (in elements, as cuDNN orders them: N, C, then
/// the spatial dims for convolutions; batch, rows, columns for matmuls), its data type, the
/// byte alignment its memory will have, and its [`Storage`]: a caller's buffer, none (virtual:
/// an intermediate result that lives only inside the fused kernel), a constant passed by value,
/// or the handle's workspace.
///
/// ```
/// use cuda_safe_libs::dnn::{DataType, TensorDesc};
///
/// // N=32, C=64, 56x56, stored NHWC: C is the innermost dimension.
/// let x = TensorDesc::nhwc(DataType::BF16, [32, 64, 56, 56]);
/// assert_eq!(x.strides(), [64 * 56 * 56, 1, 64 * 56, 64]);
/// assert_eq!(x.span()?, 32 * 64 * 56 * 56);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorDesc {
    dims: Vec<i64>,
    strides: Vec<i64>,
    data_type: DataType,
    alignment: u32,
    storage: Storage,
}

impl TensorDesc {
    /// A tensor of `dims` with explicit `strides` (one per dim).
    pub fn new(data_type: DataType, dims: &[i64], strides: &[i64]) -> Self {
        Self {
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            data_type,
            alignment: 16,
            storage: Storage::Bound,
        }
    }

    /// A constant passed by value, of `rank` dims all 1 (it broadcasts against any tensor of
    /// that rank).
    pub fn scalar(value: Scalar, rank: usize) -> Self {
        let ones = vec![1i64; rank];
        let mut desc = Self::new(value.data_type(), &ones, &ones);
        desc.storage = Storage::ByValue(value);
        desc
    }

    /// A packed tensor whose last dim is innermost (row-major, NCHW for 4 dims). Strides
    /// saturate: a tensor past memory is refused when it joins a graph.
    pub fn packed(data_type: DataType, dims: &[i64]) -> Self {
        let mut strides = vec![1i64; dims.len()];
        for index in (0..dims.len().saturating_sub(1)).rev() {
            strides[index] = strides[index + 1].saturating_mul(dims[index + 1].max(1));
        }
        Self::new(data_type, dims, &strides)
    }

    /// A packed NCHW tensor (`dims` = N, C, H, W).
    pub fn nchw(data_type: DataType, dims: [i64; 4]) -> Self {
        Self::packed(data_type, &dims)
    }

    /// A packed channels-last tensor: `dims` are N, C, then the spatial dims (as cuDNN orders
    /// them), stored with C innermost (NHWC for 4 dims, NDHWC for 5; filters KRSC).
    pub fn nhwc<const N: usize>(data_type: DataType, dims: [i64; N]) -> Self {
        Self::channels_last(data_type, &dims)
    }

    /// [`nhwc`](Self::nhwc) of any rank.
    pub fn channels_last(data_type: DataType, dims: &[i64]) -> Self {
        let mut strides = vec![1i64; dims.len()];
        if dims.len() >= 2 {
            let mut stride = dims[1].max(1);
            for index in (2..dims.len()).rev() {
                strides[index] = stride;
                stride = stride.saturating_mul(dims[index].max(1));
            }
            strides[0] = stride;
        }
        Self::new(data_type, dims, &strides)
    }

    /// The same tensor with memory aligned to `bytes` (16 by default: what the pools and the
    /// fastest kernels give; a buffer bound to it is checked for it).
    #[must_use]
    pub fn alignment(mut self, bytes: u32) -> Self {
        self.alignment = bytes;
        self
    }

    /// The same tensor as virtual (`true`): an intermediate of the graph with no memory; or
    /// (`false`) in a buffer the caller binds.
    #[must_use]
    pub fn set_virtual(mut self, is_virtual: bool) -> Self {
        self.storage = if is_virtual {
            Storage::Virtual
        } else {
            Storage::Bound
        };
        self
    }

    /// The same tensor in the handle's workspace (a fused pattern's intermediate in memory).
    #[must_use]
    pub(crate) fn in_workspace(mut self) -> Self {
        self.storage = Storage::Workspace;
        self
    }

    /// The same tensor with another data type.
    #[must_use]
    pub fn with_data_type(mut self, data_type: DataType) -> Self {
        self.data_type = data_type;
        self
    }

    /// The dims.
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// The data type.
    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    /// The byte alignment its memory must have.
    pub fn byte_alignment(&self) -> u32 {
        self.alignment
    }

    /// Whether it is virtual.
    pub fn is_virtual(&self) -> bool {
        self.storage == Storage::Virtual
    }

    /// Where its values live.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// The constant it holds, if it is passed by value (a reference into this description:
    /// cuDNN reads the value through its address).
    pub(crate) fn by_value(&self) -> Option<&Scalar> {
        match &self.storage {
            Storage::ByValue(value) => Some(value),
            _ => None,
        }
    }

    /// Whether a caller's buffer holds it (it is bound in the variant pack).
    pub fn is_bound(&self) -> bool {
        self.storage == Storage::Bound
    }

    /// Whether its strides are channels-last (C, dim 1, innermost of at least 3 dims).
    pub fn is_channels_last(&self) -> bool {
        self.dims.len() >= 3 && self.strides[1] == 1 && self.dims[1] > 1
    }

    /// How many elements its memory must hold: one past the last element it addresses.
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check).
    pub fn span(&self) -> Result<usize> {
        self.check()?;
        let last = self
            .dims
            .iter()
            .zip(&self.strides)
            .try_fold(0i64, |sum, (dim, stride)| {
                (dim - 1).checked_mul(*stride)?.checked_add(sum)
            })
            .and_then(|last| last.checked_add(1))
            .ok_or_else(|| self.refuse("spans more elements than a 64-bit count"))?;
        usize::try_from(last).map_err(|_| self.refuse("spans more than the address space"))
    }

    /// Refuses a description cuDNN cannot take: no dims or more than [`MAX_DIMS`], a dim or
    /// stride below 1, strides not one per dim, an alignment that is not a power of 2 or is
    /// smaller than an element, a constant passed by value that is not one element of its own
    /// type.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the tensor and why.
    pub fn check(&self) -> Result<()> {
        if self.dims.is_empty() || self.dims.len() > MAX_DIMS {
            return Err(self.refuse("has no dims or more than 8"));
        }
        if self.strides.len() != self.dims.len() {
            return Err(self.refuse("has not one stride per dim"));
        }
        if self.dims.iter().chain(&self.strides).any(|&each| each < 1) {
            return Err(self.refuse("has a dim or stride below 1"));
        }
        let alignment = self.alignment as usize;
        if !alignment.is_power_of_two() || alignment < self.data_type.size() {
            return Err(
                self.refuse("has an alignment that is not a power of 2 of at least an element")
            );
        }
        if let Storage::ByValue(value) = self.storage
            && (value.data_type() != self.data_type || self.dims.iter().any(|&dim| dim != 1))
        {
            return Err(self.refuse("is passed by value but is not one element of its type"));
        }
        Ok(())
    }

    #[cold]
    fn refuse(&self, why: &str) -> Error {
        Error::invalid_argument(format!("the tensor {self} {why}"))
    }
}

impl fmt::Display for TensorDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}:{:?} {}", self.dims, self.strides, self.data_type)?;
        match self.storage {
            Storage::Bound => Ok(()),
            Storage::Virtual => f.write_str(" virtual"),
            Storage::ByValue(value) => write!(f, " = {value}"),
            Storage::Workspace => f.write_str(" in the workspace"),
        }
    }
}

/// A tensor of a [`Graph`](super::Graph): its unique id there (cuDNN's `UNIQUE_ID`, the key a
/// buffer is bound under when the graph runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tensor(pub(crate) i64);

impl Tensor {
    /// The unique id.
    pub fn uid(self) -> i64 {
        self.0
    }
}
