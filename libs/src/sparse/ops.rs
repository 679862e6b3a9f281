//! The products of a [`Sparse`] handle that write a dense or a given sparse output: SpMV, SpMM
//! (and their preprocessing) and SDDMM, each checked (shapes, formats, writable outputs) before
//! its buffer-size query and its call.

use std::ffi::c_void;

use super::dense::{DenseMatrix, DenseVector};
use super::element::{Operation, SddmmAlg, SpMmAlg, SpMvAlg, SparseIndex, SparseValue};
use super::handle::{SizeKey, Sparse};
use super::matrix::{Prepared, SparseFormat, SparseMatrix};
use crate::sparse::error::cusparse;
use cuda_safe::ordering::ordered;
use cuda_safe::{Error, Result};

/// The scalars α and β of an operation, as host values of its computation type.
pub type Scalars<T> = (<T as SparseValue>::Scalar, <T as SparseValue>::Scalar);

impl Sparse {
    /// `y = α op(A) x + β y`, the sparse matrix-vector product (CSR or COO `A`).
    ///
    /// The work area is the handle's, unless `a` was preprocessed
    /// ([`spmv_preprocess`](Self::spmv_preprocess)) for the same operation and algorithm,
    /// whose buffer it then uses.
    ///
    /// ```no_run
    /// use cuda_safe_libs::sparse::{DenseVector, Operation, SpMvAlg, Sparse, SparseMatrix};
    ///
    /// let device = cuda_safe::Device::new(0)?;
    /// let stream = device.create_stream(Default::default())?;
    /// let pool = device.default_memory_resource()?;
    /// // [[1, 2], [0, 3]] in CSR.
    /// let offsets = pool.allocate_from_host(&[0i32, 2, 3], &stream)?;
    /// let columns = pool.allocate_from_host(&[0i32, 1, 1], &stream)?;
    /// let values = pool.allocate_from_host(&[1.0f32, 2.0, 3.0], &stream)?;
    /// let x = pool.allocate_from_host(&[1.0f32, 1.0], &stream)?;
    /// let mut y = pool.allocate_zeroed::<f32>(2, &stream)?;
    /// let sparse = Sparse::new(&stream)?;
    /// let a = SparseMatrix::<i32, f32>::csr((2, 2, 3), &offsets, &columns, &values)?;
    /// let (xv, mut yv) = (DenseVector::new(&x)?, DenseVector::new(&mut y)?);
    /// sparse.spmv(Operation::NonTranspose, (1.0, 0.0), &a, &xv, &mut yv, SpMvAlg::DEFAULT)?;
    /// drop((xv, yv));
    /// assert_eq!(y.to_vec::<f32>()?, [3.0, 3.0]);
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    ///
    #[doc = cusparse_sys::api_doc!(cusparseSpMV_bufferSize)]
    #[doc = cusparse_sys::api_doc!(cusparseSpMV)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a blocked-ELL `a`, lengths that do not match `op(A)`, a
    /// read-only `y`, `a` preprocessed for another operation or algorithm, or a work area that
    /// would grow during a capture (checked before the call); cuSPARSE's error.
    #[doc(alias = "cusparseSpMV", alias = "cusparseSpMV_bufferSize")]
    pub fn spmv<I: SparseIndex, T: SparseValue>(
        &self,
        op: Operation,
        (alpha, beta): Scalars<T>,
        a: &SparseMatrix<'_, I, T>,
        x: &DenseVector<'_, T>,
        y: &mut DenseVector<'_, T>,
        alg: SpMvAlg,
    ) -> Result<()> {
        spmv_shapes(op, a, x, y)?;
        let (cusparse, handle) = self.parts();
        let (alpha, beta) = (&raw const alpha, &raw const beta);
        let (op_raw, compute) = (op.as_raw(), T::COMPUTE_TYPE);
        let [s0, s1, s2] = a.streams(self.stream())?;
        // The preprocessing buffer is ordered as an operand: another handle's stream may have
        // written it, and frees it.
        let streams = [
            Some(s0),
            Some(s1),
            Some(s2),
            Some(x.on(self.stream())?),
            Some(y.on(self.stream())?),
            a.prepared.as_ref().map(|prepared| prepared.buffer.stream()),
        ];
        let _current = self.current()?;
        let run = |buffer: *mut c_void| {
            ordered(self.stream(), streams, || {
                // SAFETY: live handle and descriptors whose memory holds what their shapes
                // need (checked when they were made), shapes matching `op(A)` (checked above),
                // `y` writable, host scalars of the compute type, a work area of the size
                // cuSPARSE asked for (or the matrix's preprocessing buffer).
                unsafe {
                    cusparse!(
                        cusparse,
                        cusparseSpMV(
                            handle,
                            op_raw,
                            alpha.cast(),
                            a.as_raw(),
                            x.as_raw(),
                            beta.cast(),
                            y.as_raw(),
                            compute,
                            alg.as_raw(),
                            buffer
                        )
                    )
                }
            })
        };
        if let Some(buffer) = prepared(a, ("cusparseSpMV", op.as_raw().0, 0, alg.as_raw().0))? {
            return run(buffer);
        }
        let key = size_key(
            "SpMV",
            &[&a.key(), &x.key(), &y.key()],
            [op_raw.0, 0, alg.as_raw().0],
        );
        let bytes = self.buffer_size(key, || {
            self.spmv_buffer_size(op, (alpha, beta), a, x, y, alg)
        })?;
        self.with_workspace(bytes, run)
    }

