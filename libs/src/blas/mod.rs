//! Dense linear algebra on NVIDIA's cuBLAS and cuBLASLt (feature `blas`; `libcublas` and
//! `libcublasLt` are loaded at run time): the GEMMs and vector operations ML code needs, on
//! `cuda-safe`'s buffers, views, streams and graphs.
//!
//! - [`Blas`]: a cuBLAS handle bound to a stream, its workspace a buffer of this crate. GEMM
//!   ([`Blas::gemm`]) for f32, f64, f16 and bf16 (the 16-bit types in f32 compute, with 16-bit
//!   or f32 outputs; TF32 opted in with [`Blas::allow_tf32`]), plain, strided-batched and
//!   batched over separate matrices ([`GemmBatch`]); GEMV, AXPY, DOT, NRM2 and SCAL.
//! - [`Matmul`]: cuBLASLt. A [`MatmulPlan`] is made once per [`MatmulDesc`] (shape, types,
//!   epilogue: bias, ReLU, GELU and their auxiliary outputs; FP8 inputs with scale factors on
//!   sm_89 and later) and holds the algorithm cuBLASLt's heuristic chose; each
//!   [`Matmul::run`] is one `cublasLtMatmul`.
//!
//! ```no_run
//! use cuda_safe_libs::blas::{Blas, Gemm, Scalars};
//! use cuda_safe::Device;
//!
//! let device = Device::new(0)?;
//! device.set_current()?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let blas = Blas::new(&stream)?;
//! // Row-major: C (2 x 2) = A (2 x 3) B (3 x 2).
//! let a = pool.allocate_from_host(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &stream)?;
//! let b = pool.allocate_from_host(&[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &stream)?;
//! let mut c = pool.allocate_zeroed::<f32>(4, &stream)?;
//! blas.gemm::<f32, f32>(&Gemm::row_major(2, 2, 3), Scalars::host(1.0, 0.0), &a, &b, &mut c)?;
//! assert_eq!(c.to_vec::<f32>()?, [4.0, 5.0, 10.0, 11.0]);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! cuBLAS is column-major: [`Gemm`] explains the convention and makes row-major calls by
//! computing the transposed product (no copy). Every dimension, leading dimension, stride,
//! batch count and buffer length is checked before a call reaches the library, so a
//! too-small buffer is [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument), never a GPU
//! fault; the libraries' own refusals are [`CublasError`] (inside
//! [`Error::Library`](cuda_safe::Error::Library)). A call is the one library call it
//! wraps: no allocation, no stream or workspace set per call. Operands on other streams than
//! the handle's are ordered as a kernel launch orders its buffers. The workspace is fixed for
//! the handle's life, so a GEMM or a matmul captured into a graph replays as recorded.
//! `docs/blas.md` has the recipes and the performance notes.

mod cublas;
mod elements;
pub(crate) mod error;
mod layout;
mod lt;
mod operand;

pub use cublas::{Blas, GemmBatch, Gemv, GemvElement, Vector};
pub use elements::{BlasElement, F8E4M3, F8E5M2, GemmInput, VectorElement};
pub use error::CublasError;
pub use layout::{Gemm, StridedBatch, Transpose};
pub use lt::{Epilogue, Matmul, MatmulCall, MatmulDesc, MatmulElement, MatmulPlan};
pub use operand::{DEFAULT_WORKSPACE, Input, Operand, Output, Scalar, Scalars};

pub use cublas_sys;
pub use cublaslt_sys;
