//! [`SparseMatrix`]: a cuSPARSE sparse matrix descriptor (`cusparseSpMatDescr_t`) in CSR, COO
//! or blocked-ELL format over `cuda-safe`'s buffers and views, borrowed for its life; the
//! lengths checked when it is made, the indices checked on the host unless the caller promises
//! them ([`SparseMatrix::csr_unchecked`] and the others).

use std::fmt;
use std::marker::PhantomData;

use super::descr::{Descriptor, Kind, Values, download, fits, holds};
use super::element::{SparseIndex, SparseValue};
use crate::operand::{Input, Operand};
use crate::sparse::error::cusparse;
use cuda_safe::handle::Owned;
use cuda_safe::{Buffer, Error, Result, Stream};
use cusparse_sys::{cusparseIndexBase_t, cusparseSpMatDescr_t};

/// The storage format of a [`SparseMatrix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SparseFormat {
    /// Compressed sparse rows: `rows + 1` row offsets, then a column index and a value for
    /// each stored element, row by row.
    Csr,
    /// Coordinates: a row index, a column index and a value for each stored element.
    Coo,
    /// Blocked ELL: square blocks of `block_size`, the same number of block columns stored in
    /// every block row (a block column index of -1 pads a row).
    BlockedEll {
        /// The side of a block.
        block_size: usize,
        /// The columns of the stored part of each row (block columns times `block_size`).
        ell_cols: usize,
    },
}

/// A sparse `rows` x `cols` matrix of `T`s indexed by `I` (`i32` or `i64`), its index arrays
/// and values borrowed for its life. The values are read-only when borrowed shared (`&values`)
/// and may be written when borrowed exclusively (`&mut values`: the output of an SDDMM).
///
/// Every constructor checks the lengths (row offsets hold `rows + 1`, column indices and values
/// `nnz`, the blocked-ELL arrays their blocks) and that the dimensions fit `I`. The indices
/// themselves are read by cuSPARSE on the GPU: a column index past `cols` would make it read or
/// (for a transposed product) write outside the operands. So the checked constructors
/// ([`csr`](Self::csr), [`coo`](Self::coo), [`blocked_ell`](Self::blocked_ell)) copy the index
/// arrays to the host and check every index (this waits for their stream, and costs a copy of
/// them); the `_unchecked` ones take the indices as the caller's promise, for matrices whose
/// construction guarantees them or that were checked once already.
///
/// Dropping it destroys the descriptor (`cusparseDestroySpMat`), then frees its preprocessing
/// buffer (if an SpMV or SpMM was preprocessed on it) in order on its stream. `Send`, not
/// `Sync`: a preprocessing writes into the descriptor.
#[must_use = "a descriptor is destroyed when dropped"]
pub struct SparseMatrix<'a, I: SparseIndex, T: SparseValue> {
    descr: Owned<Descriptor>,
    format: SparseFormat,
    rows: usize,
    cols: usize,
    nnz: usize,
    writable: bool,
    operands: [Operand<'a>; 3],
    pub(crate) prepared: Option<Prepared>,
    _types: PhantomData<(&'a (), I, T, std::cell::Cell<()>)>,
}

/// The buffer an SpMV or SpMM was preprocessed with, which cuSPARSE keeps using with the
/// matrix: the operation, its operations and algorithm, kept for the later calls.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) key: (&'static str, u32, u32, u32),
    pub(crate) buffer: Buffer,
}

impl<'a, I: SparseIndex, T: SparseValue> SparseMatrix<'a, I, T> {
    /// A CSR matrix, its indices checked on the host: `row_offsets` (`rows + 1` of them, from
    /// 0, non-decreasing, the last `nnz`) and `col_indices` (`nnz`, each below `cols`), from
    /// 0.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateCsr)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for memory too short, a dimension `I` cannot hold, or an
    /// index out of its range (checked before cuSPARSE is called); the copy's errors;
    /// cuSPARSE's error.
    #[doc(alias = "cusparseCreateCsr")]
    pub fn csr(
        (rows, cols, nnz): (usize, usize, usize),
        row_offsets: &'a impl Input<I>,
        col_indices: &'a impl Input<I>,
        values: impl Values<'a, T>,
    ) -> Result<Self> {
        let (offsets, columns) = (row_offsets.operand()?, col_indices.operand()?);
        let (values, writable) = values.values()?;
        csr_lengths::<I>((rows, cols, nnz), &offsets, &columns, &values)?;
        check_csr::<I>((rows, cols, nnz), &offsets, &columns)?;
        // SAFETY: the indices were checked above.
        unsafe { Self::make_csr((rows, cols, nnz), [offsets, columns, values], writable) }
    }

