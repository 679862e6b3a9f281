//! Eigenvalues and singular values: the symmetric eigensolver ([`Solver::syevd`]), the SVD
//! ([`Solver::gesvd`]) and the batched Jacobi SVD of small matrices
//! ([`Solver::gesvdj_batched`], legacy API: the 64-bit API has no batched Jacobi SVD).

use std::ffi::c_char;

use super::element::SolverElement;
use super::element::sealed::Gesvdj;
use super::handle::Solver;
use super::info::{Info, Meaning};
use super::layout::{Fill, Layout, clamp_int, holds, int};
use crate::operand::Output;
use crate::solver::error::cusolver;
use cuda_safe::{Error, Result};
use cusolver_sys::cusolverEigMode_t;

/// The largest rows and columns of a matrix of [`Solver::gesvdj_batched`] (cuSOLVER's bound).
pub const GESVDJ_BATCHED_MAX: usize = 32;

/// Which singular vectors [`Solver::gesvd`] computes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SvdVectors {
    /// All of U (`m x m`) and Vᵀ (`n x n`): jobu = jobvt = `'A'`.
    #[default]
    All,
    /// The first `n` columns of U (`m x n`) and all of Vᵀ (`n x n`, A having `m >= n`):
    /// jobu = jobvt = `'S'`.
    Thin,
    /// None (U and Vᵀ are not touched and may be empty): `'N'`.
    None,
}

impl SvdVectors {
    /// The job letter.
    fn job(self) -> c_char {
        (match self {
            Self::All => b'A',
            Self::Thin => b'S',
            Self::None => b'N',
        }) as c_char
    }
}

/// Whether a routine computes vectors.
fn eig_mode(vectors: bool) -> cusolverEigMode_t {
    if vectors {
        cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
    } else {
        cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
    }
}

