//! The operations that make a new sparse matrix, whose size cuSPARSE says only once it has
//! looked at the operands: SpGEMM (`C = α op(A) op(B)`, CSR) and the dense-to-CSR conversion,
//! both returning a [`Csr`] whose buffers this crate allocates after learning the number of
//! stored elements; and the sparse-to-dense conversion.

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;

use super::dense::DenseMatrix;
use super::descr::{Descriptor, Kind};
use super::element::{Operation, SpGemmAlg, SparseIndex, SparseValue};
use super::handle::Sparse;
use super::matrix::SparseMatrix;
use super::ops::{buffer_ptr, product_shapes};
use crate::operand::Input;
use crate::sparse::error::cusparse;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::ordering::ordered;
use cuda_safe::{Buffer, Error, Result};
use cusparse_sys::{
    Cusparse, cusparseDenseToSparseAlg_t, cusparseIndexBase_t, cusparseSpGEMMDescr_t,
    cusparseSpMatDescr_t, cusparseSparseToDenseAlg_t,
};

/// A CSR matrix that owns its memory (from the handle's memory resource, ordered on its
/// stream): what [`Sparse::spgemm`] and [`Sparse::dense_to_csr`] return. Its indices were
/// written by cuSPARSE, so its [`matrix`](Self::matrix) needs no host check.
pub struct Csr<I: SparseIndex, T: SparseValue> {
    shape: (usize, usize, usize),
    row_offsets: Buffer,
    col_indices: Buffer,
    values: Buffer,
    _types: PhantomData<(I, T)>,
}

impl<I: SparseIndex, T: SparseValue> Csr<I, T> {
    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.shape.0, self.shape.1)
    }

    /// The number of stored elements.
    pub fn nnz(&self) -> usize {
        self.shape.2
    }

    /// The `rows + 1` row offsets.
    pub fn row_offsets(&self) -> &Buffer {
        &self.row_offsets
    }

    /// The `nnz` column indices.
    pub fn col_indices(&self) -> &Buffer {
        &self.col_indices
    }

    /// The `nnz` values.
    pub fn values(&self) -> &Buffer {
        &self.values
    }

    /// A descriptor of it with read-only values.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateCsr)]
    /// # Errors
    ///
    /// cuSPARSE's error.
    pub fn matrix(&self) -> Result<SparseMatrix<'_, I, T>> {
        let parts = [
            Input::<I>::operand(&self.row_offsets)?,
            Input::<I>::operand(&self.col_indices)?,
            Input::<T>::operand(&self.values)?,
        ];
        // SAFETY: cuSPARSE wrote the indices of this matrix's shape, and they are not
        // writable through `&self`.
        unsafe { SparseMatrix::make_csr(self.shape, parts, false) }
    }

    /// The row offsets, column indices and values.
    pub fn into_parts(self) -> (Buffer, Buffer, Buffer) {
        (self.row_offsets, self.col_indices, self.values)
    }
}

impl<I: SparseIndex, T: SparseValue> fmt::Debug for Csr<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Csr")
            .field("index", &I::NAME)
            .field("type", &T::NAME)
            .field("shape", &self.shape())
            .field("nnz", &self.nnz())
            .finish()
    }
}

/// An SpGEMM descriptor, destroyed once.
struct SpGemmDescr {
    raw: cusparseSpGEMMDescr_t,
    cusparse: &'static Cusparse,
}

impl Release for SpGemmDescr {
    const WHAT: &'static str = "cuSPARSE SpGEMM descriptor";

    fn release(&mut self) -> Result<()> {
        // SAFETY: made by `cusparseSpGEMM_createDescr`, destroyed once.
        unsafe { cusparse!(self.cusparse, cusparseSpGEMM_destroyDescr(self.raw)) }
    }
}

/// A new CSR descriptor over `offsets` (no column indices or values yet), owned.
fn empty_csr<I: SparseIndex, T: SparseValue>(
    cusparse: &'static Cusparse,
    (rows, cols): (usize, usize),
    offsets: &Buffer,
) -> Result<Owned<Descriptor>> {
    let mut raw: cusparseSpMatDescr_t = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; `offsets` holds `rows + 1` indices; no column index or
    // value is read before `cusparseCsrSetPointers` gives them.
    unsafe {
        cusparse!(
            cusparse,
            cusparseCreateCsr(
                &mut raw,
                rows as i64,
                cols as i64,
                0,
                buffer_ptr(offsets),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                I::INDEX_TYPE,
                I::INDEX_TYPE,
                cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                T::DATA_TYPE
            )
        )
    }?;
    Ok(Owned::new(Descriptor {
        raw: raw.cast(),
        kind: Kind::SpMat,
        cusparse,
    }))
}

