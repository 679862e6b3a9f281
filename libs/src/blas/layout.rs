//! The shapes of the BLAS calls and every check made on them before a call: dimensions and
//! leading dimensions as cuBLAS's `int`, leading dimensions against the rows (or columns) they
//! stride over, the elements each operand spans against the memory given, batch strides.
//!
//! cuBLAS is column-major, as Fortran BLAS: element (i, j) of an `rows x cols` matrix with
//! leading dimension `ld` is at `i + j * ld`, and `ld >= rows`. A row-major matrix (element
//! (i, j) at `i * ld + j`, `ld >= cols`) is the column-major transpose of itself, so a
//! row-major C = op(A) op(B) is the column-major Cᵀ = op(B)ᵀ op(A)ᵀ: [`Gemm::row_major`] makes
//! that call (the operands swapped, and the dimensions with them); the caller thinks in rows
//! throughout, leading dimensions being row strides.

use std::fmt;

use cublas_sys::cublasOperation_t;
use cuda_safe::{Error, Result};

/// Whether a matrix operand is used as stored or transposed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// As stored (`CUBLAS_OP_N`).
    #[default]
    No,
    /// Transposed (`CUBLAS_OP_T`).
    Yes,
}

impl Transpose {
    /// The `cublasOperation_t`.
    pub const fn as_raw(self) -> cublasOperation_t {
        match self {
            Self::No => cublasOperation_t::CUBLAS_OP_N,
            Self::Yes => cublasOperation_t::CUBLAS_OP_T,
        }
    }

    /// The other one.
    pub(crate) const fn flipped(self) -> Self {
        match self {
            Self::No => Self::Yes,
            Self::Yes => Self::No,
        }
    }

    /// `N` or `T`, as BLAS writes it.
    pub(crate) const fn letter(self) -> char {
        match self {
            Self::No => 'N',
            Self::Yes => 'T',
        }
    }
}

/// `value` as cuBLAS's `int`.
pub(crate) fn c_int(what: &str, value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| {
        Error::invalid_argument(format!("{what} = {value} does not fit cuBLAS's 32-bit int"))
    })
}

/// `value` as cuBLAS's `long long` (a batch stride).
pub(crate) fn c_long(what: &str, value: usize) -> Result<i64> {
    i64::try_from(value).map_err(|_| {
        Error::invalid_argument(format!("{what} = {value} does not fit a 64-bit stride"))
    })
}

/// How a stored matrix is laid out, for the checks and their messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stored {
    /// Its name in messages (`A`).
    pub(crate) name: &'static str,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) ld: usize,
    pub(crate) row_major: bool,
}

impl Stored {
    /// A stored matrix whose leading dimension is `ld`, or packed when `None`.
    pub(crate) fn new(
        name: &'static str,
        (rows, cols): (usize, usize),
        ld: Option<usize>,
        row_major: bool,
    ) -> Self {
        let contiguous = if row_major { cols } else { rows };
        Self {
            name,
            rows,
            cols,
            ld: ld.unwrap_or(contiguous.max(1)),
            row_major,
        }
    }

    /// The elements the matrix spans, after checking its leading dimension: at least the
    /// length of the runs it strides over (the rows of a column-major matrix, the columns of a
    /// row-major one), and at least 1.
    pub(crate) fn extent(&self) -> Result<usize> {
        let (contiguous, strided) = if self.row_major {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        };
        if self.ld < contiguous.max(1) {
            return Err(Error::invalid_argument(format!(
                "the leading dimension of {self} is {}: it must be at least {}",
                self.ld,
                contiguous.max(1)
            )));
        }
        if contiguous == 0 || strided == 0 {
            return Ok(0);
        }
        self.ld
            .checked_mul(strided - 1)
            .and_then(|start| start.checked_add(contiguous))
            .ok_or_else(|| Error::invalid_argument(format!("{self} overflows the address space")))
    }
}

impl fmt::Display for Stored {
    /// `A (64 x 32, column-major)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let order = if self.row_major { "row" } else { "column" };
        write!(
            f,
            "{} ({} x {}, {order}-major)",
            self.name, self.rows, self.cols
        )
    }
}

/// Refuses memory of `len` elements for an operand that spans `needed`.
pub(crate) fn holds(what: &dyn fmt::Display, needed: usize, len: usize) -> Result<()> {
    if len < needed {
        return Err(Error::invalid_argument(format!(
            "{what} spans {needed} elements, but its memory holds {len}"
        )));
    }
    Ok(())
}