impl Solver {
    /// The eigenvalues of the symmetric `n x n` A (read from its `fill` triangle), in
    /// ascending order into `w` (`n` elements), by divide and conquer; with `vectors`, A is
    /// overwritten by the orthonormal eigenvectors (column `j` for `w[j]`), so A = V diag(w)
    /// Vᵀ; without, A's `fill` triangle is destroyed.
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnXsyevd)]
    #[doc = cusolver_sys::api_doc!(cusolverDnXsyevd_bufferSize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for A not square, a leading dimension below the rows, memory
    /// that holds fewer elements than A spans or fewer than `n` in `w`; cuSOLVER's error. No
    /// convergence is reported by the returned [`Info`]
    /// ([`CusolverError::NoConvergence`](super::CusolverError::NoConvergence)).
    #[doc(alias = "cusolverDnXsyevd", alias = "cusolverDnXsyevd_bufferSize")]
    pub fn syevd<T: SolverElement>(
        &self,
        fill: Fill,
        vectors: bool,
        layout: &Layout,
        a: &mut impl Output<T>,
        w: &mut impl Output<T>,
    ) -> Result<Info> {
        let (a, w) = (a.operand_mut()?, w.operand_mut()?);
        layout.square_only("A")?;
        let dims = layout.check("A", a.len())?;
        holds(&"the eigenvalues", layout.rows(), w.len())?;
        let (lib, raw, params) = self.parts();
        let (ty, jobz, uplo) = (T::DATA_TYPE, eig_mode(vectors), fill.as_raw());
        self.routine(
            ("cusolverDnXsyevd", Meaning::Convergence, None),
            [a, w],
            || {
                let (mut device, mut host) = (0, 0);
                // SAFETY: a live handle; A and W checked; valid out-pointers.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXsyevd_bufferSize(
                            raw,
                            params,
                            jobz,
                            uplo,
                            dims.rows,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            w.ptr_mut(),
                            ty,
                            &mut device,
                            &mut host
                        )
                    )
                }?;
                Ok((device, host))
            },
            |work, info| {
                // SAFETY: A and W hold what the checked dimensions span; the workspaces what
                // the sizes asked for; `info` one int; ordered with the handle's stream.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXsyevd(
                            raw,
                            params,
                            jobz,
                            uplo,
                            dims.rows,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            w.ptr_mut(),
                            ty,
                            work.device,
                            work.device_bytes,
                            work.host,
                            work.host_bytes,
                            info as *mut i32
                        )
                    )
                }
            },
        )
    }

    /// The singular value decomposition A = U Σ Vᵀ of the `m x n` A (`m >= n`, as cuSOLVER
    /// requires: factor Aᵀ for a wide matrix), A destroyed: the `n` singular values in
    /// descending order into `s`, and as `vectors` says U (packed, `m` rows: `m` columns for
    /// [`SvdVectors::All`], `n` for [`SvdVectors::Thin`]) and Vᵀ (packed, `n x n`; row `j` is
    /// the right singular vector of `s[j]`).
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnXgesvd)]
    #[doc = cusolver_sys::api_doc!(cusolverDnXgesvd_bufferSize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `m < n`, memory that holds fewer elements than A, U or
    /// Vᵀ span, or fewer than `n` in `s`; cuSOLVER's error. No convergence is reported by the
    /// returned [`Info`].
    #[doc(alias = "cusolverDnXgesvd", alias = "cusolverDnXgesvd_bufferSize")]
    pub fn gesvd<T: SolverElement>(
        &self,
        vectors: SvdVectors,
        layout: &Layout,
        a: &mut impl Output<T>,
        s: &mut impl Output<T>,
        u: &mut impl Output<T>,
        vt: &mut impl Output<T>,
    ) -> Result<Info> {
        let (a, s, u, vt) = (
            a.operand_mut()?,
            s.operand_mut()?,
            u.operand_mut()?,
            vt.operand_mut()?,
        );
        let (m, n) = (layout.rows(), layout.cols());
        if m < n {
            return Err(Error::invalid_argument(format!(
                "cusolverDnXgesvd factors matrices with at least as many rows as columns; A is \
                 {layout}: factor its transpose"
            )));
        }
        let dims = layout.check("A", a.len())?;
        holds(&"the singular values", n, s.len())?;
        let u_layout = Layout::new(m, if vectors == SvdVectors::All { m } else { n });
        let vt_layout = Layout::square(n);
        let (u_ptr, vt_ptr) = if vectors == SvdVectors::None {
            (std::ptr::null_mut(), std::ptr::null_mut())
        } else {
            u_layout.check("U", u.len())?;
            vt_layout.check("Vᵀ", vt.len())?;
            (u.ptr_mut(), vt.ptr_mut())
        };
        let (ldu, ldvt) = (dims.rows.max(1), dims.cols.max(1));
        let (lib, raw, params) = self.parts();
        let (ty, job) = (T::DATA_TYPE, vectors.job());
        self.routine(
            ("cusolverDnXgesvd", Meaning::Convergence, None),
            [a, s, u, vt],
            || {
                let (mut device, mut host) = (0, 0);
                // SAFETY: a live handle; the operands checked; valid out-pointers.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXgesvd_bufferSize(
                            raw,
                            params,
                            job,
                            job,
                            dims.rows,
                            dims.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            s.ptr_mut(),
                            ty,
                            u_ptr,
                            ldu,
                            ty,
                            vt_ptr,
                            ldvt,
                            ty,
                            &mut device,
                            &mut host
                        )
                    )
                }?;
                Ok((device, host))
            },
            |work, info| {
                // SAFETY: A, S, U and Vᵀ hold what the checked dimensions span (U and Vᵀ are
                // null and untouched without vectors); the workspaces what the sizes asked
                // for; `info` one int; ordered with the handle's stream.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXgesvd(
                            raw,
                            params,
                            job,
                            job,
                            dims.rows,
                            dims.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            s.ptr_mut(),
                            ty,
                            u_ptr,
                            ldu,
                            ty,
                            vt_ptr,
                            ldvt,
                            ty,
                            work.device,
                            work.device_bytes,
                            work.host,
                            work.host_bytes,
                            info as *mut i32
                        )
                    )
                }
            },
        )
    }

    /// The SVDs A = U Σ Vᵀ of `batch` small matrices (each `m x n` with `m, n <=`
    /// [`GESVDJ_BATCHED_MAX`]) by Jacobi's method, with cuSOLVER's default tolerance and
    /// sweeps: matrix `i` of A starts at `i * ld * n` (`layout` describes one), its
    /// `min(m, n)` singular values (descending) at `i * min(m, n)` of `s`, its U (`m x m`,
    /// packed) at `i * m * m` of `u` and its V (`n x n`, packed: V, not Vᵀ) at `i * n * n` of
    /// `v`. A is destroyed.
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnSgesvdjBatched)]
    #[doc = cusolver_sys::api_doc!(cusolverDnDgesvdjBatched)]
    #[doc = cusolver_sys::api_doc!(cusolverDnSgesvdjBatched_bufferSize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty batch, a matrix past 32 x 32, memory that
    /// holds fewer elements than the batch spans; cuSOLVER's error. The returned [`Info`]
    /// holds one value per matrix and names the first that did not converge.
    #[doc(
        alias = "cusolverDnSgesvdjBatched",
        alias = "cusolverDnDgesvdjBatched",
        alias = "cusolverDnSgesvdjBatched_bufferSize"
    )]
    pub fn gesvdj_batched<T: SolverElement>(
        &self,
        layout: &Layout,
        batch: usize,
        a: &mut impl Output<T>,
        s: &mut impl Output<T>,
        u: &mut impl Output<T>,
        v: &mut impl Output<T>,
    ) -> Result<Info> {
        let (a, s, u, v) = (
            a.operand_mut()?,
            s.operand_mut()?,
            u.operand_mut()?,
            v.operand_mut()?,
        );
        let (m, n) = (layout.rows(), layout.cols());
        if batch == 0 || m > GESVDJ_BATCHED_MAX || n > GESVDJ_BATCHED_MAX {
            return Err(Error::invalid_argument(format!(
                "a batched Jacobi SVD takes at least one matrix of at most \
                 {GESVDJ_BATCHED_MAX} x {GESVDJ_BATCHED_MAX}: here {batch} of {layout}"
            )));
        }
        let [rows, cols, lda] = layout.check_int("A", usize::MAX)?;
        let per = |what: &str, one: usize, len: usize| {
            let all = one.checked_mul(batch).ok_or_else(|| {
                Error::invalid_argument(format!("a batch of {batch} {what} overflows"))
            })?;
            holds(&format_args!("the batch of {batch} {what}"), all, len)
        };
        per("As", layout.leading_dimension() * n, a.len())?;
        per("singular value sets", m.min(n), s.len())?;
        per("Us", m * m, u.len())?;
        per("Vs", n * n, v.len())?;
        let call = Gesvdj {
            jobz: eig_mode(true),
            dims: [rows, cols],
            a: a.as_raw(),
            lda,
            s: s.as_raw(),
            u: u.as_raw(),
            ldu: rows.max(1),
            v: v.as_raw(),
            ldv: cols.max(1),
            params: self.gesvdj_info()?,
            batch: int("the batch", batch)?,
        };
        let (lib, raw, _) = self.parts();
        let elements = size_of::<T>();
        self.routine(
            (T::GESVDJ, Meaning::Convergence, Some(batch)),
            [a, s, u, v],
            || {
                // SAFETY: a live handle; the operands checked for the batch.
                let lwork = unsafe { T::gesvdj_size(lib, raw, &call) }?;
                Ok((usize::try_from(lwork).unwrap_or(0) * elements, 0))
            },
            |work, info| {
                let lwork = clamp_int(work.device_bytes / elements);
                // SAFETY: as above; the workspace holds `lwork` elements, `info` one int per
                // matrix.
                unsafe { T::gesvdj(lib, raw, &call, work.device as u64, lwork, info) }
            },
        )
    }
}