impl Sparse {
    /// `C = α op(A) op(B)` for CSR `A` and `B`: a new CSR matrix. cuSPARSE's multi-phase
    /// SpGEMM (`workEstimation`, `compute`, `copy`, each buffer allocated at the size it asks
    /// for); the number of elements of `C` is read back between the phases, so this waits for
    /// the stream and cannot be captured into a graph. cuSPARSE takes only
    /// [`Operation::NonTranspose`] here (others are refused by it).
    ///
    #[doc = cusparse_sys::api_doc!(cusparseSpGEMM_createDescr)]
    #[doc = cusparse_sys::api_doc!(cusparseSpGEMM_workEstimation)]
    #[doc = cusparse_sys::api_doc!(cusparseSpGEMM_compute)]
    #[doc = cusparse_sys::api_doc!(cusparseSpMatGetSize)]
    #[doc = cusparse_sys::api_doc!(cusparseCsrSetPointers)]
    #[doc = cusparse_sys::api_doc!(cusparseSpGEMM_copy)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an `A` or `B` that is not CSR, shapes that do not
    /// match, or an `nnz` the index type cannot hold (checked before the calls that depend on
    /// it); the memory resource's and cuSPARSE's errors.
    #[doc(alias = "cusparseSpGEMM_compute", alias = "cusparseSpGEMM_copy")]
    pub fn spgemm<I: SparseIndex, T: SparseValue>(
        &self,
        (op_a, op_b): (Operation, Operation),
        alpha: T::Scalar,
        a: &SparseMatrix<'_, I, T>,
        b: &SparseMatrix<'_, I, T>,
        alg: SpGemmAlg,
    ) -> Result<Csr<I, T>> {
        a.need_csr("the SpGEMM's A")?;
        b.need_csr("the SpGEMM's B")?;
        let (m, k) = op_a.apply(a.shape());
        let (kb, n) = op_b.apply(b.shape());
        product_shapes("SpGEMM", (m, k), (kb, n), (m, n))?;
        let (cusparse, handle) = self.parts();
        let _current = self.current()?;
        let beta: T::Scalar = bytemuck::Zeroable::zeroed();
        let (alpha, beta) = (&raw const alpha, &raw const beta);
        let (ra, rb, compute, alg) = (op_a.as_raw(), op_b.as_raw(), T::COMPUTE_TYPE, alg.as_raw());
        let row_offsets = self.allocate((m + 1) * size_of::<I>())?;
        let c = empty_csr::<I, T>(cusparse, (m, n), &row_offsets)?;
        let mut raw: cusparseSpGEMMDescr_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        unsafe { cusparse!(cusparse, cusparseSpGEMM_createDescr(&mut raw)) }?;
        let descr = Owned::new(SpGemmDescr { raw, cusparse });
        let [a0, a1, a2] = a.streams(self.stream())?;
        let [b0, b1, b2] = b.streams(self.stream())?;
        let streams = [Some(a0), Some(a1), Some(a2), Some(b0), Some(b1), Some(b2)];
        let c_raw: cusparseSpMatDescr_t = c.raw.cast();
        // Each phase: its size query (null buffer), then the call with a buffer of that size.
        let phase = |estimate: bool, buffer: &mut Option<Buffer>| -> Result<()> {
            let mut bytes = 0usize;
            for round in 0..2 {
                let area = buffer.as_ref().map_or(std::ptr::null_mut(), buffer_ptr);
                ordered(self.stream(), streams, || {
                    // SAFETY: live handle and descriptors; `A` and `B` CSR with matching
                    // shapes (checked); `C` made for `m x n`; the buffer null (a size query)
                    // or of the size cuSPARSE asked for, kept until the SpGEMM is copied.
                    unsafe {
                        if estimate {
                            cusparse!(
                                cusparse,
                                cusparseSpGEMM_workEstimation(
                                    handle,
                                    ra,
                                    rb,
                                    alpha.cast(),
                                    a.as_raw(),
                                    b.as_raw(),
                                    beta.cast(),
                                    c_raw,
                                    compute,
                                    alg,
                                    descr.raw,
                                    &mut bytes,
                                    area
                                )
                            )
                        } else {
                            cusparse!(
                                cusparse,
                                cusparseSpGEMM_compute(
                                    handle,
                                    ra,
                                    rb,
                                    alpha.cast(),
                                    a.as_raw(),
                                    b.as_raw(),
                                    beta.cast(),
                                    c_raw,
                                    compute,
                                    alg,
                                    descr.raw,
                                    &mut bytes,
                                    area
                                )
                            )
                        }
                    }
                })?;
                if round == 0 {
                    // Never empty: a null buffer is cuSPARSE's size query.
                    *buffer = Some(self.allocate(bytes.max(1))?);
                }
            }
            Ok(())
        };
        let (mut first, mut second) = (None, None);
        phase(true, &mut first)?;
        phase(false, &mut second)?;
        let nnz = stored(cusparse, c_raw)?;
        super::descr::fits("the SpGEMM's product's elements", nnz, I::MAX, I::NAME)?;
        let col_indices = self.allocate(nnz * size_of::<I>())?;
        let values = self.allocate(nnz * size_of::<T>())?;
        set_pointers(cusparse, c_raw, [&row_offsets, &col_indices, &values])?;
        ordered(self.stream(), streams, || {
            // SAFETY: as the phases'; `C`'s arrays hold what cuSPARSE counted.
            unsafe {
                cusparse!(
                    cusparse,
                    cusparseSpGEMM_copy(
                        handle,
                        ra,
                        rb,
                        alpha.cast(),
                        a.as_raw(),
                        b.as_raw(),
                        beta.cast(),
                        c_raw,
                        compute,
                        alg,
                        descr.raw
                    )
                )
            }
        })?;
        descr.close()?;
        c.close()?;
        drop((first, second));
        Ok(Csr {
            shape: (m, n, nnz),
            row_offsets,
            col_indices,
            values,
            _types: PhantomData,
        })
    }

