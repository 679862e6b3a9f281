//! NVIDIA's math libraries on `cuda-safe`'s buffers, views, streams and graphs, each behind a
//! feature and loaded at run time (nothing links against them):
//!
//! - [`blas`] (feature `blas`): cuBLAS and cuBLASLt. `Blas` for GEMMs (plain, batched,
//!   strided-batched) and vector operations; `Matmul` for cuBLASLt plans with epilogues and FP8.
//! - [`rand`] (feature `rand`): cuRAND generators filling buffers on their stream.
//! - [`fft`] (feature `fft`): cuFFT plans (1-D, 2-D, 3-D; C2C, R2C, C2R; batched and strided),
//!   cached by description, executed on buffers and views with every size checked first.
//! - [`solver`] (feature `solver`): cuSOLVER's dense factorizations (LU, Cholesky, QR,
//!   symmetric eigenvalues, SVD), their `info` outputs read back as typed errors.
//! - [`sparse`] (feature `sparse`): cuSPARSE's generic API (SpMV, SpMM, SDDMM, SpGEMM,
//!   dense/sparse conversions) on CSR, COO and blocked-ELL matrices over the core's buffers.
//! - [`dnn`] (feature `dnn`): cuDNN's graph API. Convolutions with fused bias and activations,
//!   matmuls and reductions built as checked graphs, planned by cuDNN's heuristics, cached.
//!
//! Every call returns [`cuda_safe::Result`]: a library's refusal is
//! [`cuda_safe::Error::Library`] around this crate's [`blas::CublasError`],
//! [`rand::CurandError`] or [`fft::CufftError`] (`error.library_error::<CublasError>()` gives it
//! back), so one `?` serves kernels, copies, GEMMs and FFTs alike. `docs/blas.md` and
//! `docs/fft.md` in the repository have the recipes.
//!
//! ```no_run
//! # #[cfg(feature = "blas")] {
//! use cuda_safe::Device;
//! use cuda_safe_libs::blas::{Blas, Gemm, Scalars};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let blas = Blas::new(&stream)?;
//! let a = pool.allocate_from_host(&[1.0f32; 4], &stream)?;
//! let b = pool.allocate_from_host(&[2.0f32; 4], &stream)?;
//! let mut c = pool.allocate_zeroed::<f32>(4, &stream)?;
//! blas.gemm::<f32, f32>(&Gemm::row_major(2, 2, 2), Scalars::host(1.0, 0.0), &a, &b, &mut c)?;
//! assert_eq!(c.to_vec::<f32>()?, [4.0; 4]);
//! # }
//! # Ok::<(), cuda_safe::Error>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "blas")]
#[cfg_attr(docsrs, doc(cfg(feature = "blas")))]
pub mod blas;
#[cfg(feature = "dnn")]
#[cfg_attr(docsrs, doc(cfg(feature = "dnn")))]
pub mod dnn;
#[cfg(feature = "fft")]
#[cfg_attr(docsrs, doc(cfg(feature = "fft")))]
pub mod fft;
#[cfg(any(
    feature = "blas",
    feature = "rand",
    feature = "fft",
    feature = "solver",
    feature = "sparse",
    feature = "dnn"
))]
mod operand;
#[cfg(feature = "rand")]
#[cfg_attr(docsrs, doc(cfg(feature = "rand")))]
pub mod rand;
#[cfg(feature = "solver")]
#[cfg_attr(docsrs, doc(cfg(feature = "solver")))]
pub mod solver;
#[cfg(feature = "sparse")]
#[cfg_attr(docsrs, doc(cfg(feature = "sparse")))]
pub mod sparse;
