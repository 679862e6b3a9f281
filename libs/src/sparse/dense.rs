//! Dense operands of the sparse operations: [`DenseVector`] (`cusparseDnVecDescr_t`) and
//! [`DenseMatrix`] (`cusparseDnMatDescr_t`), over `cuda-safe`'s buffers and views, their
//! lengths checked when they are made.

use std::fmt;
use std::marker::PhantomData;

use super::descr::{Descriptor, Kind, Values, holds};
use super::element::{Order, SparseValue};
use crate::operand::Operand;
use crate::sparse::error::cusparse;
use cuda_safe::handle::Owned;
use cuda_safe::{Error, Result, Stream};

/// A dense vector of `T`s over a buffer or view, borrowed for the vector's life:
/// `DenseVector::new(&x)` is read-only, `DenseVector::new(&mut y)` may be written (the `y` of
/// an SpMV). Its length is the memory's.
///
/// Dropping it destroys the descriptor (`cusparseDestroyDnVec`). `Send`, not `Sync`.
#[must_use = "a descriptor is destroyed when dropped"]
pub struct DenseVector<'a, T: SparseValue> {
    descr: Owned<Descriptor>,
    len: usize,
    writable: bool,
    operand: Operand<'a>,
    _values: PhantomData<(&'a (), T, std::cell::Cell<()>)>,
}

impl<'a, T: SparseValue> DenseVector<'a, T> {
    /// A vector over all of `values`.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateDnVec)]
    /// # Errors
    ///
    /// [`Error::Load`](cuda_safe::Error::Load) when cuSPARSE cannot be loaded; as
    /// [`Input::operand`](super::Input::operand); cuSPARSE's error.
    #[doc(alias = "cusparseCreateDnVec")]
    pub fn new(values: impl Values<'a, T>) -> Result<Self> {
        let (operand, writable) = values.values()?;
        let cusparse = cusparse_sys::cusparse()?;
        let len = operand.len();
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; `operand` holds `len` elements of `T`, borrowed for
        // the descriptor's life.
        unsafe {
            cusparse!(
                cusparse,
                cusparseCreateDnVec(&mut raw, len as i64, operand.ptr_mut(), T::DATA_TYPE)
            )
        }?;
        Ok(Self {
            descr: Owned::new(Descriptor {
                raw: raw.cast(),
                kind: Kind::DnVec,
                cusparse,
            }),
            len,
            writable,
            operand,
            _values: PhantomData,
        })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether operations may write it (made from `&mut`).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The stream its memory is ordered on.
    pub fn stream(&self) -> &'a Stream {
        self.operand.stream()
    }

    /// The stream its memory is ordered on, for a call on `stream` (whose device must reach
    /// the memory: [`Operand::on`]).
    pub(crate) fn on(&self, stream: &Stream) -> Result<&'a Stream> {
        self.operand.on(stream)
    }

    /// The raw descriptor, valid while this vector lives.
    pub fn as_raw(&self) -> cusparse_sys::cusparseDnVecDescr_t {
        self.descr.raw.cast()
    }

    /// Refuses a read-only vector as an output.
    pub(crate) fn output(&self, what: &str) -> Result<()> {
        writable(self.writable, what)
    }

    /// What a buffer size may depend on: the descriptor, its length and type.
    pub(crate) fn key(&self) -> [u64; 3] {
        [
            self.descr.raw as u64,
            self.len as u64,
            u64::from(T::DATA_TYPE.0),
        ]
    }
}

impl<T: SparseValue> fmt::Debug for DenseVector<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DenseVector")
            .field("type", &T::NAME)
            .field("len", &self.len)
            .field("writable", &self.writable)
            .finish()
    }
}

/// A dense `rows` x `cols` matrix of `T`s over a buffer or view, row-major or column-major
/// with a leading dimension, borrowed for the matrix's life (`&` read-only, `&mut` writable,
/// as [`DenseVector`]).
///
/// Dropping it destroys the descriptor (`cusparseDestroyDnMat`). `Send`, not `Sync`.
#[must_use = "a descriptor is destroyed when dropped"]
pub struct DenseMatrix<'a, T: SparseValue> {
    descr: Owned<Descriptor>,
    rows: usize,
    cols: usize,
    ld: usize,
    order: Order,
    writable: bool,
    operand: Operand<'a>,
    _values: PhantomData<(&'a (), T, std::cell::Cell<()>)>,
}