    /// Preprocesses `a` for SpMVs of this operation and algorithm (cuSPARSE analyses its
    /// structure once); the buffer it keeps is allocated from the handle's resource, held by
    /// `a` and used by every later [`spmv`](Self::spmv) with it. `a`'s structure must not
    /// change after (its values may). Needs cuSPARSE 12.3.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseSpMV_bufferSize)]
    #[doc = cusparse_sys::api_doc!(cusparseSpMV_preprocess)]
    /// # Errors
    ///
    /// As [`spmv`](Self::spmv); [`Error::InvalidArgument`] for a matrix already preprocessed
    /// or a stream being captured; [`Error::Load`](cuda_safe::Error::Load) for an older
    /// cuSPARSE.
    #[doc(alias = "cusparseSpMV_preprocess")]
    pub fn spmv_preprocess<I: SparseIndex, T: SparseValue>(
        &self,
        op: Operation,
        (alpha, beta): Scalars<T>,
        a: &mut SparseMatrix<'_, I, T>,
        x: &DenseVector<'_, T>,
        y: &mut DenseVector<'_, T>,
        alg: SpMvAlg,
    ) -> Result<()> {
        spmv_shapes(op, a, x, y)?;
        self.unprepared(a)?;
        let (cusparse, handle) = self.parts();
        let (alpha, beta) = (&raw const alpha, &raw const beta);
        let (op_raw, compute) = (op.as_raw(), T::COMPUTE_TYPE);
        let _current = self.current()?;
        let bytes = self.spmv_buffer_size(op, (alpha, beta), a, x, y, alg)?;
        let buffer = self.allocate(bytes)?;
        let area = buffer_ptr(&buffer);
        let [s0, s1, s2] = a.streams(self.stream())?;
        // The preprocessing buffer is ordered as an operand: another handle's stream may have
        // written it, and frees it.
        let streams = [
            Some(s0),
            Some(s1),
            Some(s2),
            Some(x.on(self.stream())?),
            Some(y.on(self.stream())?),
            a.prepared.as_ref().map(|prepared| prepared.buffer.stream()),
        ];
        ordered(self.stream(), streams, || {
            // SAFETY: as in `spmv`; the buffer has the size cuSPARSE asked for and is kept by
            // the matrix for its life.
            unsafe {
                cusparse!(
                    cusparse,
                    cusparseSpMV_preprocess(
                        handle,
                        op_raw,
                        alpha.cast(),
                        a.as_raw(),
                        x.as_raw(),
                        beta.cast(),
                        y.as_raw(),
                        compute,
                        alg.as_raw(),
                        area
                    )
                )
            }
        })?;
        a.prepared = Some(Prepared {
            key: ("cusparseSpMV", op.as_raw().0, 0, alg.as_raw().0),
            buffer,
        });
        Ok(())
    }

