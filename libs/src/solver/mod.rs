//! Dense factorizations on NVIDIA's cuSOLVER (feature `solver`; `libcusolver` is loaded at run
//! time): LAPACK's LU, Cholesky, QR, symmetric eigensolver and SVD on `cuda-safe`'s buffers,
//! views and streams, in f32 and f64.
//!
//! - [`Solver`]: a cuSOLVER dense handle bound to a stream, with its workspaces. LU with
//!   partial pivoting ([`Solver::getrf`], [`Solver::getrs`]), Cholesky ([`Solver::potrf`],
//!   [`Solver::potrs`]), QR ([`Solver::geqrf`], [`Solver::ormqr`]), symmetric eigenvalues and
//!   eigenvectors ([`Solver::syevd`]), the SVD ([`Solver::gesvd`]) and batched Jacobi SVDs of
//!   matrices up to 32 x 32 ([`Solver::gesvdj_batched`]). The 64-bit `cusolverDnX` API where
//!   cuSOLVER has it; `ormqr` and `gesvdjBatched` are the legacy typed routines.
//! - [`Layout`]: a column-major matrix (rows, columns, leading dimension), checked against its
//!   memory before every call: a too-small buffer or leading dimension is
//!   [`Error::InvalidArgument`](cuda_safe::Error::InvalidArgument), never a GPU fault.
//! - [`Info`]: what a routine returns, its `info` output still on the GPU. Nothing waits for
//!   the GPU until [`Info::check`], which does, and turns a failure into a [`CusolverError`]:
//!   a singular matrix names its zero pivot ([`CusolverError::Singular`]), a matrix that is not
//!   positive definite its minor ([`CusolverError::NotPositiveDefinite`]).
//!
//! ```no_run
//! use cuda_safe_libs::solver::{Fill, Layout, Solver};
//!
//! let device = cuda_safe::Device::new(0)?;
//! let stream = device.create_stream(Default::default())?;
//! let pool = device.default_memory_resource()?;
//! let solver = Solver::new(&stream)?;
//! // Solve A x = b for the symmetric positive definite A = [[4, 2], [2, 3]] (column-major).
//! let mut a = pool.allocate_from_host(&[4.0f64, 2.0, 2.0, 3.0], &stream)?;
//! let mut b = pool.allocate_from_host(&[8.0f64, 7.0], &stream)?;
//! let layout = Layout::square(2);
//! solver.potrf::<f64>(Fill::Lower, &layout, &mut a)?.check()?;
//! solver.potrs::<f64>(Fill::Lower, &layout, &a, &Layout::new(2, 1), &mut b)?.check()?;
//! assert_eq!(b.to_vec::<f64>()?, [1.25, 1.5]);
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! cuSOLVER's statuses are [`CusolverError::Call`] (inside
//! [`Error::Library`](cuda_safe::Error::Library)); operands on other streams than the handle's
//! are ordered as a kernel launch orders its buffers. `docs/solver.md` in the repository has
//! the recipes; NVIDIA's reference is <https://docs.nvidia.com/cuda/cusolver/>.

mod element;
pub(crate) mod error;
mod factor;
mod handle;
mod info;
mod layout;
mod spectral;

pub use crate::operand::{Input, Operand, Output};
pub use element::SolverElement;
pub use error::CusolverError;
pub use handle::Solver;
pub use info::Info;
pub use layout::{Fill, Layout, Side, Transpose};
pub use spectral::{GESVDJ_BATCHED_MAX, SvdVectors};

pub use cusolver_sys;
