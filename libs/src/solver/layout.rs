//! The column-major matrices cuSOLVER works on ([`Layout`]: rows, columns, leading dimension)
//! and every check made on them before a call: the leading dimension against the rows, the
//! elements a matrix spans against the memory given, the dimensions against the library's
//! integer types. Also the small choices the routines take ([`Fill`], [`Transpose`], [`Side`]).

use std::fmt;

use cuda_safe::{Error, Result};
use cusolver_sys::{cublasFillMode_t, cublasOperation_t, cublasSideMode_t};

/// A column-major matrix as cuSOLVER (LAPACK) stores it: element (i, j) of a `rows x cols`
/// matrix is at `i + j * ld`, with `ld >= rows` (and at least 1). Packed (`ld == rows`) unless
/// [`ld`](Self::ld) sets another.
///
/// ```
/// use cuda_safe_libs::solver::Layout;
///
/// // A 100 x 80 block of a matrix allocated with 128 rows.
/// let layout = Layout::new(100, 80).ld(128);
/// assert_eq!((layout.rows(), layout.cols(), layout.leading_dimension()), (100, 80, 128));
/// assert_eq!(Layout::square(4).leading_dimension(), 4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    rows: usize,
    cols: usize,
    ld: Option<usize>,
}

impl Layout {
    /// A packed `rows x cols` matrix.
    pub const fn new(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            ld: None,
        }
    }

    /// A packed `n x n` matrix.
    pub const fn square(n: usize) -> Self {
        Self::new(n, n)
    }

    /// The same matrix with leading dimension `ld` (its column stride, in elements).
    pub const fn ld(mut self, ld: usize) -> Self {
        self.ld = Some(ld);
        self
    }

    /// The rows.
    pub const fn rows(&self) -> usize {
        self.rows
    }

    /// The columns.
    pub const fn cols(&self) -> usize {
        self.cols
    }

    /// The leading dimension: as set, or the rows (at least 1) when packed.
    pub const fn leading_dimension(&self) -> usize {
        match self.ld {
            Some(ld) => ld,
            None if self.rows == 0 => 1,
            None => self.rows,
        }
    }

    /// Whether it is square.
    pub const fn is_square(&self) -> bool {
        self.rows == self.cols
    }

    /// The elements the matrix spans, after checking its leading dimension (at least the
    /// rows, and at least 1).
    pub(crate) fn extent(&self, name: &str) -> Result<usize> {
        let ld = self.leading_dimension();
        if ld < self.rows.max(1) {
            return Err(Error::invalid_argument(format!(
                "the leading dimension of {name} ({self}) is {ld}: it must be at least {}",
                self.rows.max(1)
            )));
        }
        if self.rows == 0 || self.cols == 0 {
            return Ok(0);
        }
        ld.checked_mul(self.cols - 1)
            .and_then(|start| start.checked_add(self.rows))
            .ok_or_else(|| Error::invalid_argument(format!("{name} ({self}) overflows")))
    }

    /// Checks the matrix against memory of `len` elements and returns its rows, columns and
    /// leading dimension as the 64-bit API's `int64_t`.
    pub(crate) fn check(&self, name: &str, len: usize) -> Result<Dims> {
        holds(&format_args!("{name} ({self})"), self.extent(name)?, len)?;
        Ok(Dims {
            rows: long(name, self.rows)?,
            cols: long(name, self.cols)?,
            ld: long(name, self.leading_dimension())?,
        })
    }

    /// [`check`](Self::check) for the legacy API, whose dimensions are `int`.
    pub(crate) fn check_int(&self, name: &str, len: usize) -> Result<[i32; 3]> {
        self.check(name, len)?;
        Ok([
            int(name, self.rows)?,
            int(name, self.cols)?,
            int(name, self.leading_dimension())?,
        ])
    }

    /// Refuses a matrix that is not square.
    pub(crate) fn square_only(&self, name: &str) -> Result<()> {
        if self.is_square() {
            Ok(())
        } else {
            Err(Error::invalid_argument(format!(
                "{name} must be square; it is {self}"
            )))
        }
    }
}