    /// `C = α op(A) op(B) + β C`, a sparse matrix (CSR, COO or blocked ELL) times a dense
    /// one, into a dense `C`.
    ///
    /// The work area is the handle's, unless `a` was preprocessed
    /// ([`spmm_preprocess`](Self::spmm_preprocess)) for the same operations and algorithm.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseSpMM_bufferSize)]
    #[doc = cusparse_sys::api_doc!(cusparseSpMM)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for shapes that do not match, a read-only `C`, `a`
    /// preprocessed for another operation, or a work area that would grow during a capture
    /// (checked before the call); cuSPARSE's error.
    #[doc(alias = "cusparseSpMM", alias = "cusparseSpMM_bufferSize")]
    pub fn spmm<I: SparseIndex, T: SparseValue>(
        &self,
        ops: (Operation, Operation),
        scalars: Scalars<T>,
        a: &SparseMatrix<'_, I, T>,
        b: &DenseMatrix<'_, T>,
        c: &mut DenseMatrix<'_, T>,
        alg: SpMmAlg,
    ) -> Result<()> {
        self.spmm_call(ops, scalars, a, (b, c), alg, None)
    }

    /// Preprocesses `a` for SpMMs of these operations and algorithm (cuSPARSE's
    /// `CUSPARSE_SPMM_CSR_ALG3` and blocked ELL use it); the buffer is held by `a` and used by
    /// every later [`spmm`](Self::spmm) with it.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseSpMM_bufferSize)]
    #[doc = cusparse_sys::api_doc!(cusparseSpMM_preprocess)]
    /// # Errors
    ///
    /// As [`spmm`](Self::spmm); [`Error::InvalidArgument`] for a matrix already
    /// preprocessed.
    #[doc(alias = "cusparseSpMM_preprocess")]
    pub fn spmm_preprocess<I: SparseIndex, T: SparseValue>(
        &self,
        ops: (Operation, Operation),
        scalars: Scalars<T>,
        a: &mut SparseMatrix<'_, I, T>,
        b: &DenseMatrix<'_, T>,
        c: &mut DenseMatrix<'_, T>,
        alg: SpMmAlg,
    ) -> Result<()> {
        self.unprepared(a)?;
        let mut kept = None;
        self.spmm_call(ops, scalars, a, (b, c), alg, Some(&mut kept))?;
        a.prepared = kept;
        Ok(())
    }

    /// SpMM, or its preprocessing when `keep` is given (the buffer put there).
    fn spmm_call<I: SparseIndex, T: SparseValue>(
        &self,
        (op_a, op_b): (Operation, Operation),
        (alpha, beta): Scalars<T>,
        a: &SparseMatrix<'_, I, T>,
        (b, c): (&DenseMatrix<'_, T>, &mut DenseMatrix<'_, T>),
        alg: SpMmAlg,
        keep: Option<&mut Option<Prepared>>,
    ) -> Result<()> {
        let (m, k) = op_a.apply(a.shape());
        let (kb, n) = op_b.apply(b.shape());
        product_shapes("SpMM", (m, k), (kb, n), c.shape())?;
        c.output("the SpMM's C")?;
        let (cusparse, handle) = self.parts();
        let (alpha, beta) = (&raw const alpha, &raw const beta);
        let (ra, rb, compute) = (op_a.as_raw(), op_b.as_raw(), T::COMPUTE_TYPE);
        let [s0, s1, s2] = a.streams(self.stream())?;
        // The preprocessing buffer is ordered as an operand (see `spmv`).
        let streams = [
            Some(s0),
            Some(s1),
            Some(s2),
            Some(b.on(self.stream())?),
            Some(c.on(self.stream())?),
            a.prepared.as_ref().map(|prepared| prepared.buffer.stream()),
        ];
        let _current = self.current()?;
        let prep_key = ("cusparseSpMM", ra.0, rb.0, alg.as_raw().0);
        let size = || {
            let mut bytes = 0;
            // SAFETY: live handle and descriptors, shapes checked above, host scalars of the
            // compute type; the size goes to a valid out-pointer.
            unsafe {
                cusparse!(
                    cusparse,
                    cusparseSpMM_bufferSize(
                        handle,
                        ra,
                        rb,
                        alpha.cast(),
                        a.as_raw(),
                        b.as_raw(),
                        beta.cast(),
                        c.as_raw(),
                        compute,
                        alg.as_raw(),
                        &mut bytes
                    )
                )
            }?;
            Ok(bytes)
        };
        let run = |area: *mut c_void, preprocess: bool| {
            ordered(self.stream(), streams, || {
                // SAFETY: as the size query's; `C` writable (checked); a work area of the size
                // cuSPARSE asked for.
                unsafe {
                    if preprocess {
                        cusparse!(
                            cusparse,
                            cusparseSpMM_preprocess(
                                handle,
                                ra,
                                rb,
                                alpha.cast(),
                                a.as_raw(),
                                b.as_raw(),
                                beta.cast(),
                                c.as_raw(),
                                compute,
                                alg.as_raw(),
                                area
                            )
                        )
                    } else {
                        cusparse!(
                            cusparse,
                            cusparseSpMM(
                                handle,
                                ra,
                                rb,
                                alpha.cast(),
                                a.as_raw(),
                                b.as_raw(),
                                beta.cast(),
                                c.as_raw(),
                                compute,
                                alg.as_raw(),
                                area
                            )
                        )
                    }
                }
            })
        };
        if let Some(keep) = keep {
            let buffer = self.allocate(size()?)?;
            run(buffer_ptr(&buffer), true)?;
            *keep = Some(Prepared {
                key: prep_key,
                buffer,
            });
            return Ok(());
        }
        if let Some(buffer) = prepared(a, prep_key)? {
            return run(buffer, false);
        }
        let key = size_key(
            "SpMM",
            &[&a.key(), &b.key(), &c.key()],
            [ra.0, rb.0, alg.as_raw().0],
        );
        let bytes = self.buffer_size(key, size)?;
        self.with_workspace(bytes, |area| run(area, false))
    }

