//! What the matrices hold and how the operations read them: value types ([`SparseValue`]),
//! index types ([`SparseIndex`]), [`Operation`], [`Order`], and the algorithm choices, each a
//! newtype of cuSPARSE's C value whose `Default` is cuSPARSE's default.

use bytemuck::Pod;

use cusparse_sys::{
    cudaDataType_t, cusparseIndexType_t, cusparseOperation_t, cusparseOrder_t, cusparseSDDMMAlg_t,
    cusparseSpGEMMAlg_t, cusparseSpMMAlg_t, cusparseSpMVAlg_t,
};

mod sealed {
    pub trait Value {}
    impl Value for f32 {}
    impl Value for f64 {}
    #[cfg(feature = "half")]
    impl Value for half::f16 {}
    #[cfg(feature = "half")]
    impl Value for half::bf16 {}

    pub trait Index {}
    impl Index for i32 {}
    impl Index for i64 {}
}

/// A value type of cuSPARSE's generic API: `f32` and `f64` everywhere, `half::f16` and
/// `half::bf16` (feature `half`) where cuSPARSE takes them (SpMV, SpMM, SDDMM and the
/// conversions), computed in f32. Sealed.
pub trait SparseValue: Pod + sealed::Value + std::fmt::Debug {
    /// The type of the scalars α and β, and of the computation: `Self` for f32 and f64, f32
    /// for the half types.
    type Scalar: Pod + std::fmt::Debug;
    /// The `cudaDataType` of the values.
    const DATA_TYPE: cudaDataType_t;
    /// The `cudaDataType` of the computation.
    const COMPUTE_TYPE: cudaDataType_t;
    /// The type's name, for messages.
    const NAME: &'static str;
}

impl SparseValue for f32 {
    type Scalar = f32;
    const DATA_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_32F;
    const COMPUTE_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_32F;
    const NAME: &'static str = "f32";
}

impl SparseValue for f64 {
    type Scalar = f64;
    const DATA_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_64F;
    const COMPUTE_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_64F;
    const NAME: &'static str = "f64";
}

#[cfg(feature = "half")]
impl SparseValue for half::f16 {
    type Scalar = f32;
    const DATA_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_16F;
    const COMPUTE_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_32F;
    const NAME: &'static str = "f16";
}

#[cfg(feature = "half")]
impl SparseValue for half::bf16 {
    type Scalar = f32;
    const DATA_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_16BF;
    const COMPUTE_TYPE: cudaDataType_t = cudaDataType_t::CUDA_R_32F;
    const NAME: &'static str = "bf16";
}

/// An index type of the sparse formats: `i32` or `i64` (cuSPARSE's `CUSPARSE_INDEX_32I` and
/// `CUSPARSE_INDEX_64I`). Every dimension and count of a matrix indexed by `i32` must fit it.
/// Sealed.
pub trait SparseIndex: Pod + sealed::Index + std::fmt::Debug {
    /// The `cusparseIndexType_t`.
    const INDEX_TYPE: cusparseIndexType_t;
    /// The largest value.
    const MAX: i64;
    /// The type's name, for messages.
    const NAME: &'static str;
    /// The index as an `i64`.
    fn to_i64(self) -> i64;
}

impl SparseIndex for i32 {
    const INDEX_TYPE: cusparseIndexType_t = cusparseIndexType_t::CUSPARSE_INDEX_32I;
    const MAX: i64 = i32::MAX as i64;
    const NAME: &'static str = "i32";
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
}

impl SparseIndex for i64 {
    const INDEX_TYPE: cusparseIndexType_t = cusparseIndexType_t::CUSPARSE_INDEX_64I;
    const MAX: i64 = i64::MAX;
    const NAME: &'static str = "i64";
    fn to_i64(self) -> i64 {
        self
    }
}

/// How an operation reads a matrix: as it is, or transposed (`op(A)` of cuSPARSE's
/// documentation; the value types are real, so the conjugate transpose is the transpose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Operation {
    /// `op(A) = A` (`CUSPARSE_OPERATION_NON_TRANSPOSE`).
    #[default]
    NonTranspose,
    /// `op(A) = Aᵀ` (`CUSPARSE_OPERATION_TRANSPOSE`).
    Transpose,
}

impl Operation {
    /// The C value.
    pub fn as_raw(self) -> cusparseOperation_t {
        match self {
            Self::NonTranspose => cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
            Self::Transpose => cusparseOperation_t::CUSPARSE_OPERATION_TRANSPOSE,
        }
    }

    /// `(rows, cols)` of `op(A)` for an A of `rows` x `cols`.
    pub(crate) fn apply(self, (rows, cols): (usize, usize)) -> (usize, usize) {
        match self {
            Self::NonTranspose => (rows, cols),
            Self::Transpose => (cols, rows),
        }
    }
}