/// The shape of a GEMM, `C = alpha op(A) op(B) + beta C`: op(A) is `m x k`, op(B) `k x n`, C
/// `m x n`. Column-major unless made with [`row_major`](Self::row_major); leading dimensions are
/// packed unless set.
///
/// ```
/// use cuda_safe_libs::blas::{Gemm, Transpose};
///
/// // C (128 x 64) = Aᵀ B with A stored 256 x 128 and B 256 x 64, column-major.
/// let shape = Gemm::new(128, 64, 256).transpose_a();
/// assert_eq!(shape.transposes(), (Transpose::Yes, Transpose::No));
/// // The same product on row-major matrices, A with a row stride of 160 elements.
/// let rows = Gemm::row_major(128, 64, 256).transpose_a().lda(160);
/// assert!(rows.is_row_major());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gemm {
    m: usize,
    n: usize,
    k: usize,
    transa: Transpose,
    transb: Transpose,
    lda: Option<usize>,
    ldb: Option<usize>,
    ldc: Option<usize>,
    row_major: bool,
}

/// A GEMM as cuBLAS takes it: the column-major call (for a row-major shape, with the operands
/// swapped) and the elements each of the caller's A, B and C spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GemmCall {
    pub(crate) transa: cublasOperation_t,
    pub(crate) transb: cublasOperation_t,
    pub(crate) m: i32,
    pub(crate) n: i32,
    pub(crate) k: i32,
    /// The leading dimensions of the call's first and second operand and of C.
    pub(crate) lda: i32,
    pub(crate) ldb: i32,
    pub(crate) ldc: i32,
    /// Whether the call's first operand is the caller's B (a row-major shape).
    pub(crate) swap: bool,
    /// The elements the caller's A, B and C span.
    pub(crate) extents: [usize; 3],
}

impl Gemm {
    /// A column-major GEMM of op(A) `m x k` by op(B) `k x n`, no transposes, packed.
    pub const fn new(m: usize, n: usize, k: usize) -> Self {
        Self {
            m,
            n,
            k,
            transa: Transpose::No,
            transb: Transpose::No,
            lda: None,
            ldb: None,
            ldc: None,
            row_major: false,
        }
    }

    /// The same GEMM on row-major matrices (C `m x n` with a row stride `ldc >= n`, and so
    /// on): cuBLAS computes it as the column-major transposed product, with no copy.
    pub const fn row_major(m: usize, n: usize, k: usize) -> Self {
        let mut shape = Self::new(m, n, k);
        shape.row_major = true;
        shape
    }

    /// op(A) = Aᵀ: A is stored `k x m`.
    pub const fn transpose_a(mut self) -> Self {
        self.transa = self.transa.flipped();
        self
    }

    /// op(B) = Bᵀ: B is stored `n x k`.
    pub const fn transpose_b(mut self) -> Self {
        self.transb = self.transb.flipped();
        self
    }

    /// A's leading dimension (its column stride, or its row stride when row-major).
    pub const fn lda(mut self, lda: usize) -> Self {
        self.lda = Some(lda);
        self
    }

    /// B's leading dimension.
    pub const fn ldb(mut self, ldb: usize) -> Self {
        self.ldb = Some(ldb);
        self
    }

    /// C's leading dimension.
    pub const fn ldc(mut self, ldc: usize) -> Self {
        self.ldc = Some(ldc);
        self
    }

    /// `(m, n, k)`.
    pub const fn dims(&self) -> (usize, usize, usize) {
        (self.m, self.n, self.k)
    }

    /// The transposes of A and B.
    pub const fn transposes(&self) -> (Transpose, Transpose) {
        (self.transa, self.transb)
    }

    /// Whether the matrices are row-major.
    pub const fn is_row_major(&self) -> bool {
        self.row_major
    }

    /// The caller's A, B and C as stored.
    pub(crate) fn stored(&self) -> [Stored; 3] {
        let (m, n, k) = (self.m, self.n, self.k);
        let a = match self.transa {
            Transpose::No => (m, k),
            Transpose::Yes => (k, m),
        };
        let b = match self.transb {
            Transpose::No => (k, n),
            Transpose::Yes => (n, k),
        };
        [
            Stored::new("A", a, self.lda, self.row_major),
            Stored::new("B", b, self.ldb, self.row_major),
            Stored::new("C", (m, n), self.ldc, self.row_major),
        ]
    }