    /// The CSR form of the dense matrix `a` (its non-zero elements), in a new [`Csr`]: the
    /// analysis counts them, then the arrays are allocated and filled. The count is read back
    /// in between, so this waits for the stream.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseDenseToSparse_bufferSize)]
    #[doc = cusparse_sys::api_doc!(cusparseDenseToSparse_analysis)]
    #[doc = cusparse_sys::api_doc!(cusparseDenseToSparse_convert)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a matrix whose dimensions or count `I` cannot hold; the
    /// memory resource's and cuSPARSE's errors.
    #[doc(alias = "cusparseDenseToSparse_convert")]
    pub fn dense_to_csr<I: SparseIndex, T: SparseValue>(
        &self,
        a: &DenseMatrix<'_, T>,
    ) -> Result<Csr<I, T>> {
        let (m, n) = a.shape();
        super::descr::fits("the number of rows", m, I::MAX, I::NAME)?;
        super::descr::fits("the number of columns", n, I::MAX, I::NAME)?;
        let (cusparse, handle) = self.parts();
        let _current = self.current()?;
        let alg = cusparseDenseToSparseAlg_t::CUSPARSE_DENSETOSPARSE_ALG_DEFAULT;
        let row_offsets = self.allocate((m + 1) * size_of::<I>())?;
        let c = empty_csr::<I, T>(cusparse, (m, n), &row_offsets)?;
        let c_raw: cusparseSpMatDescr_t = c.raw.cast();
        let mut bytes = 0;
        // SAFETY: live handle and descriptors; a valid out-pointer.
        unsafe {
            cusparse!(
                cusparse,
                cusparseDenseToSparse_bufferSize(handle, a.as_raw(), c_raw, alg, &mut bytes)
            )
        }?;
        let buffer = self.allocate(bytes)?;
        let area: *mut c_void = buffer_ptr(&buffer);
        let streams = [Some(a.on(self.stream())?)];
        ordered(self.stream(), streams, || {
            // SAFETY: as the query's; the buffer has the size cuSPARSE asked for; the
            // analysis writes `C`'s row offsets, which hold `m + 1` indices.
            unsafe {
                cusparse!(
                    cusparse,
                    cusparseDenseToSparse_analysis(handle, a.as_raw(), c_raw, alg, area)
                )
            }
        })?;
        let nnz = stored(cusparse, c_raw)?;
        super::descr::fits("the number of non-zero elements", nnz, I::MAX, I::NAME)?;
        let col_indices = self.allocate(nnz * size_of::<I>())?;
        let values = self.allocate(nnz * size_of::<T>())?;
        set_pointers(cusparse, c_raw, [&row_offsets, &col_indices, &values])?;
        ordered(self.stream(), streams, || {
            // SAFETY: as the analysis's; `C`'s arrays hold the elements it counted.
            unsafe {
                cusparse!(
                    cusparse,
                    cusparseDenseToSparse_convert(handle, a.as_raw(), c_raw, alg, area)
                )
            }
        })?;
        c.close()?;
        drop(buffer);
        Ok(Csr {
            shape: (m, n, nnz),
            row_offsets,
            col_indices,
            values,
            _types: PhantomData,
        })
    }

