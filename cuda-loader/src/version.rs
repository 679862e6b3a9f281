//! CUDA version numbers as the headers encode them (`12040` is CUDA 12.4).

use std::fmt;

/// A CUDA version in the headers' encoding: `1000 * major + 10 * minor` (`12040` is 12.4).
///
/// This is the encoding of `CUDA_VERSION`, `cuDriverGetVersion` and the suffixes of
/// `cudaTypedefs.h` (`PFN_cuKernelGetParamInfo_v12040`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion(pub u32);

impl CudaVersion {
    /// The major version (`12` for `12040`).
    pub const fn major(self) -> u32 {
        self.0 / 1000
    }

    /// The minor version (`4` for `12040`).
    pub const fn minor(self) -> u32 {
        (self.0 % 1000) / 10
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

#[cfg(test)]
mod tests {
    use super::CudaVersion;

    #[test]
    fn splits_major_and_minor() {
        assert_eq!(CudaVersion(12040).to_string(), "12.4");
        assert_eq!(CudaVersion(3020).to_string(), "3.2");
        assert_eq!(CudaVersion(13000).major(), 13);
        assert_eq!(CudaVersion(13000).minor(), 0);
        assert!(CudaVersion(12090) < CudaVersion(13000));
    }
}