    /// The checked call: every dimension and leading dimension as an `int`, each leading
    /// dimension against its matrix, each matrix's extent.
    pub(crate) fn call(&self) -> Result<GemmCall> {
        let [a, b, c] = self.stored();
        let extents = [a.extent()?, b.extent()?, c.extent()?];
        let (m, n, k) = (
            c_int("m", self.m)?,
            c_int("n", self.n)?,
            c_int("k", self.k)?,
        );
        let (lda, ldb, ldc) = (
            c_int("lda", a.ld)?,
            c_int("ldb", b.ld)?,
            c_int("ldc", c.ld)?,
        );
        Ok(if self.row_major {
            GemmCall {
                transa: self.transb.as_raw(),
                transb: self.transa.as_raw(),
                m: n,
                n: m,
                k,
                lda: ldb,
                ldb: lda,
                ldc,
                swap: true,
                extents,
            }
        } else {
            GemmCall {
                transa: self.transa.as_raw(),
                transb: self.transb.as_raw(),
                m,
                n,
                k,
                lda,
                ldb,
                ldc,
                swap: false,
                extents,
            }
        })
    }
}

impl fmt::Display for Gemm {
    /// `64x32x16 (T, N, column-major)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let order = if self.row_major { "row" } else { "column" };
        write!(
            f,
            "{}x{}x{} ({}, {}, {order}-major)",
            self.m,
            self.n,
            self.k,
            self.transa.letter(),
            self.transb.letter()
        )
    }
}

/// The batch of a strided-batched GEMM: `count` products, the i-th reading A at `i *
/// stride_a` elements (B, C likewise). A stride of 0 reuses one matrix for every product;
/// C's products may not overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StridedBatch {
    /// The number of products.
    pub count: usize,
    /// Elements from one A to the next.
    pub stride_a: usize,
    /// Elements from one B to the next.
    pub stride_b: usize,
    /// Elements from one C to the next.
    pub stride_c: usize,
}

impl StridedBatch {
    /// `count` products of `shape` stored back to back (each stride the extent of one
    /// matrix).
    ///
    /// # Errors
    ///
    /// As the shape's checks ([`Error::InvalidArgument`]).
    pub fn packed(count: usize, shape: &Gemm) -> Result<Self> {
        let [a, b, c] = shape.stored();
        Ok(Self {
            count,
            stride_a: a.extent()?,
            stride_b: b.extent()?,
            stride_c: c.extent()?,
        })
    }

    /// The elements the whole batch of each of A, B and C spans, after checking the count and
    /// the strides (as cuBLAS's types) and that C's products do not overlap.
    pub(crate) fn extents(&self, call: &GemmCall) -> Result<[usize; 3]> {
        c_int("batch count", self.count)?;
        let strides = [self.stride_a, self.stride_b, self.stride_c];
        let names = ["stride_a", "stride_b", "stride_c"];
        let mut spans = [0; 3];
        for (index, span) in spans.iter_mut().enumerate() {
            c_long(names[index], strides[index])?;
            *span = if self.count == 0 || call.extents[index] == 0 {
                0
            } else {
                strides[index]
                    .checked_mul(self.count - 1)
                    .and_then(|start| start.checked_add(call.extents[index]))
                    .ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "a batch of {} with {} = {} overflows the address space",
                            self.count, names[index], strides[index]
                        ))
                    })?
            };
        }
        if self.count > 1 && self.stride_c < call.extents[2] {
            return Err(Error::invalid_argument(format!(
                "stride_c = {} is less than the {} elements of one C: the batch's products \
                 would write over each other",
                self.stride_c, call.extents[2]
            )));
        }
        Ok(spans)
    }
}

/// The elements a vector of `n` elements `inc` apart spans, after checking `inc >= 1` and both
/// against cuBLAS's `int`.
pub(crate) fn vector_extent(what: &str, n: usize, inc: usize) -> Result<usize> {
    if inc == 0 {
        return Err(Error::invalid_argument(format!(
            "the increment of {what} must be at least 1"
        )));
    }
    c_int("n", n)?;
    c_int("the increment", inc)?;
    if n == 0 {
        return Ok(0);
    }
    inc.checked_mul(n - 1)
        .and_then(|start| start.checked_add(1))
        .ok_or_else(|| Error::invalid_argument(format!("{what} overflows the address space")))
}

#[cfg(test)]
mod tests;
