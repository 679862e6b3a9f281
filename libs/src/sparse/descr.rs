//! What the matrices and vectors share: the cuSPARSE descriptor they own ([`Descriptor`]), the
//! [`Values`] trait that says whether an operation may write their values, the checks of a
//! dimension against an index type, and the host copy that validation reads.

use std::ffi::c_void;

use bytemuck::Pod;

use crate::operand::{Input, Operand, Output};
use crate::sparse::error::cusparse;
use cuda_safe::handle::Release;
use cuda_safe::{Error, Result, Stream};
use cusparse_sys::Cusparse;

/// The kinds of descriptor, each destroyed by its own call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `cusparseSpMatDescr_t`.
    SpMat,
    /// `cusparseDnMatDescr_t`.
    DnMat,
    /// `cusparseDnVecDescr_t`.
    DnVec,
}

/// One cuSPARSE descriptor, destroyed once (through `Owned`).
#[derive(Debug)]
pub(crate) struct Descriptor {
    pub(crate) raw: *mut c_void,
    pub(crate) kind: Kind,
    pub(crate) cusparse: &'static Cusparse,
}

// SAFETY: a descriptor is a host object cuSPARSE reads during a call; cuSPARSE does not tie it
// to a thread. The types holding one are not `Sync` (an SpMV's preprocessing writes into its
// matrix's descriptor), so it is used from one thread at a time.
unsafe impl Send for Descriptor {}

impl Release for Descriptor {
    const WHAT: &'static str = "cuSPARSE descriptor";

    fn release(&mut self) -> Result<()> {
        let cusparse = self.cusparse;
        // SAFETY: the descriptor was made by the create call of its kind and is destroyed once.
        unsafe {
            match self.kind {
                Kind::SpMat => cusparse!(cusparse, cusparseDestroySpMat(self.raw.cast())),
                Kind::DnMat => cusparse!(cusparse, cusparseDestroyDnMat(self.raw.cast())),
                Kind::DnVec => cusparse!(cusparse, cusparseDestroyDnVec(self.raw.cast())),
            }
        }
    }
}

mod sealed {
    pub trait Values {}
    impl<B: ?Sized> Values for &B {}
    impl<B: ?Sized> Values for &mut B {}
}

/// The values of a matrix or a vector, borrowed for the descriptor's life: `&buffer` makes it
/// read-only (an operand that operations read), `&mut buffer` writable (it may also be an
/// operation's output: `y` of an SpMV, `C` of an SpMM or an SDDMM). Sealed; implemented for
/// references to every [`Input`] and [`Output`].
pub trait Values<'a, T: Pod>: sealed::Values {
    /// The operand, and whether operations may write it.
    ///
    /// # Errors
    ///
    /// As [`Input::operand`].
    fn values(self) -> Result<(Operand<'a>, bool)>;
}

impl<'a, T: Pod, B: Input<T> + ?Sized> Values<'a, T> for &'a B {
    #[inline]
    fn values(self) -> Result<(Operand<'a>, bool)> {
        Ok((self.operand()?, false))
    }
}

impl<'a, T: Pod, B: Output<T> + ?Sized> Values<'a, T> for &'a mut B {
    #[inline]
    fn values(self) -> Result<(Operand<'a>, bool)> {
        Ok((self.operand_mut()?, true))
    }
}

/// `n` as cuSPARSE's `int64_t`, refused when it does not fit an index of `max` (`what` names
/// it).
pub(crate) fn fits(what: &str, n: usize, max: i64, index: &str) -> Result<i64> {
    match i64::try_from(n) {
        Ok(value) if value <= max => Ok(value),
        _ => Err(Error::invalid_argument(format!(
            "{what} is {n}, more than an {index} index holds"
        ))),
    }
}

/// Refuses memory holding fewer than `needed` elements.
pub(crate) fn holds(what: &str, operand: &Operand<'_>, needed: usize) -> Result<()> {
    if operand.len() >= needed {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "{what} needs {needed} elements; the memory holds {}",
        operand.len()
    )))
}

/// The first `len` elements of `operand`, copied to the host after the work queued on its
/// stream (which this waits for).
pub(crate) fn download<T: Pod>(operand: &Operand<'_>, len: usize) -> Result<Vec<T>> {
    let mut host = vec![T::zeroed(); len];
    if len == 0 {
        return Ok(host);
    }
    let stream: &Stream = operand.stream();
    let _current = stream.context().scoped()?;
    let driver = stream.context().driver();
    let bytes = len * size_of::<T>();
    // SAFETY: `operand` holds at least `len` elements of `T` (checked by the callers) on
    // device memory ordered on `stream`; `host` has `bytes` bytes and lives until the stream
    // is drained below.
    unsafe {
        cuda_safe::cu!(
            driver,
            cuMemcpyAsync(
                host.as_mut_ptr() as u64,
                operand.as_raw(),
                bytes,
                stream.as_raw()
            )
        )
    }?;
    stream.drain()?;
    Ok(host)
}
