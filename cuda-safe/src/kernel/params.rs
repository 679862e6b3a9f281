//! A kernel's parameter list, as the driver reports it (`cuKernelGetParamInfo`, CUDA 12.4 on).

use crate::error::Error;
use cuda_sys::{CUkernel, CUresult, Driver, LoadError};

/// One parameter of a kernel, from `cuKernelGetParamInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParamInfo {
    /// Byte offset in the parameter buffer.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// A kernel's parameter list, with the sizes also packed in place for the launch check; or,
/// when the driver failed partway through the list, the parameters read before the failure.
#[derive(Debug)]
pub(crate) struct Params {
    list: Box<[ParamInfo]>,
    /// Whether `list` is the whole list; `false` when the driver failed at index `list.len()`,
    /// so the kernel has at least that many parameters, of which only these are known.
    complete: bool,
    /// The sizes of a list of at most [`PACKED`] parameters: the launch check compares them
    /// without reading the list, which lives elsewhere in memory (one cache line fewer on each
    /// launch, which counts when launches are far apart and the line has gone cold).
    packed: Option<PackedSizes>,
}

/// The most parameters whose sizes are packed.
const PACKED: usize = 15;

/// Up to [`PACKED`] parameter sizes (each under 64 KiB: a kernel's parameters fit in 32,764
/// bytes) and their count, in 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PackedSizes {
    count: u16,
    sizes: [u16; PACKED],
}

impl PackedSizes {
    /// `None` for more than [`PACKED`] sizes or a size of 64 KiB or more.
    #[inline(always)]
    fn pack(sizes: impl ExactSizeIterator<Item = usize>) -> Option<Self> {
        let count = sizes.len();
        if count > PACKED {
            return None;
        }
        let mut packed = Self {
            count: count as u16,
            sizes: [0; PACKED],
        };
        for (slot, size) in packed.sizes.iter_mut().zip(sizes) {
            *slot = u16::try_from(size).ok()?;
        }
        Some(packed)
    }
}

impl Params {
    pub(super) fn new(list: Vec<ParamInfo>) -> Self {
        let packed = PackedSizes::pack(list.iter().map(|param| param.size));
        Self {
            list: list.into_boxed_slice(),
            complete: true,
            packed,
        }
    }

    /// The first parameters of a list the driver failed to read to its end: arguments fit
    /// when there are at least as many and these come first (never packed, so the complete
    /// lists' check is unchanged).
    pub(super) fn prefix(list: Vec<ParamInfo>) -> Self {
        Self {
            list: list.into_boxed_slice(),
            complete: false,
            packed: None,
        }
    }

    /// The parameters, in order (only the first ones when not [`complete`](Self::complete)).
    pub(crate) fn list(&self) -> &[ParamInfo] {
        &self.list
    }

    /// Whether [`list`](Self::list) is the whole list.
    pub(crate) fn complete(&self) -> bool {
        self.complete
    }

    /// Whether arguments of these `sizes` fit the parameters, one for one.
    #[inline(always)]
    pub(crate) fn fit(&self, sizes: &[usize]) -> bool {
        match self.packed {
            Some(packed) => PackedSizes::pack(sizes.iter().copied()) == Some(packed),
            None if self.complete => self.list.len() == sizes.len() && self.prefix_fits(sizes),
            None => self.fit_prefix(sizes),
        }
    }

    /// Whether the first arguments have the sizes of the parameters known.
    #[inline(always)]
    fn prefix_fits(&self, sizes: &[usize]) -> bool {
        self.list
            .iter()
            .zip(sizes)
            .all(|(param, &size)| param.size == size)
    }

    /// [`fit`](Self::fit) for a prefix (the driver failed partway): at least that many
    /// arguments, of those sizes.
    #[cold]
    fn fit_prefix(&self, sizes: &[usize]) -> bool {
        self.list.len() <= sizes.len() && self.prefix_fits(sizes)
    }
}

/// What reading a kernel's parameter list gave.
pub(super) enum ParamRead {
    /// The list.
    Known(Params),
    /// The driver cannot tell (before CUDA 12.4): no checks.
    Unknowable,
    /// No context was current: a later read, in a context, may succeed.
    NotYet,
    /// The driver failed at index `known.list().len()`: the parameters before it (a prefix,
    /// possibly empty) and the error.
    Failed {
        /// The parameters read before the failure.
        known: Params,
        /// The failed call's error.
        error: Error,
    },
}