    /// A CSR matrix whose indices are the caller's promise (the lengths are checked).
    ///
    /// # Safety
    ///
    /// `row_offsets` must start at 0, never decrease and end at `nnz`; every column index
    /// must be in `0..cols`, until the matrix is dropped.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateCsr)]
    /// # Errors
    ///
    /// As [`csr`](Self::csr), without the index checks.
    #[doc(alias = "cusparseCreateCsr")]
    pub unsafe fn csr_unchecked(
        (rows, cols, nnz): (usize, usize, usize),
        row_offsets: &'a impl Input<I>,
        col_indices: &'a impl Input<I>,
        values: impl Values<'a, T>,
    ) -> Result<Self> {
        let (offsets, columns) = (row_offsets.operand()?, col_indices.operand()?);
        let (values, writable) = values.values()?;
        csr_lengths::<I>((rows, cols, nnz), &offsets, &columns, &values)?;
        // SAFETY: the caller's promise.
        unsafe { Self::make_csr((rows, cols, nnz), [offsets, columns, values], writable) }
    }

    /// Makes the CSR descriptor.
    ///
    /// # Safety
    ///
    /// Lengths checked; indices valid.
    pub(crate) unsafe fn make_csr(
        (rows, cols, nnz): (usize, usize, usize),
        [offsets, columns, values]: [Operand<'a>; 3],
        writable: bool,
    ) -> Result<Self> {
        let cusparse = cusparse_sys::cusparse()?;
        let mut raw: cusparseSpMatDescr_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the arrays hold what the dimensions need (checked by
        // the caller) and are borrowed for the descriptor's life.
        unsafe {
            cusparse!(
                cusparse,
                cusparseCreateCsr(
                    &mut raw,
                    rows as i64,
                    cols as i64,
                    nnz as i64,
                    offsets.ptr_mut(),
                    columns.ptr_mut(),
                    values.ptr_mut(),
                    I::INDEX_TYPE,
                    I::INDEX_TYPE,
                    cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    T::DATA_TYPE
                )
            )
        }?;
        let operands = [offsets, columns, values];
        Ok(Self::wrap(
            raw,
            cusparse,
            SparseFormat::Csr,
            (rows, cols, nnz),
            writable,
            operands,
        ))
    }

    /// A COO matrix, its indices checked on the host: `nnz` row indices below `rows` and
    /// column indices below `cols`, from 0 (cuSPARSE's COO algorithms want them sorted by
    /// row; an unsorted matrix computes wrong values, never outside the operands).
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateCoo)]
    /// # Errors
    ///
    /// As [`csr`](Self::csr).
    #[doc(alias = "cusparseCreateCoo")]
    pub fn coo(
        (rows, cols, nnz): (usize, usize, usize),
        row_indices: &'a impl Input<I>,
        col_indices: &'a impl Input<I>,
        values: impl Values<'a, T>,
    ) -> Result<Self> {
        let (row_ind, col_ind) = (row_indices.operand()?, col_indices.operand()?);
        let (values, writable) = values.values()?;
        coo_lengths::<I>((rows, cols, nnz), &row_ind, &col_ind, &values)?;
        in_range::<I>("a COO row index", &download::<I>(&row_ind, nnz)?, -1, rows)?;
        in_range::<I>(
            "a COO column index",
            &download::<I>(&col_ind, nnz)?,
            -1,
            cols,
        )?;
        // SAFETY: the indices were checked above.
        unsafe { Self::make_coo((rows, cols, nnz), [row_ind, col_ind, values], writable) }
    }