    /// `C = α (op(A) op(B)) ∘ spy(C) + β C`: the dense product sampled at the stored elements
    /// of the CSR matrix `C`, whose values are written.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseSDDMM_bufferSize)]
    #[doc = cusparse_sys::api_doc!(cusparseSDDMM)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a `C` that is not CSR or whose values are read-only,
    /// shapes that do not match, or a work area that would grow during a capture (checked
    /// before the call); cuSPARSE's error.
    #[doc(alias = "cusparseSDDMM", alias = "cusparseSDDMM_bufferSize")]
    pub fn sddmm<I: SparseIndex, T: SparseValue>(
        &self,
        (op_a, op_b): (Operation, Operation),
        (alpha, beta): Scalars<T>,
        a: &DenseMatrix<'_, T>,
        b: &DenseMatrix<'_, T>,
        c: &mut SparseMatrix<'_, I, T>,
        alg: SddmmAlg,
    ) -> Result<()> {
        let (m, k) = op_a.apply(a.shape());
        let (kb, n) = op_b.apply(b.shape());
        product_shapes("SDDMM", (m, k), (kb, n), c.shape())?;
        c.need_csr("the SDDMM's C")?;
        c.output("the SDDMM's C")?;
        let (cusparse, handle) = self.parts();
        let (alpha, beta) = (&raw const alpha, &raw const beta);
        let (ra, rb, compute) = (op_a.as_raw(), op_b.as_raw(), T::COMPUTE_TYPE);
        let [s0, s1, s2] = c.streams(self.stream())?;
        let streams = [
            Some(a.on(self.stream())?),
            Some(b.on(self.stream())?),
            Some(s0),
            Some(s1),
            Some(s2),
        ];
        let _current = self.current()?;
        let key = size_key(
            "SDDMM",
            &[&a.key(), &b.key(), &c.key()],
            [ra.0, rb.0, alg.as_raw().0],
        );
        let bytes = self.buffer_size(key, || {
            let mut bytes = 0;
            // SAFETY: live handle and descriptors, shapes checked above, host scalars.
            unsafe {
                cusparse!(
                    cusparse,
                    cusparseSDDMM_bufferSize(
                        handle,
                        ra,
                        rb,
                        alpha.cast(),
                        a.as_raw(),
                        b.as_raw(),
                        beta.cast(),
                        c.as_raw(),
                        compute,
                        alg.as_raw(),
                        &mut bytes
                    )
                )
            }?;
            Ok(bytes)
        })?;
        self.with_workspace(bytes, |area| {
            ordered(self.stream(), streams, || {
                // SAFETY: as the size query's; `C`'s values writable (checked); a work area of
                // the size cuSPARSE asked for.
                unsafe {
                    cusparse!(
                        cusparse,
                        cusparseSDDMM(
                            handle,
                            ra,
                            rb,
                            alpha.cast(),
                            a.as_raw(),
                            b.as_raw(),
                            beta.cast(),
                            c.as_raw(),
                            compute,
                            alg.as_raw(),
                            area
                        )
                    )
                }
            })
        })
    }

