//! Where a tensor's values live ([`Storage`]) and the constants a graph passes by value
//! ([`Scalar`]).

use std::ffi::c_void;
use std::fmt;

use super::tensor::DataType;

/// A constant a graph passes by value (cuDNN's `CUDNN_ATTR_TENSOR_IS_BY_VALUE` tensors): an
/// attention's scale, a mask's fill value, a normalization's epsilon. It is part of the graph
/// (and of the key its plan is cached under); an execution hands cuDNN a host pointer to it,
/// with no buffer of the caller's.
///
/// ```
/// use cuda_safe_libs::dnn::{DataType, Scalar};
///
/// let scale = Scalar::f32(0.125);
/// assert_eq!(scale.data_type(), DataType::F32);
/// assert_eq!(scale.as_f64(), 0.125);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scalar {
    data_type: DataType,
    /// The value's bytes as cuDNN reads them (native order), zero-padded.
    bytes: Aligned,
}

/// A constant's bytes, aligned for the widest type it holds (cuDNN reads an `i64` or `f64`
/// through the pointer it is handed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C, align(8))]
struct Aligned([u8; 8]);

impl Scalar {
    /// An `f32` constant (`CUDNN_DATA_FLOAT`).
    pub fn f32(value: f32) -> Self {
        Self::from_bytes(DataType::F32, &value.to_ne_bytes())
    }

    /// An `i32` constant (`CUDNN_DATA_INT32`).
    pub fn i32(value: i32) -> Self {
        Self::from_bytes(DataType::I32, &value.to_ne_bytes())
    }

    /// An `i64` constant (`CUDNN_DATA_INT64`).
    pub fn i64(value: i64) -> Self {
        Self::from_bytes(DataType::I64, &value.to_ne_bytes())
    }

    fn from_bytes(data_type: DataType, value: &[u8]) -> Self {
        let mut bytes = [0u8; 8];
        bytes[..value.len()].copy_from_slice(value);
        Self {
            data_type,
            bytes: Aligned(bytes),
        }
    }

    /// Its data type.
    pub fn data_type(self) -> DataType {
        self.data_type
    }

    /// Its value, widened to `f64`.
    pub fn as_f64(self) -> f64 {
        let Aligned(bytes) = self.bytes;
        let [a, b, c, d, ..] = bytes;
        match self.data_type {
            DataType::I32 => f64::from(i32::from_ne_bytes([a, b, c, d])),
            DataType::I64 => i64::from_ne_bytes(bytes) as f64,
            _ => f64::from(f32::from_ne_bytes([a, b, c, d])),
        }
    }

    /// A host pointer to the value, valid while this `Scalar` is neither moved nor dropped.
    pub(crate) fn as_ptr(&self) -> *mut c_void {
        self.bytes.0.as_ptr().cast_mut().cast()
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.as_f64(), self.data_type)
    }
}

/// Where a tensor's values live during an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Storage {
    /// In a buffer of the caller's, bound in the [`VariantPack`](super::VariantPack): the
    /// graph's inputs and outputs.
    #[default]
    Bound,
    /// Nowhere: an intermediate result living only inside the fused kernel.
    Virtual,
    /// In the graph itself, passed by value.
    ByValue(Scalar),
    /// In the handle's workspace, given by the [`Dnn`](super::Dnn) at each execution: an
    /// intermediate result a fused pattern needs in memory (an attention backward's `f32`
    /// accumulators), which the caller neither binds nor reads.
    Workspace,
}

#[cfg(test)]
mod tests {
    use super::Scalar;

    #[test]
    fn a_constant_is_handed_to_cudnn_aligned_for_its_widest_type() {
        let scalars = [Scalar::i64(7); 8];
        for scalar in &scalars {
            assert_eq!(scalar.as_ptr().addr() % align_of::<i64>(), 0);
        }
        assert_eq!(scalars[3].as_f64(), 7.0);
    }
}