impl<'a, T: SparseValue> DenseMatrix<'a, T> {
    /// A packed `rows` x `cols` matrix in `order` (its leading dimension `cols` for
    /// row-major, `rows` for column-major).
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateDnMat)]
    /// # Errors
    ///
    /// As [`with_ld`](Self::with_ld).
    #[doc(alias = "cusparseCreateDnMat")]
    pub fn new(rows: usize, cols: usize, order: Order, values: impl Values<'a, T>) -> Result<Self> {
        let ld = match order {
            Order::RowMajor => cols,
            Order::ColumnMajor => rows,
        };
        Self::with_ld(rows, cols, ld.max(1), order, values)
    }

    /// A `rows` x `cols` matrix in `order` whose rows (row-major) or columns (column-major)
    /// start `ld` elements apart.
    ///
    #[doc = cusparse_sys::api_doc!(cusparseCreateDnMat)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a leading dimension smaller than a row (row-major) or a
    /// column (column-major), or memory holding fewer elements than the matrix spans; as
    /// [`DenseVector::new`].
    #[doc(alias = "cusparseCreateDnMat")]
    pub fn with_ld(
        rows: usize,
        cols: usize,
        ld: usize,
        order: Order,
        values: impl Values<'a, T>,
    ) -> Result<Self> {
        let (operand, writable) = values.values()?;
        let (outer, inner) = match order {
            Order::RowMajor => (rows, cols),
            Order::ColumnMajor => (cols, rows),
        };
        if ld < inner.max(1) {
            return Err(Error::invalid_argument(format!(
                "a {rows} x {cols} {order:?} matrix needs a leading dimension of at least {}; \
                 {ld} was given",
                inner.max(1)
            )));
        }
        let span = if outer == 0 || inner == 0 {
            0
        } else {
            (outer - 1)
                .checked_mul(ld)
                .and_then(|start| start.checked_add(inner))
                .ok_or_else(|| Error::invalid_argument("the dense matrix's span overflows"))?
        };
        holds(&format!("a {rows} x {cols} dense matrix"), &operand, span)?;
        let cusparse = cusparse_sys::cusparse()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; `operand` holds the `span` elements of `T` the matrix
        // covers (checked), borrowed for the descriptor's life.
        unsafe {
            cusparse!(
                cusparse,
                cusparseCreateDnMat(
                    &mut raw,
                    rows as i64,
                    cols as i64,
                    ld as i64,
                    operand.ptr_mut(),
                    T::DATA_TYPE,
                    order.as_raw()
                )
            )
        }?;
        Ok(Self {
            descr: Owned::new(Descriptor {
                raw: raw.cast(),
                kind: Kind::DnMat,
                cusparse,
            }),
            rows,
            cols,
            ld,
            order,
            writable,
            operand,
            _values: PhantomData,
        })
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The leading dimension.
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// The order of its elements.
    pub fn order(&self) -> Order {
        self.order
    }

    /// Whether operations may write it (made from `&mut`).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The stream its memory is ordered on.
    pub fn stream(&self) -> &'a Stream {
        self.operand.stream()
    }

    /// The stream its memory is ordered on, for a call on `stream` (whose device must reach
    /// the memory: [`Operand::on`]).
    pub(crate) fn on(&self, stream: &Stream) -> Result<&'a Stream> {
        self.operand.on(stream)
    }

    /// The raw descriptor, valid while this matrix lives.
    pub fn as_raw(&self) -> cusparse_sys::cusparseDnMatDescr_t {
        self.descr.raw.cast()
    }

    /// Refuses a read-only matrix as an output.
    pub(crate) fn output(&self, what: &str) -> Result<()> {
        writable(self.writable, what)
    }

    /// What a buffer size may depend on: the descriptor, its shape, layout and type.
    pub(crate) fn key(&self) -> [u64; 4] {
        [
            self.descr.raw as u64,
            self.rows as u64,
            self.cols as u64,
            (self.ld as u64) << 16
                | u64::from(self.order.as_raw().0) << 8
                | u64::from(T::DATA_TYPE.0),
        ]
    }
}

impl<T: SparseValue> fmt::Debug for DenseMatrix<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DenseMatrix")
            .field("type", &T::NAME)
            .field("shape", &(self.rows, self.cols))
            .field("ld", &self.ld)
            .field("order", &self.order)
            .field("writable", &self.writable)
            .finish()
    }
}

/// Refuses an output made read-only.
pub(crate) fn writable(writable: bool, what: &str) -> Result<()> {
    if writable {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "{what} is written by the operation, but its values were borrowed shared: make it \
         from `&mut` memory"
    )))
}