impl fmt::Display for Layout {
    /// `64 x 32 (ld 64)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} x {} (ld {})",
            self.rows,
            self.cols,
            self.leading_dimension()
        )
    }
}

/// A matrix's dimensions as the 64-bit API takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dims {
    pub(crate) rows: i64,
    pub(crate) cols: i64,
    pub(crate) ld: i64,
}

/// `value` as the 64-bit API's `int64_t`.
pub(crate) fn long(what: &str, value: usize) -> Result<i64> {
    i64::try_from(value)
        .map_err(|_| Error::invalid_argument(format!("{what}: {value} does not fit an int64_t")))
}

/// `value` as the legacy API's `int`.
pub(crate) fn int(what: &str, value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| {
        Error::invalid_argument(format!(
            "{what}: {value} does not fit the 32-bit int of this cuSOLVER routine"
        ))
    })
}

/// A workspace's length in elements as the legacy API's `int` (a workspace grown past it
/// still holds the `int`'s worth the routine asked for).
pub(crate) fn clamp_int(elements: usize) -> i32 {
    i32::try_from(elements).unwrap_or(i32::MAX)
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

/// Which triangle of a symmetric matrix a routine reads (and a Cholesky factor is written to).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Fill {
    /// The lower triangle (`CUBLAS_FILL_MODE_LOWER`): A = L Lᵀ for Cholesky.
    #[default]
    Lower,
    /// The upper triangle (`CUBLAS_FILL_MODE_UPPER`): A = Uᵀ U for Cholesky.
    Upper,
}

impl Fill {
    /// The `cublasFillMode_t`.
    pub const fn as_raw(self) -> cublasFillMode_t {
        match self {
            Self::Lower => cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
            Self::Upper => cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        }
    }
}

/// Whether a solve uses a factored matrix as it is or transposed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// As factored: A X = B (`CUBLAS_OP_N`).
    #[default]
    No,
    /// Transposed: Aᵀ X = B (`CUBLAS_OP_T`).
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
}

/// Which side of C a product with Q is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Side {
    /// op(Q) C (`CUBLAS_SIDE_LEFT`).
    #[default]
    Left,
    /// C op(Q) (`CUBLAS_SIDE_RIGHT`).
    Right,
}

impl Side {
    /// The `cublasSideMode_t`.
    pub const fn as_raw(self) -> cublasSideMode_t {
        match self {
            Self::Left => cublasSideMode_t::CUBLAS_SIDE_LEFT,
            Self::Right => cublasSideMode_t::CUBLAS_SIDE_RIGHT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_check_their_leading_dimension_and_memory() {
        let packed = Layout::new(3, 2);
        assert_eq!(packed.extent("A").unwrap(), 6);
        assert_eq!(Layout::new(3, 2).ld(5).extent("A").unwrap(), 8);
        let error = Layout::new(3, 2).ld(2).extent("A").unwrap_err();
        assert!(error.to_string().contains("at least 3"), "{error}");
        assert_eq!(Layout::new(0, 4).extent("A").unwrap(), 0);
        assert_eq!(Layout::new(0, 4).leading_dimension(), 1);
        let error = packed.check("A", 5).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("spans 6 elements, but its memory holds 5"),
            "{error}"
        );
        let dims = Layout::new(3, 2).ld(4).check("A", 7).unwrap();
        assert_eq!((dims.rows, dims.cols, dims.ld), (3, 2, 4));
        assert!(Layout::new(1, 1).ld(usize::MAX).extent("A").is_ok());
        assert!(Layout::new(2, 3).ld(usize::MAX).extent("A").is_err());
        assert!(Layout::new(1 << 31, 1).check_int("A", 1 << 31).is_err());
        assert!(Layout::new(2, 3).square_only("A").is_err());
        assert_eq!(Layout::new(2, 3).ld(4).to_string(), "2 x 3 (ld 4)");
    }
}