    /// A COO matrix whose indices are the caller's promise (the lengths are checked).
    ///
    /// # Safety
    ///
    /// Every row index must be in `0..rows` and every column index in `0..cols`, until the
    /// matrix is dropped.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateCoo)]
    /// # Errors
    ///
    /// As [`coo`](Self::coo), without the index checks.
    #[doc(alias = "cusparseCreateCoo")]
    pub unsafe fn coo_unchecked(
        (rows, cols, nnz): (usize, usize, usize),
        row_indices: &'a impl Input<I>,
        col_indices: &'a impl Input<I>,
        values: impl Values<'a, T>,
    ) -> Result<Self> {
        let (row_ind, col_ind) = (row_indices.operand()?, col_indices.operand()?);
        let (values, writable) = values.values()?;
        coo_lengths::<I>((rows, cols, nnz), &row_ind, &col_ind, &values)?;
        // SAFETY: the caller's promise.
        unsafe { Self::make_coo((rows, cols, nnz), [row_ind, col_ind, values], writable) }
    }

    /// Makes the COO descriptor.
    ///
    /// # Safety
    ///
    /// Lengths checked; indices valid.
    unsafe fn make_coo(
        (rows, cols, nnz): (usize, usize, usize),
        [row_ind, col_ind, values]: [Operand<'a>; 3],
        writable: bool,
    ) -> Result<Self> {
        let cusparse = cusparse_sys::cusparse()?;
        let mut raw: cusparseSpMatDescr_t = std::ptr::null_mut();
        // SAFETY: as in `make_csr`.
        unsafe {
            cusparse!(
                cusparse,
                cusparseCreateCoo(
                    &mut raw,
                    rows as i64,
                    cols as i64,
                    nnz as i64,
                    row_ind.ptr_mut(),
                    col_ind.ptr_mut(),
                    values.ptr_mut(),
                    I::INDEX_TYPE,
                    cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    T::DATA_TYPE
                )
            )
        }?;
        let operands = [row_ind, col_ind, values];
        Ok(Self::wrap(
            raw,
            cusparse,
            SparseFormat::Coo,
            (rows, cols, nnz),
            writable,
            operands,
        ))
    }

    /// A blocked-ELL matrix, its block column indices checked on the host: `rows` and `cols`
    /// multiples of `block_size`, `ell_cols` (a multiple of `block_size`, at most `cols`)
    /// stored columns in every row; `block_col_indices` holds `rows / block_size` x
    /// `ell_cols / block_size` block columns (row-major, each below `cols / block_size` or -1
    /// for padding), `values` the `rows` x `ell_cols` stored values (row-major).
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateBlockedEll)]
    /// # Errors
    ///
    /// As [`csr`](Self::csr).
    #[doc(alias = "cusparseCreateBlockedEll")]
    pub fn blocked_ell(
        (rows, cols): (usize, usize),
        (block_size, ell_cols): (usize, usize),
        block_col_indices: &'a impl Input<I>,
        values: impl Values<'a, T>,
    ) -> Result<Self> {
        let indices = block_col_indices.operand()?;
        let (values, writable) = values.values()?;
        let blocks = ell_lengths::<I>((rows, cols), (block_size, ell_cols), &indices, &values)?;
        let block_cols = cols / block_size;
        in_range::<I>(
            "a block column index",
            &download::<I>(&indices, blocks)?,
            -2,
            block_cols,
        )?;
        // SAFETY: the indices were checked above.
        unsafe {
            Self::make_ell(
                (rows, cols),
                (block_size, ell_cols),
                [indices, values],
                writable,
            )
        }
    }

    /// A blocked-ELL matrix whose block column indices are the caller's promise (the lengths
    /// and dimensions are checked).
    ///
    /// # Safety
    ///
    /// Every block column index must be -1 or in `0..cols / block_size`, until the matrix is
    /// dropped.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateBlockedEll)]
    /// # Errors
    ///
    /// As [`blocked_ell`](Self::blocked_ell), without the index checks.
    #[doc(alias = "cusparseCreateBlockedEll")]
    pub unsafe fn blocked_ell_unchecked(
        (rows, cols): (usize, usize),
        (block_size, ell_cols): (usize, usize),
        block_col_indices: &'a impl Input<I>,
        values: impl Values<'a, T>,
    ) -> Result<Self> {
        let indices = block_col_indices.operand()?;
        let (values, writable) = values.values()?;
        ell_lengths::<I>((rows, cols), (block_size, ell_cols), &indices, &values)?;
        // SAFETY: the caller's promise.
        unsafe {
            Self::make_ell(
                (rows, cols),
                (block_size, ell_cols),
                [indices, values],
                writable,
            )
        }
    }

    /// Makes the blocked-ELL descriptor.
    ///
    /// # Safety
    ///
    /// Lengths checked; indices valid.
    unsafe fn make_ell(
        (rows, cols): (usize, usize),
        (block_size, ell_cols): (usize, usize),
        [indices, values]: [Operand<'a>; 2],
        writable: bool,
    ) -> Result<Self> {
        let cusparse = cusparse_sys::cusparse()?;
        let mut raw: cusparseSpMatDescr_t = std::ptr::null_mut();
        // SAFETY: as in `make_csr`.
        unsafe {
            cusparse!(
                cusparse,
                cusparseCreateBlockedEll(
                    &mut raw,
                    rows as i64,
                    cols as i64,
                    block_size as i64,
                    ell_cols as i64,
                    indices.ptr_mut(),
                    values.ptr_mut(),
                    I::INDEX_TYPE,
                    cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    T::DATA_TYPE
                )
            )
        }?;
        let format = SparseFormat::BlockedEll {
            block_size,
            ell_cols,
        };
        let operands = [indices, values, values];
        Ok(Self::wrap(
            raw,
            cusparse,
            format,
            (rows, cols, rows * ell_cols),
            writable,
            operands,
        ))
    }

    fn wrap(
        raw: cusparseSpMatDescr_t,
        cusparse: &'static cusparse_sys::Cusparse,
        format: SparseFormat,
        (rows, cols, nnz): (usize, usize, usize),
        writable: bool,
        operands: [Operand<'a>; 3],
    ) -> Self {
        Self {
            descr: Owned::new(Descriptor {
                raw: raw.cast(),
                kind: Kind::SpMat,
                cusparse,
            }),
            format,
            rows,
            cols,
            nnz,
            writable,
            operands,
            prepared: None,
            _types: PhantomData,
        }
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The number of stored elements (for blocked ELL, `rows` x `ell_cols`, padding
    /// included).
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// The storage format.
    pub fn format(&self) -> SparseFormat {
        self.format
    }

    /// Whether operations may write its values (made from `&mut` values).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The raw descriptor, valid while this matrix lives.
    pub fn as_raw(&self) -> cusparseSpMatDescr_t {
        self.descr.raw.cast()
    }

    /// The streams its arrays are ordered on, for a call on `stream` (whose device must reach
    /// each: [`Operand::on`]).
    pub(crate) fn streams(&self, stream: &Stream) -> Result<[&'a Stream; 3]> {
        let [a, b, c] = self.operands;
        Ok([a.on(stream)?, b.on(stream)?, c.on(stream)?])
    }

    /// Refuses a read-only matrix as an output.
    pub(crate) fn output(&self, what: &str) -> Result<()> {
        super::dense::writable(self.writable, what)
    }

    /// What a buffer size may depend on: the descriptor, its shape, format and types.
    pub(crate) fn key(&self) -> [u64; 5] {
        let format = match self.format {
            SparseFormat::Csr => 1,
            SparseFormat::Coo => 2,
            SparseFormat::BlockedEll { block_size, .. } => 3 | (block_size as u64) << 8,
        };
        [
            self.descr.raw as u64,
            self.rows as u64,
            self.cols as u64,
            self.nnz as u64,
            format << 16 | u64::from(I::INDEX_TYPE.0) << 8 | u64::from(T::DATA_TYPE.0),
        ]
    }

    /// Refuses a matrix of another format than CSR.
    pub(crate) fn need_csr(&self, what: &str) -> Result<()> {
        if self.format == SparseFormat::Csr {
            return Ok(());
        }
        Err(Error::invalid_argument(format!(
            "{what} must be a CSR matrix; this one is {:?}",
            self.format
        )))
    }
}

impl<I: SparseIndex, T: SparseValue> fmt::Debug for SparseMatrix<'_, I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SparseMatrix")
            .field("format", &self.format)
            .field("index", &I::NAME)
            .field("type", &T::NAME)
            .field("shape", &(self.rows, self.cols))
            .field("nnz", &self.nnz)
            .field("writable", &self.writable)
            .field("preprocessed", &self.prepared.as_ref().map(|p| p.key.0))
            .finish()
    }
}

/// Checks the dimensions against `I` and the CSR arrays' lengths.
fn csr_lengths<I: SparseIndex>(
    (rows, cols, nnz): (usize, usize, usize),
    offsets: &Operand<'_>,
    columns: &Operand<'_>,
    values: &Operand<'_>,
) -> Result<()> {
    dims::<I>(rows, cols, nnz)?;
    let what = format!("a {rows} x {cols} CSR matrix with {nnz} elements");
    holds(&format!("{what}: its row offsets"), offsets, rows + 1)?;
    holds(&format!("{what}: its column indices"), columns, nnz)?;
    holds(&format!("{what}: its values"), values, nnz)
}

/// Checks the dimensions against `I` and the COO arrays' lengths.
fn coo_lengths<I: SparseIndex>(
    (rows, cols, nnz): (usize, usize, usize),
    row_ind: &Operand<'_>,
    col_ind: &Operand<'_>,
    values: &Operand<'_>,
) -> Result<()> {
    dims::<I>(rows, cols, nnz)?;
    let what = format!("a {rows} x {cols} COO matrix with {nnz} elements");
    holds(&format!("{what}: its row indices"), row_ind, nnz)?;
    holds(&format!("{what}: its column indices"), col_ind, nnz)?;
    holds(&format!("{what}: its values"), values, nnz)
}

/// Checks a blocked-ELL matrix's dimensions and arrays; the number of blocks stored.
fn ell_lengths<I: SparseIndex>(
    (rows, cols): (usize, usize),
    (block_size, ell_cols): (usize, usize),
    indices: &Operand<'_>,
    values: &Operand<'_>,
) -> Result<usize> {
    let what = format!("a {rows} x {cols} blocked-ELL matrix of {block_size}-blocks");
    if block_size == 0
        || !rows.is_multiple_of(block_size)
        || !cols.is_multiple_of(block_size)
        || !ell_cols.is_multiple_of(block_size)
        || ell_cols > cols
    {
        return Err(Error::invalid_argument(format!(
            "{what}: the rows, the columns and the {ell_cols} stored columns must be multiples \
             of a non-zero block size, the stored columns at most the columns"
        )));
    }
    let stored = rows
        .checked_mul(ell_cols)
        .ok_or_else(|| Error::invalid_argument(format!("{what}: too many stored values")))?;
    dims::<I>(rows, cols, stored)?;
    let blocks = (rows / block_size) * (ell_cols / block_size);
    holds(
        &format!("{what}: its block column indices"),
        indices,
        blocks,
    )?;
    holds(&format!("{what}: its values"), values, stored)?;
    Ok(blocks)
}

fn dims<I: SparseIndex>(rows: usize, cols: usize, nnz: usize) -> Result<()> {
    fits("the number of rows", rows, I::MAX, I::NAME)?;
    fits("the number of columns", cols, I::MAX, I::NAME)?;
    fits("the number of stored elements", nnz, I::MAX, I::NAME)?;
    Ok(())
}

/// Copies the CSR index arrays to the host and checks them.
fn check_csr<I: SparseIndex>(
    (rows, cols, nnz): (usize, usize, usize),
    offsets: &Operand<'_>,
    columns: &Operand<'_>,
) -> Result<()> {
    let offsets: Vec<I> = download(offsets, rows + 1)?;
    let mut previous = 0;
    for (row, offset) in offsets.iter().map(|offset| offset.to_i64()).enumerate() {
        let first = row == 0 && offset != 0;
        if first || offset < previous || offset > nnz as i64 {
            return Err(Error::invalid_argument(format!(
                "CSR row offset {row} is {offset}: the offsets must start at 0, never \
                 decrease and end at the {nnz} elements"
            )));
        }
        previous = offset;
    }
    if previous != nnz as i64 {
        return Err(Error::invalid_argument(format!(
            "the last CSR row offset is {previous}; the matrix has {nnz} elements"
        )));
    }
    in_range::<I>(
        "a CSR column index",
        &download::<I>(columns, nnz)?,
        -1,
        cols,
    )
}

/// Refuses an index below `floor + 1` or at least `end`.
fn in_range<I: SparseIndex>(what: &str, indices: &[I], floor: i64, end: usize) -> Result<()> {
    let end = end as i64;
    match indices
        .iter()
        .map(|index| index.to_i64())
        .enumerate()
        .find(|&(_, index)| index <= floor || index >= end)
    {
        None => Ok(()),
        Some((at, index)) => Err(Error::invalid_argument(format!(
            "{what} (element {at}) is {index}, outside 0..{end}"
        ))),
    }
}
