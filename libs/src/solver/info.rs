//! [`Info`]: a routine's `info` output, in device memory until read back, and what its values
//! mean for each routine.

use std::fmt;

use super::CusolverError;
use super::handle::Solver;
use crate::operand::{Input, Operand};
use cuda_safe::Buffer;
use cuda_safe::{Error, Result};

/// What a routine's positive `info` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meaning {
    /// A zero pivot of an LU factorization.
    Pivot,
    /// A leading minor that is not positive definite.
    Minor,
    /// An iteration that did not converge.
    Convergence,
    /// Nothing: the routine reports only refused parameters.
    ParametersOnly,
}

/// The `info` output of one routine (one `int` per matrix of a batch), written by the GPU when
/// the routine runs. Getting it costs nothing; [`check`](Self::check) waits for the routine
/// and turns a non-zero value into a [`CusolverError`]:
///
/// - LU ([`getrf`](Solver::getrf)): `info = i > 0` is [`CusolverError::Singular`] with
///   `pivot = i`, `U(i, i)` being exactly zero;
/// - Cholesky ([`potrf`](Solver::potrf)): [`CusolverError::NotPositiveDefinite`] with
///   `minor = i`;
/// - eigenvalues and SVDs ([`syevd`](Solver::syevd), [`gesvd`](Solver::gesvd),
///   [`gesvdj_batched`](Solver::gesvdj_batched)): [`CusolverError::NoConvergence`];
/// - `info = -i < 0`, any routine: [`CusolverError::InvalidParameter`] with `parameter = i`.
///
/// The memory comes from the handle's memory resource, allocated in order on its stream, and
/// is freed in order when the `Info` drops (reading it or not). Inside a graph capture it is a
/// graph allocation: drop the `Info` inside the capture (the graph then allocates and frees it
/// at each replay) or read [`memory`](Self::memory) from a later captured operation.
#[must_use = "an Info says whether the routine succeeded: check it, or drop it knowingly"]
pub struct Info {
    memory: Buffer,
    api: &'static str,
    meaning: Meaning,
    batch: Option<usize>,
}

impl Info {
    /// Room for one routine's `info` (`batch` values for a batched routine).
    pub(crate) fn new(
        solver: &Solver,
        api: &'static str,
        meaning: Meaning,
        batch: Option<usize>,
    ) -> Result<Self> {
        let count = batch.unwrap_or(1).max(1);
        let bytes = count
            .checked_mul(size_of::<i32>())
            .ok_or_else(|| Error::invalid_argument("a batch too large for its info"))?;
        Ok(Self {
            memory: solver.allocate(bytes)?,
            api,
            meaning,
            batch,
        })
    }

    /// The device memory the routine writes its `info` to.
    pub(crate) fn operand(&self) -> Result<Operand<'_>> {
        Input::<i32>::operand(&self.memory)
    }

    /// The routine (`cusolverDnXgetrf`).
    pub fn api(&self) -> &'static str {
        self.api
    }

    /// The `info` memory (`i32`s, one per matrix), ordered on the solver's stream.
    pub fn memory(&self) -> &Buffer {
        &self.memory
    }

    /// Waits for the routine and reads its `info` values (one per matrix of a batch).
    ///
    /// # Errors
    ///
    /// The driver's error copying them.
    pub fn values(&self) -> Result<Vec<i32>> {
        self.memory.to_vec()
    }

    /// Waits for the routine (the solver's stream, up to it) and checks its `info`: `Ok` when
    /// every value is 0, else the first failing matrix's [`CusolverError`] (see [`Info`]).
    ///
    /// # Errors
    ///
    /// [`Error::Library`] around [`CusolverError`]; the driver's error reading the values.
    pub fn check(self) -> Result<()> {
        let values = self.values()?;
        match values.iter().position(|&value| value != 0) {
            None => Ok(()),
            Some(index) => Err(self.error(values[index], self.batch.map(|_| index))),
        }
    }

    /// The error `value` (non-zero) of matrix `matrix` means.
    fn error(&self, value: i32, matrix: Option<usize>) -> Error {
        let (api, at) = (self.api, i64::from(value));
        let error = match self.meaning {
            _ if value < 0 => CusolverError::InvalidParameter {
                api,
                parameter: -at,
                matrix,
            },
            Meaning::Pivot => CusolverError::Singular {
                api,
                pivot: at,
                matrix,
            },
            Meaning::Minor => CusolverError::NotPositiveDefinite {
                api,
                minor: at,
                matrix,
            },
            Meaning::Convergence => CusolverError::NoConvergence {
                api,
                count: at,
                matrix,
            },
            Meaning::ParametersOnly => {
                return Error::unexpected(api, format!("info = {value}, which it never reports"));
            }
        };
        error.into()
    }
}

impl fmt::Debug for Info {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Info")
            .field("api", &self.api)
            .field("batch", &self.batch)
            .field("memory", &self.memory.as_raw())
            .finish()
    }
}
