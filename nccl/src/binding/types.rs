//! Rust element types as NCCL data types, and the reduction operators.

use nccl_sys::{ncclDataType_t, ncclRedOp_t};

/// An element type NCCL reduces and moves: each maps to one `ncclDataType_t`.
///
/// # Safety
///
/// [`DATA_TYPE`](Self::DATA_TYPE) must be the NCCL type with this type's size and bit layout
/// (NCCL reads and writes the memory as that type).
pub unsafe trait NcclType: bytemuck::Pod {
    /// The NCCL data type of the elements.
    const DATA_TYPE: ncclDataType_t;
}

macro_rules! nccl_types {
    ($($rust:ty => $nccl:ident,)*) => {$(
        // SAFETY: the NCCL type has this Rust type's size and layout.
        unsafe impl NcclType for $rust {
            const DATA_TYPE: ncclDataType_t = ncclDataType_t::$nccl;
        }
    )*};
}

nccl_types! {
    i8 => ncclInt8,
    u8 => ncclUint8,
    i32 => ncclInt32,
    u32 => ncclUint32,
    i64 => ncclInt64,
    u64 => ncclUint64,
    f32 => ncclFloat32,
    f64 => ncclFloat64,
}

#[cfg(feature = "half")]
nccl_types! {
    half::f16 => ncclFloat16,
    half::bf16 => ncclBfloat16,
}

/// A reduction: how the ranks' elements combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The largest.
    Max,
    /// The smallest.
    Min,
    /// The mean: the sum divided by the number of ranks (NCCL 2.10 and later).
    Avg,
}

impl ReduceOp {
    /// The `ncclRedOp_t`.
    pub const fn as_raw(self) -> ncclRedOp_t {
        match self {
            Self::Sum => ncclRedOp_t::ncclSum,
            Self::Prod => ncclRedOp_t::ncclProd,
            Self::Max => ncclRedOp_t::ncclMax,
            Self::Min => ncclRedOp_t::ncclMin,
            Self::Avg => ncclRedOp_t::ncclAvg,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_types_map_to_nccl_types_of_their_size() {
        assert_eq!(f32::DATA_TYPE, ncclDataType_t::ncclFloat);
        assert_eq!(f64::DATA_TYPE, ncclDataType_t::ncclDouble);
        assert_eq!(i32::DATA_TYPE, ncclDataType_t::ncclInt);
        assert_eq!(u8::DATA_TYPE, ncclDataType_t::ncclUint8);
        assert_eq!(i8::DATA_TYPE, ncclDataType_t::ncclChar);
        assert_eq!(u64::DATA_TYPE, ncclDataType_t::ncclUint64);
        #[cfg(feature = "half")]
        {
            assert_eq!(half::f16::DATA_TYPE, ncclDataType_t::ncclHalf);
            assert_eq!(half::bf16::DATA_TYPE, ncclDataType_t::ncclBfloat16);
        }
    }

    #[test]
    fn operators_are_nccl_s() {
        assert_eq!(ReduceOp::Sum.as_raw().0, 0);
        assert_eq!(ReduceOp::Prod.as_raw().0, 1);
        assert_eq!(ReduceOp::Max.as_raw().0, 2);
        assert_eq!(ReduceOp::Min.as_raw().0, 3);
        assert_eq!(ReduceOp::Avg.as_raw().0, 4);
    }
}
