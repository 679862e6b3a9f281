//! The factorizations and their solves: LU with partial pivoting ([`Solver::getrf`],
//! [`Solver::getrs`]), Cholesky ([`Solver::potrf`], [`Solver::potrs`]) and QR
//! ([`Solver::geqrf`], [`Solver::ormqr`]). The 64-bit `cusolverDnX` API but for `ormqr`, which
//! it lacks.

use super::element::SolverElement;
use super::element::sealed::Ormqr;
use super::handle::Solver;
use super::info::{Info, Meaning};
use super::layout::{Fill, Layout, Side, Transpose, clamp_int, holds};
use crate::operand::{Input, Output};
use crate::solver::error::cusolver;
use cuda_safe::{Error, Result};

impl Solver {
    /// The LU factorization with partial pivoting of the `m x n` matrix A, in place: P A = L U,
    /// L unit lower triangular (below the diagonal of A), U upper triangular (on and above it),
    /// row `i` interchanged with row `pivots[i]` (from 1, as LAPACK; `min(m, n)` of them).
    ///
    /// ```no_run
    /// use cuda_safe_libs::solver::{Layout, Solver, Transpose};
    ///
    /// let device = cuda_safe::Device::new(0)?;
    /// let stream = device.create_stream(Default::default())?;
    /// let pool = device.default_memory_resource()?;
    /// let solver = Solver::new(&stream)?;
    /// // A = [[4, 3], [6, 3]] column-major, b = [10, 12]: x = [1, 2].
    /// let mut a = pool.allocate_from_host(&[4.0f64, 6.0, 3.0, 3.0], &stream)?;
    /// let mut b = pool.allocate_from_host(&[10.0f64, 12.0], &stream)?;
    /// let mut pivots = pool.allocate_zeroed::<i64>(2, &stream)?;
    /// let layout = Layout::square(2);
    /// solver.getrf::<f64>(&layout, &mut a, &mut pivots)?.check()?;
    /// solver.getrs::<f64>(Transpose::No, &layout, &a, &pivots, &Layout::new(2, 1), &mut b)?.check()?;
    /// assert_eq!(b.to_vec::<f64>()?, [1.0, 2.0]);
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnXgetrf)]
    #[doc = cusolver_sys::api_doc!(cusolverDnXgetrf_bufferSize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a leading dimension below the rows, memory that holds
    /// fewer elements than the matrix spans, or fewer than `min(m, n)` pivots (checked before
    /// the call); cuSOLVER's error. A singular matrix is reported by the returned [`Info`]
    /// ([`CusolverError::Singular`](super::CusolverError::Singular), naming the pivot).
    #[doc(alias = "cusolverDnXgetrf", alias = "cusolverDnXgetrf_bufferSize")]
    pub fn getrf<T: SolverElement>(
        &self,
        layout: &Layout,
        a: &mut impl Output<T>,
        pivots: &mut impl Output<i64>,
    ) -> Result<Info> {
        let (a, pivots) = (a.operand_mut()?, pivots.operand_mut()?);
        let dims = layout.check("A", a.len())?;
        let steps = layout.rows().min(layout.cols());
        holds(&"the pivots", steps, pivots.len())?;
        let (lib, raw, params) = self.parts();
        let ty = T::DATA_TYPE;
        self.routine(
            ("cusolverDnXgetrf", Meaning::Pivot, None),
            [a, pivots],
            || {
                let (mut device, mut host) = (0, 0);
                // SAFETY: a live handle; A checked for its dimensions; valid out-pointers.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXgetrf_bufferSize(
                            raw,
                            params,
                            dims.rows,
                            dims.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            &mut device,
                            &mut host
                        )
                    )
                }?;
                Ok((device, host))
            },
            |work, info| {
                // SAFETY: A holds the checked matrix, `pivots` min(m, n) i64s, the workspaces
                // the sizes asked for and `info` one int; the operands are ordered with the
                // handle's stream.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXgetrf(
                            raw,
                            params,
                            dims.rows,
                            dims.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            pivots.typed(),
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

    /// Solves op(A) X = B with the LU factors and pivots of [`getrf`](Self::getrf) (A `n x n`),
    /// B (`n x nrhs`) overwritten by X.
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnXgetrs)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for A not square, B's rows not A's order, fewer than `n`
    /// pivots, or as [`getrf`](Self::getrf); cuSOLVER's error.
    #[doc(alias = "cusolverDnXgetrs")]
    pub fn getrs<T: SolverElement>(
        &self,
        trans: Transpose,
        layout: &Layout,
        a: &impl Input<T>,
        pivots: &impl Input<i64>,
        b_layout: &Layout,
        b: &mut impl Output<T>,
    ) -> Result<Info> {
        let (a, pivots, b) = (a.operand()?, pivots.operand()?, b.operand_mut()?);
        layout.square_only("A")?;
        let dims = layout.check("A", a.len())?;
        same_rows(layout, b_layout)?;
        let bd = b_layout.check("B", b.len())?;
        holds(&"the pivots", layout.rows(), pivots.len())?;
        let (lib, raw, params) = self.parts();
        let ty = T::DATA_TYPE;
        self.routine(
            ("cusolverDnXgetrs", Meaning::ParametersOnly, None),
            [a, pivots, b],
            || Ok((0, 0)),
            |_, info| {
                // SAFETY: A, the pivots and B hold what the checked dimensions span; `info`
                // one int; ordered with the handle's stream.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXgetrs(
                            raw,
                            params,
                            trans.as_raw(),
                            dims.rows,
                            bd.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            pivots.typed(),
                            ty,
                            b.ptr_mut(),
                            bd.ld,
                            info as *mut i32
                        )
                    )
                }
            },
        )
    }

    /// The Cholesky factorization of the symmetric positive definite `n x n` A, in place, from
    /// and into its `fill` triangle: A = L Lᵀ ([`Fill::Lower`]) or Uᵀ U ([`Fill::Upper`]); the
    /// other triangle is not touched.
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnXpotrf)]
    #[doc = cusolver_sys::api_doc!(cusolverDnXpotrf_bufferSize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for A not square or as [`getrf`](Self::getrf); cuSOLVER's
    /// error. A matrix that is not positive definite is reported by the returned [`Info`]
    /// ([`CusolverError::NotPositiveDefinite`](super::CusolverError::NotPositiveDefinite),
    /// naming the minor).
    #[doc(alias = "cusolverDnXpotrf", alias = "cusolverDnXpotrf_bufferSize")]
    pub fn potrf<T: SolverElement>(
        &self,
        fill: Fill,
        layout: &Layout,
        a: &mut impl Output<T>,
    ) -> Result<Info> {
        let a = a.operand_mut()?;
        layout.square_only("A")?;
        let dims = layout.check("A", a.len())?;
        let (lib, raw, params) = self.parts();
        let ty = T::DATA_TYPE;
        self.routine(
            ("cusolverDnXpotrf", Meaning::Minor, None),
            [a],
            || {
                let (mut device, mut host) = (0, 0);
                // SAFETY: a live handle; A checked; valid out-pointers.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXpotrf_bufferSize(
                            raw,
                            params,
                            fill.as_raw(),
                            dims.rows,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            &mut device,
                            &mut host
                        )
                    )
                }?;
                Ok((device, host))
            },
            |work, info| {
                // SAFETY: as in `getrf`.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXpotrf(
                            raw,
                            params,
                            fill.as_raw(),
                            dims.rows,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
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

    /// Solves A X = B with the Cholesky factor of [`potrf`](Self::potrf) (the same `fill`),
    /// B (`n x nrhs`) overwritten by X.
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnXpotrs)]
    /// # Errors
    ///
    /// As [`getrs`](Self::getrs).
    #[doc(alias = "cusolverDnXpotrs")]
    pub fn potrs<T: SolverElement>(
        &self,
        fill: Fill,
        layout: &Layout,
        a: &impl Input<T>,
        b_layout: &Layout,
        b: &mut impl Output<T>,
    ) -> Result<Info> {
        let (a, b) = (a.operand()?, b.operand_mut()?);
        layout.square_only("A")?;
        let dims = layout.check("A", a.len())?;
        same_rows(layout, b_layout)?;
        let bd = b_layout.check("B", b.len())?;
        let (lib, raw, params) = self.parts();
        let ty = T::DATA_TYPE;
        self.routine(
            ("cusolverDnXpotrs", Meaning::ParametersOnly, None),
            [a, b],
            || Ok((0, 0)),
            |_, info| {
                // SAFETY: A and B hold what the checked dimensions span; `info` one int.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXpotrs(
                            raw,
                            params,
                            fill.as_raw(),
                            dims.rows,
                            bd.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            b.ptr_mut(),
                            bd.ld,
                            info as *mut i32
                        )
                    )
                }
            },
        )
    }

    /// The QR factorization of the `m x n` A, in place: R on and above the diagonal, the
    /// Householder vectors below it, their scalars in `tau` (`min(m, n)` of them); Q is
    /// applied by [`ormqr`](Self::ormqr).
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnXgeqrf)]
    #[doc = cusolver_sys::api_doc!(cusolverDnXgeqrf_bufferSize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for fewer than `min(m, n)` elements of `tau`, or as
    /// [`getrf`](Self::getrf); cuSOLVER's error.
    #[doc(alias = "cusolverDnXgeqrf", alias = "cusolverDnXgeqrf_bufferSize")]
    pub fn geqrf<T: SolverElement>(
        &self,
        layout: &Layout,
        a: &mut impl Output<T>,
        tau: &mut impl Output<T>,
    ) -> Result<Info> {
        let (a, tau) = (a.operand_mut()?, tau.operand_mut()?);
        let dims = layout.check("A", a.len())?;
        holds(&"tau", layout.rows().min(layout.cols()), tau.len())?;
        let (lib, raw, params) = self.parts();
        let ty = T::DATA_TYPE;
        self.routine(
            ("cusolverDnXgeqrf", Meaning::ParametersOnly, None),
            [a, tau],
            || {
                let (mut device, mut host) = (0, 0);
                // SAFETY: a live handle; A and tau checked; valid out-pointers.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXgeqrf_bufferSize(
                            raw,
                            params,
                            dims.rows,
                            dims.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            tau.ptr_mut(),
                            ty,
                            &mut device,
                            &mut host
                        )
                    )
                }?;
                Ok((device, host))
            },
            |work, info| {
                // SAFETY: as in `getrf`, tau holding min(m, n) elements.
                unsafe {
                    cusolver!(
                        lib,
                        cusolverDnXgeqrf(
                            raw,
                            params,
                            dims.rows,
                            dims.cols,
                            ty,
                            a.ptr_mut(),
                            dims.ld,
                            ty,
                            tau.ptr_mut(),
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

    /// C = op(Q) C ([`Side::Left`]) or C op(Q) ([`Side::Right`]), Q being the product of the
    /// `k` Householder reflectors [`geqrf`](Self::geqrf) left in the columns of A
    /// (`a_layout`: `m x k` for the left side, `n x k` for the right, C being `m x n`) and
    /// `tau`. With C the identity (`m x m`), Q itself.
    ///
    #[doc = cusolver_sys::api_doc!(cusolverDnSormqr)]
    #[doc = cusolver_sys::api_doc!(cusolverDnDormqr)]
    #[doc = cusolver_sys::api_doc!(cusolverDnDormqr_bufferSize)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for A's rows not C's rows (left) or columns (right), more
    /// reflectors than that, fewer than `k` elements of `tau`, a dimension past cuSOLVER's
    /// 32-bit `int` (this routine has no 64-bit form), or as [`getrf`](Self::getrf);
    /// cuSOLVER's error.
    #[doc(
        alias = "cusolverDnSormqr",
        alias = "cusolverDnDormqr",
        alias = "cusolverDnDormqr_bufferSize"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn ormqr<T: SolverElement>(
        &self,
        side: Side,
        trans: Transpose,
        a_layout: &Layout,
        a: &impl Input<T>,
        tau: &impl Input<T>,
        c_layout: &Layout,
        c: &mut impl Output<T>,
    ) -> Result<Info> {
        let (a, tau, c) = (a.operand()?, tau.operand()?, c.operand_mut()?);
        let [_, k, lda] = a_layout.check_int("A", a.len())?;
        let [m, n, ldc] = c_layout.check_int("C", c.len())?;
        let order = match side {
            Side::Left => c_layout.rows(),
            Side::Right => c_layout.cols(),
        };
        if a_layout.rows() != order || a_layout.cols() > order {
            return Err(Error::invalid_argument(format!(
                "the reflectors A ({a_layout}) of a product on the {side:?} of C ({c_layout}) \
                 must have {order} rows and at most {order} columns"
            )));
        }
        holds(&"tau", a_layout.cols(), tau.len())?;
        let call = Ormqr {
            side: side.as_raw(),
            trans: trans.as_raw(),
            dims: [m, n, k],
            a: a.as_raw(),
            lda,
            tau: tau.as_raw(),
            c: c.as_raw(),
            ldc,
        };
        let (lib, raw, _) = self.parts();
        let elements = size_of::<T>();
        self.routine(
            (T::ORMQR, Meaning::ParametersOnly, None),
            [a, tau, c],
            || {
                // SAFETY: a live handle; the operands checked for the dimensions.
                let lwork = unsafe { T::ormqr_size(lib, raw, &call) }?;
                Ok((usize::try_from(lwork).unwrap_or(0) * elements, 0))
            },
            |work, info| {
                let lwork = clamp_int(work.device_bytes / elements);
                // SAFETY: as above; the workspace holds `lwork` elements, `info` one int.
                unsafe { T::ormqr(lib, raw, &call, work.device as u64, lwork, info) }
            },
        )
    }
}

/// Refuses right-hand sides whose rows are not A's order.
fn same_rows(a: &Layout, b: &Layout) -> Result<()> {
    if a.rows() == b.rows() {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "B ({b}) must have the {} rows of A ({a})",
            a.rows()
        )))
    }
}