    /// Refuses a matrix preprocessed already.
    /// The work area an SpMV of these operands asks for (`cusparseSpMV_bufferSize`), the
    /// stream's context current; `alpha` and `beta` point to host scalars of `T::Scalar`.
    fn spmv_buffer_size<I: SparseIndex, T: SparseValue>(
        &self,
        op: Operation,
        (alpha, beta): (*const T::Scalar, *const T::Scalar),
        a: &SparseMatrix<'_, I, T>,
        x: &DenseVector<'_, T>,
        y: &DenseVector<'_, T>,
        alg: SpMvAlg,
    ) -> Result<usize> {
        let (cusparse, handle) = self.parts();
        let mut bytes = 0;
        // SAFETY: a live handle and descriptors whose shapes match `op(A)` (checked by the
        // callers), host scalars of the compute type; the size goes to a valid out-pointer.
        unsafe {
            cusparse!(
                cusparse,
                cusparseSpMV_bufferSize(
                    handle,
                    op.as_raw(),
                    alpha.cast(),
                    a.as_raw(),
                    x.as_raw(),
                    beta.cast(),
                    y.as_raw(),
                    T::COMPUTE_TYPE,
                    alg.as_raw(),
                    &mut bytes
                )
            )
        }?;
        Ok(bytes)
    }

    fn unprepared<I: SparseIndex, T: SparseValue>(&self, a: &SparseMatrix<'_, I, T>) -> Result<()> {
        match &a.prepared {
            None => Ok(()),
            Some(prepared) => Err(Error::invalid_argument(format!(
                "this matrix was preprocessed for {} already; make another descriptor over its \
                 memory for another operation",
                prepared.key.0
            ))),
        }
    }
}

/// Checks an SpMV's vectors against `op(A)` and its output.
fn spmv_shapes<I: SparseIndex, T: SparseValue>(
    op: Operation,
    a: &SparseMatrix<'_, I, T>,
    x: &DenseVector<'_, T>,
    y: &DenseVector<'_, T>,
) -> Result<()> {
    if let SparseFormat::BlockedEll { .. } = a.format() {
        return Err(Error::invalid_argument(
            "cuSPARSE's SpMV takes CSR or COO matrices, not blocked ELL (SpMM takes it)",
        ));
    }
    let (m, k) = op.apply(a.shape());
    if x.len() != k || y.len() != m {
        return Err(Error::invalid_argument(format!(
            "an SpMV with op(A) of {m} x {k} takes x of {k} and y of {m} elements; x has {} \
             and y {}",
            x.len(),
            y.len()
        )));
    }
    y.output("the SpMV's y")
}

/// Checks `(m, k) x (kb, n) -> c`.
pub(crate) fn product_shapes(
    what: &str,
    (m, k): (usize, usize),
    (kb, n): (usize, usize),
    c: (usize, usize),
) -> Result<()> {
    if k != kb || c != (m, n) {
        return Err(Error::invalid_argument(format!(
            "an {what} of op(A) {m} x {k} and op(B) {kb} x {n} writes an {m} x {n} C (and the \
             inner dimensions must agree); C is {} x {}",
            c.0, c.1
        )));
    }
    Ok(())
}

/// The preprocessing buffer of `a` for `key`: `None` when it was not preprocessed, an error
/// when it was for another operation.
fn prepared<I: SparseIndex, T: SparseValue>(
    a: &SparseMatrix<'_, I, T>,
    key: (&'static str, u32, u32, u32),
) -> Result<Option<*mut c_void>> {
    match &a.prepared {
        None => Ok(None),
        Some(prepared) if prepared.key == key => Ok(Some(buffer_ptr(&prepared.buffer))),
        Some(prepared) => Err(Error::invalid_argument(format!(
            "this matrix was preprocessed for {} with other operations or another algorithm; \
             cuSPARSE keeps using that preprocessing with it",
            prepared.key.0
        ))),
    }
}

/// A buffer's address, null when it is empty.
pub(crate) fn buffer_ptr(buffer: &cuda_safe::Buffer) -> *mut c_void {
    if buffer.is_empty() {
        std::ptr::null_mut()
    } else {
        buffer.as_raw() as *mut c_void
    }
}

/// The buffer-size key of call `name`: its descriptors' numbers, then its operations and
/// algorithm.
pub(crate) fn size_key(name: &'static str, parts: &[&[u64]], ops: [u32; 3]) -> SizeKey {
    let mut key = [0u64; 20];
    let numbers = parts
        .iter()
        .flat_map(|part| part.iter().copied())
        .chain(ops.map(u64::from));
    key.iter_mut().zip(numbers).for_each(|(slot, n)| *slot = n);
    (name, key)
}
