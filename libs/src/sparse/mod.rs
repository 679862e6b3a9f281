//! Sparse linear algebra on NVIDIA's cuSPARSE (feature `sparse`; `libcusparse` is loaded at run
//! time): the generic API on `cuda-safe`'s buffers, views and streams.
//!
//! - [`Sparse`]: a cuSPARSE handle bound to a stream, with a work area from a memory resource.
//!   Sparse matrix times dense vector ([`Sparse::spmv`], with [`Sparse::spmv_preprocess`]) and
//!   times dense matrix ([`Sparse::spmm`], [`Sparse::spmm_preprocess`]); the sampled dense
//!   product ([`Sparse::sddmm`]); sparse times sparse ([`Sparse::spgemm`], returning a new
//!   [`Csr`]); the conversions [`Sparse::dense_to_csr`] and [`Sparse::sparse_to_dense`].
//! - [`SparseMatrix`]: a CSR, COO or blocked-ELL matrix over buffers, borrowed for its life;
//!   [`DenseMatrix`] and [`DenseVector`]. The values are read-only when borrowed with `&` and
//!   may be an output when borrowed with `&mut` ([`Values`]). Lengths and dimensions are
//!   checked when a descriptor is made, shapes and outputs before each call: a mismatch is
//!   [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument), never a GPU fault.
//! - Indices: a column index past `cols` would make cuSPARSE read (or, transposed, write)
//!   outside the operands. [`SparseMatrix::csr`] and the other checked constructors copy the
//!   index arrays to the host and check them (waiting for their stream); the `unsafe`
//!   `_unchecked` constructors take them as the caller's promise, for hot paths and for
//!   matrices built correct by construction.
//! - Values `f32` and `f64` (and `half::f16`, `half::bf16` with the feature `half`, where
//!   cuSPARSE takes them, computed in f32) ([`SparseValue`]); indices `i32` and `i64`
//!   ([`SparseIndex`]); algorithms as newtypes of the C values ([`SpMvAlg`], [`SpMmAlg`],
//!   [`SddmmAlg`], [`SpGemmAlg`]) whose `Default` is cuSPARSE's.
//!
//! ```no_run
//! use cuda_safe_libs::sparse::{DenseVector, Operation, SpMvAlg, Sparse, SparseMatrix};
//!
//! let device = cuda_safe::Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let sparse = Sparse::new(&stream)?;
//! // The 3 x 3 matrix [[2, -1, 0], [-1, 2, -1], [0, -1, 2]] in CSR.
//! let offsets = pool.allocate_from_host(&[0i32, 2, 5, 7], &stream)?;
//! let columns = pool.allocate_from_host(&[0i32, 1, 0, 1, 2, 1, 2], &stream)?;
//! let values = pool.allocate_from_host(&[2.0f64, -1.0, -1.0, 2.0, -1.0, -1.0, 2.0], &stream)?;
//! let x = pool.allocate_from_host(&[1.0f64, 2.0, 3.0], &stream)?;
//! let mut y = pool.allocate_zeroed::<f64>(3, &stream)?;
//! let a = SparseMatrix::<i32, f64>::csr((3, 3, 7), &offsets, &columns, &values)?;
//! let x_vec = DenseVector::new(&x)?;
//! let mut y_vec = DenseVector::new(&mut y)?;
//! sparse.spmv(Operation::NonTranspose, (1.0, 0.0), &a, &x_vec, &mut y_vec, SpMvAlg::DEFAULT)?;
//! drop(y_vec);
//! assert_eq!(y.to_vec::<f64>()?, [0.0, 0.0, 4.0]);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! An SpMV, SpMM, SDDMM or sparse-to-dense conversion is its size query (remembered for the
//! same descriptors) and the one cuSPARSE call, queued on the handle's stream (operands on
//! other streams are ordered as a kernel launch orders its buffers), so it can be captured into
//! a graph once the handle's work area is large enough. cuSPARSE's refusals are
//! [`CusparseError`] inside [`Error::Library`](cuda_safe::Error::Library); a missing
//! `libcusparse` or entry point is [`Error::Load`](cuda_safe::Error::Load). `docs/sparse.md` in
//! the repository has the recipes. NVIDIA's documentation:
//! <https://docs.nvidia.com/cuda/cusparse/>.

mod convert;
mod dense;
mod descr;
mod element;
pub(crate) mod error;
mod handle;
mod matrix;
mod ops;

pub use convert::Csr;
pub use dense::{DenseMatrix, DenseVector};
pub use descr::Values;
pub use element::{
    Operation, Order, SddmmAlg, SpGemmAlg, SpMmAlg, SpMvAlg, SparseIndex, SparseValue,
};
pub use error::CusparseError;
pub use handle::Sparse;
pub use matrix::{SparseFormat, SparseMatrix};
pub use ops::Scalars;

pub use crate::operand::{Input, Operand, Output};
pub use cusparse_sys;