/// The order of a dense matrix's elements in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Order {
    /// Each row's elements are consecutive; the leading dimension separates rows
    /// (`CUSPARSE_ORDER_ROW`).
    #[default]
    RowMajor,
    /// Each column's elements are consecutive; the leading dimension separates columns
    /// (`CUSPARSE_ORDER_COL`).
    ColumnMajor,
}

impl Order {
    /// The C value.
    pub fn as_raw(self) -> cusparseOrder_t {
        match self {
            Self::RowMajor => cusparseOrder_t::CUSPARSE_ORDER_ROW,
            Self::ColumnMajor => cusparseOrder_t::CUSPARSE_ORDER_COL,
        }
    }
}

/// Defines an algorithm choice: a newtype of the C enum, its named values, and `Default`.
macro_rules! algorithm {
    (
        $(#[$meta:meta])*
        $name:ident($raw:ident) { $($(#[$value_meta:meta])* $value:ident = $c:ident,)* }
    ) => {
        $(#[$meta])*
        ///
        /// A newtype of the C value, so an algorithm of a newer cuSPARSE can be named with
        /// [`from_raw`](Self::from_raw); `Default` is cuSPARSE's default.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name($raw);

        impl $name {
            $($(#[$value_meta])* pub const $value: Self = Self($raw::$c);)*

            /// The algorithm of C value `raw`.
            pub const fn from_raw(raw: $raw) -> Self {
                Self(raw)
            }

            /// The C value.
            pub const fn as_raw(self) -> $raw {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::DEFAULT
            }
        }
    };
}

algorithm! {
    /// The algorithm of an SpMV (`cusparseSpMVAlg_t`).
    SpMvAlg(cusparseSpMVAlg_t) {
        /// cuSPARSE's choice for the format (`CUSPARSE_SPMV_ALG_DEFAULT`).
        DEFAULT = CUSPARSE_SPMV_ALG_DEFAULT,
        /// CSR, deterministic across runs (`CUSPARSE_SPMV_CSR_ALG1`).
        CSR_ALG1 = CUSPARSE_SPMV_CSR_ALG1,
        /// CSR, deterministic, for irregular row lengths (`CUSPARSE_SPMV_CSR_ALG2`).
        CSR_ALG2 = CUSPARSE_SPMV_CSR_ALG2,
        /// COO (`CUSPARSE_SPMV_COO_ALG1`).
        COO_ALG1 = CUSPARSE_SPMV_COO_ALG1,
        /// COO, deterministic (`CUSPARSE_SPMV_COO_ALG2`).
        COO_ALG2 = CUSPARSE_SPMV_COO_ALG2,
    }
}

algorithm! {
    /// The algorithm of an SpMM (`cusparseSpMMAlg_t`).
    SpMmAlg(cusparseSpMMAlg_t) {
        /// cuSPARSE's choice for the format (`CUSPARSE_SPMM_ALG_DEFAULT`).
        DEFAULT = CUSPARSE_SPMM_ALG_DEFAULT,
        /// CSR (`CUSPARSE_SPMM_CSR_ALG1`).
        CSR_ALG1 = CUSPARSE_SPMM_CSR_ALG1,
        /// CSR, deterministic (`CUSPARSE_SPMM_CSR_ALG2`).
        CSR_ALG2 = CUSPARSE_SPMM_CSR_ALG2,
        /// CSR, for a few dense columns; the one with a preprocessing step
        /// (`CUSPARSE_SPMM_CSR_ALG3`).
        CSR_ALG3 = CUSPARSE_SPMM_CSR_ALG3,
        /// COO (`CUSPARSE_SPMM_COO_ALG1`).
        COO_ALG1 = CUSPARSE_SPMM_COO_ALG1,
        /// Blocked-ELL (`CUSPARSE_SPMM_BLOCKED_ELL_ALG1`).
        BLOCKED_ELL_ALG1 = CUSPARSE_SPMM_BLOCKED_ELL_ALG1,
    }
}

algorithm! {
    /// The algorithm of an SDDMM (`cusparseSDDMMAlg_t`).
    SddmmAlg(cusparseSDDMMAlg_t) {
        /// cuSPARSE's default (`CUSPARSE_SDDMM_ALG_DEFAULT`).
        DEFAULT = CUSPARSE_SDDMM_ALG_DEFAULT,
    }
}

algorithm! {
    /// The algorithm of an SpGEMM (`cusparseSpGEMMAlg_t`). Only the default: cuSPARSE's
    /// `CUSPARSE_SPGEMM_ALG2` and `_ALG3` size their second buffer through
    /// `cusparseSpGEMM_estimateMemory`, which this crate does not call yet.
    SpGemmAlg(cusparseSpGEMMAlg_t) {
        /// cuSPARSE's default (`CUSPARSE_SPGEMM_DEFAULT`).
        DEFAULT = CUSPARSE_SPGEMM_DEFAULT,
    }
}