/// The most parameters a kernel can have (its parameters fit in 32,764 bytes), bounding the
/// read whatever a driver answers.
const MAX_PARAMS: usize = 32_764;

/// Reads the kernel's parameter list (`cuKernelGetParamInfo`, which needs a current context).
/// The driver's answers are told apart here (an index past the end ends the list; no current
/// context is "not yet"; `CUDA_ERROR_NOT_SUPPORTED` or a missing symbol, an old driver, is
/// "never"; any other error a failure, kept with the parameters read before it), so the call is
/// made directly rather than through `cu!`.
#[cold]
pub(super) fn read(driver: &'static Driver, kernel: CUkernel) -> ParamRead {
    let mut params = Vec::new();
    while params.len() <= MAX_PARAMS {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: valid out-pointers and kernel; an index past the end is an error code.
        match unsafe { driver.cuKernelGetParamInfo(kernel, params.len(), &mut offset, &mut size) } {
            Ok(CUresult::CUDA_SUCCESS) => params.push(ParamInfo { offset, size }),
            Ok(CUresult::CUDA_ERROR_INVALID_VALUE) => return ParamRead::Known(Params::new(params)),
            // The driver cannot tell, now or later.
            Ok(CUresult::CUDA_ERROR_NOT_SUPPORTED) => return ParamRead::Unknowable,
            Err(LoadError::SymbolMissing { .. }) => return ParamRead::Unknowable,
            // No context: unknown for now, asked again next time (in a context).
            Ok(CUresult::CUDA_ERROR_INVALID_CONTEXT) => return ParamRead::NotYet,
            failed => {
                let error = match failed {
                    Ok(code) => Error::cuda("cuKernelGetParamInfo", code),
                    Err(error) => Error::Load(error),
                };
                return ParamRead::Failed {
                    known: Params::prefix(params),
                    error,
                };
            }
        }
    }
    ParamRead::Unknowable
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params(sizes: &[usize]) -> Params {
        let mut offset = 0;
        Params::new(
            sizes
                .iter()
                .map(|&size| {
                    let param = ParamInfo { offset, size };
                    offset += size;
                    param
                })
                .collect(),
        )
    }

    #[test]
    fn short_lists_are_packed_and_long_or_wide_ones_are_not() {
        assert!(params(&[4, 8, 8, 8, 8]).packed.is_some());
        assert!(params(&[]).packed.is_some());
        assert!(params(&[8; PACKED]).packed.is_some());
        assert!(params(&[8; PACKED + 1]).packed.is_none());
        assert!(params(&[4, 65_536]).packed.is_none());
        assert_eq!(params(&[4, 8]).list().len(), 2);
    }

    #[test]
    fn arguments_fit_only_one_for_one() {
        let saxpy = params(&[4, 8, 8, 8, 8]);
        assert!(saxpy.fit(&[4, 8, 8, 8, 8]));
        assert!(!saxpy.fit(&[4, 8, 8, 8]));
        assert!(!saxpy.fit(&[4, 8, 8, 8, 8, 0]));
        assert!(!saxpy.fit(&[8, 8, 8, 8, 8]));
        assert!(!saxpy.fit(&[4, 8, 8, 8, 8 + 65_536]));
        assert!(params(&[]).fit(&[]));
        assert!(!params(&[]).fit(&[0]));
    }

    #[test]
    fn a_prefix_fits_longer_arguments_that_begin_with_its_sizes() {
        let known = Params::prefix(vec![ParamInfo { offset: 0, size: 8 }]);
        assert!(!known.complete() && known.packed.is_none());
        assert!(known.fit(&[8]));
        assert!(known.fit(&[8, 4, 16]));
        assert!(!known.fit(&[]));
        assert!(!known.fit(&[4, 8]));
        assert!(Params::prefix(Vec::new()).fit(&[]));
        assert!(Params::prefix(Vec::new()).fit(&[1, 2]));
        assert!(params(&[8]).complete() && !params(&[8]).fit(&[8, 4]));
    }

    proptest! {
        /// Packed or not, `fit` says what comparing the lists one for one says.
        #[test]
        fn fit_is_the_plain_comparison(
            kernel in proptest::collection::vec(prop_oneof![1usize..=16, 1usize..70_000], 0..20),
            args in proptest::collection::vec(prop_oneof![1usize..=16, 1usize..70_000], 0..20),
            same in any::<bool>(),
        ) {
            let args = if same { kernel.clone() } else { args };
            let plain = kernel == args;
            prop_assert_eq!(params(&kernel).fit(&args), plain);
        }
    }
}
