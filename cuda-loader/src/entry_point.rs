//! One exported function of a library: its symbol and the release that introduced it.

use std::ffi::CStr;

use crate::{CudaVersion, Introduced, LibraryVersion, NcclVersion};

/// One exported function of a library: its symbol and the release that introduced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryPoint {
    symbol: &'static CStr,
    since: Option<Introduced>,
}

impl EntryPoint {
    /// An entry point named `symbol`, introduced in CUDA `since` (`12040`) when known.
    pub const fn new(symbol: &'static CStr, since: Option<u32>) -> Self {
        let since = match since {
            Some(version) => Some(Introduced::Cuda(CudaVersion(version))),
            None => None,
        };
        Self { symbol, since }
    }

    /// An entry point of NCCL named `symbol`, introduced in the NCCL release whose
    /// `NCCL_VERSION_CODE` is `since` (`21800`) when known.
    pub const fn nccl(symbol: &'static CStr, since: Option<u32>) -> Self {
        let since = match since {
            Some(version) => Some(Introduced::Nccl(NcclVersion(version))),
            None => None,
        };
        Self { symbol, since }
    }

    /// An entry point named `symbol` of a library versioned on its own (cuBLAS, cuRAND),
    /// introduced in release `since` (`(12, 5)`: major, minor) of that library when known.
    pub const fn library(symbol: &'static CStr, since: Option<(u16, u16)>) -> Self {
        let since = match since {
            Some((major, minor)) => Some(Introduced::Library(LibraryVersion::new(major, minor))),
            None => None,
        };
        Self { symbol, since }
    }

    /// The exported symbol, as the dynamic loader sees it (`cuMemAlloc_v2`).
    pub fn symbol(&self) -> &'static CStr {
        self.symbol
    }

    /// The symbol as text.
    pub fn name(&self) -> &'static str {
        self.symbol.to_str().unwrap_or("<non-UTF-8 symbol>")
    }

    /// The CUDA version that introduced this symbol, when the headers say so (`None` for an
    /// NCCL entry point: see [`introduced`](Self::introduced)).
    pub fn since(&self) -> Option<CudaVersion> {
        self.since.and_then(Introduced::cuda)
    }

    /// The release (CUDA or NCCL) that introduced this symbol, when the headers say so.
    pub fn introduced(&self) -> Option<Introduced> {
        self.since
    }
}

#[cfg(test)]
mod tests {
    use super::EntryPoint;
    use crate::{CudaVersion, Introduced, LibraryVersion, NcclVersion};

    #[test]
    fn a_cuda_entry_point_is_dated_by_cuda_and_an_nccl_one_by_nccl() {
        let cuda = EntryPoint::new(c"cuKernelGetParamInfo", Some(12040));
        assert_eq!(cuda.name(), "cuKernelGetParamInfo");
        assert_eq!(cuda.symbol(), c"cuKernelGetParamInfo");
        assert_eq!(cuda.since(), Some(CudaVersion(12040)));
        let nccl = EntryPoint::nccl(c"ncclCommSplit", Some(21800));
        assert_eq!(nccl.since(), None);
        assert_eq!(
            nccl.introduced(),
            Some(Introduced::Nccl(NcclVersion(21800)))
        );
        assert_eq!(EntryPoint::new(c"cuInit", None).introduced(), None);
        let cublas = EntryPoint::library(c"cublasGemmGroupedBatchedEx", Some((12, 5)));
        assert_eq!(cublas.since(), None);
        assert_eq!(
            cublas.introduced(),
            Some(Introduced::Library(LibraryVersion::new(12, 5)))
        );
        assert_eq!(
            EntryPoint::library(c"cublasCreate_v2", None).introduced(),
            None
        );
    }
}