    /// Writes the sparse matrix `a` (CSR or COO) into the dense `b` (of its shape), zeros
    /// where `a` stores nothing.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseSparseToDense_bufferSize)]
    #[doc = cusparse_sys::api_doc!(cusparseSparseToDense)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a blocked-ELL `a`, another shape, a read-only `b`, or a
    /// work area that would grow during a capture (checked before the call); cuSPARSE's error.
    #[doc(alias = "cusparseSparseToDense")]
    pub fn sparse_to_dense<I: SparseIndex, T: SparseValue>(
        &self,
        a: &SparseMatrix<'_, I, T>,
        b: &mut DenseMatrix<'_, T>,
    ) -> Result<()> {
        if let super::SparseFormat::BlockedEll { .. } = a.format() {
            return Err(Error::invalid_argument(
                "cuSPARSE converts CSR and COO matrices to dense, not blocked ELL",
            ));
        }
        if a.shape() != b.shape() {
            return Err(Error::invalid_argument(format!(
                "a {:?} sparse matrix cannot be written into a {:?} dense one",
                a.shape(),
                b.shape()
            )));
        }
        b.output("the dense matrix written")?;
        let (cusparse, handle) = self.parts();
        let _current = self.current()?;
        let alg = cusparseSparseToDenseAlg_t::CUSPARSE_SPARSETODENSE_ALG_DEFAULT;
        let mut bytes = 0;
        // SAFETY: live handle and descriptors of the same shape; a valid out-pointer.
        unsafe {
            cusparse!(
                cusparse,
                cusparseSparseToDense_bufferSize(handle, a.as_raw(), b.as_raw(), alg, &mut bytes)
            )
        }?;
        let [s0, s1, s2] = a.streams(self.stream())?;
        let streams = [Some(s0), Some(s1), Some(s2), Some(b.on(self.stream())?)];
        self.with_workspace(bytes, |area| {
            ordered(self.stream(), streams, || {
                // SAFETY: as the query's; `b` writable (checked); a work area of the size
                // cuSPARSE asked for.
                unsafe {
                    cusparse!(
                        cusparse,
                        cusparseSparseToDense(handle, a.as_raw(), b.as_raw(), alg, area)
                    )
                }
            })
        })
    }
}

/// The number of stored elements cuSPARSE counted into `c`.
fn stored(cusparse: &Cusparse, c: cusparseSpMatDescr_t) -> Result<usize> {
    let (mut rows, mut cols, mut nnz) = (0, 0, 0);
    // SAFETY: a live descriptor; valid out-pointers.
    unsafe {
        cusparse!(
            cusparse,
            cusparseSpMatGetSize(c, &mut rows, &mut cols, &mut nnz)
        )
    }?;
    usize::try_from(nnz).map_err(|_| Error::invalid_argument("cuSPARSE counted a negative nnz"))
}

/// Gives `c` its arrays.
fn set_pointers(
    cusparse: &Cusparse,
    c: cusparseSpMatDescr_t,
    [offsets, columns, values]: [&Buffer; 3],
) -> Result<()> {
    // SAFETY: a live descriptor; each buffer holds what `c`'s counts need and outlives it.
    unsafe {
        cusparse!(
            cusparse,
            cusparseCsrSetPointers(
                c,
                buffer_ptr(offsets),
                buffer_ptr(columns),
                buffer_ptr(values)
            )
        )
    }
}
