//! Version numbers as the headers encode them: CUDA's (`12040` is CUDA 12.4) and NCCL's
//! (`21803` is NCCL 2.18.3), a CUDA library's own (cuBLAS 12.5, cuRAND 10.3), and which release
//! of its library introduced an entry point.

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

/// An NCCL version in `NCCL_VERSION_CODE`'s encoding: `10000 * major + 100 * minor + patch`
/// from NCCL 2.9 on (`22803` is 2.28.3), `1000 * major + 100 * minor + patch` before it
/// (`2708` is 2.7.8), as the header's `NCCL_VERSION(X, Y, Z)` macro and `ncclGetVersion` give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NcclVersion(pub u32);

impl NcclVersion {
    /// The code of version `major.minor.patch`, as `NCCL_VERSION(major, minor, patch)`.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        if major <= 2 && minor <= 8 {
            Self(major * 1000 + minor * 100 + patch)
        } else {
            Self(major * 10000 + minor * 100 + patch)
        }
    }

    /// Whether the code uses the old encoding (before 2.9: `1000 * major + ...`).
    const fn is_old_encoding(self) -> bool {
        self.0 < 10000
    }

    /// The major version (`2` for `22803`).
    pub const fn major(self) -> u32 {
        if self.is_old_encoding() {
            self.0 / 1000
        } else {
            self.0 / 10000
        }
    }

    /// The minor version (`28` for `22803`).
    pub const fn minor(self) -> u32 {
        if self.is_old_encoding() {
            (self.0 % 1000) / 100
        } else {
            (self.0 % 10000) / 100
        }
    }

    /// The patch level (`3` for `22803`).
    pub const fn patch(self) -> u32 {
        self.0 % 100
    }
}

impl fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major(), self.minor(), self.patch())
    }
}

/// A release of a CUDA library that numbers its versions apart from CUDA (cuBLAS 12.5, whose
/// major follows CUDA's but whose minor does not; cuRAND 10.3, in CUDA 12): the major and minor
/// version its own header gives. Which library it is a release of, the [`LoadError`] that
/// carries it says (its `library`); four bytes, so an error stays small.
///
/// [`LoadError`]: crate::LoadError
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LibraryVersion {
    major: u16,
    minor: u16,
}

impl LibraryVersion {
    /// Version `major.minor` (12, 5).
    pub const fn new(major: u16, minor: u16) -> Self {
        Self { major, minor }
    }

    /// The major version (`12` for 12.5).
    pub const fn major(self) -> u16 {
        self.major
    }

    /// The minor version (`5` for 12.5).
    pub const fn minor(self) -> u16 {
        self.minor
    }
}

impl fmt::Display for LibraryVersion {
    /// `12.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The release of its library that introduced an entry point, as the headers tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Introduced {
    /// A CUDA release (the driver, or a toolkit library), from `cudaTypedefs.h`.
    Cuda(CudaVersion),
    /// An NCCL release: the first NCCL header (at minor-version granularity) declaring it.
    Nccl(NcclVersion),
    /// A release of a library versioned on its own (cuBLAS, cuBLASLt, cuRAND): the first of
    /// its headers (at minor-version granularity) declaring it. The library is the one the
    /// entry point belongs to.
    Library(LibraryVersion),
}

impl Introduced {
    /// The CUDA version, when a CUDA release introduced the entry point.
    pub const fn cuda(self) -> Option<CudaVersion> {
        match self {
            Self::Cuda(version) => Some(version),
            _ => None,
        }
    }

    /// The NCCL version, when an NCCL release introduced the entry point.
    pub const fn nccl(self) -> Option<NcclVersion> {
        match self {
            Self::Nccl(version) => Some(version),
            _ => None,
        }
    }

    /// The library's own version, when a release of a library versioned on its own (cuBLAS,
    /// cuRAND) introduced the entry point.
    pub const fn library(self) -> Option<LibraryVersion> {
        match self {
            Self::Library(version) => Some(version),
            _ => None,
        }
    }

    /// What to update to get the entry point: the driver, NCCL, or `library` (the library's
    /// short name, for a release of a library versioned on its own).
    pub(crate) const fn remedy(self, library: &'static str) -> &'static str {
        match self {
            Self::Cuda(_) => "the driver",
            Self::Nccl(_) => "NCCL",
            Self::Library(_) => library,
        }
    }
}

impl fmt::Display for Introduced {
    /// `CUDA 12.4`, `NCCL 2.18` (an NCCL entry point is dated by its minor release), or
    /// `release 12.5` (of the entry point's own library; a [`LoadError`](crate::LoadError)
    /// names it: `cuBLAS 12.5`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cuda(version) => write!(f, "CUDA {version}"),
            Self::Nccl(version) => write!(f, "NCCL {}.{}", version.major(), version.minor()),
            Self::Library(version) => write!(f, "release {version}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CudaVersion, Introduced, LibraryVersion, NcclVersion};

    #[test]
    fn nccl_codes_follow_both_encodings() {
        assert_eq!(NcclVersion::new(2, 28, 3), NcclVersion(22803));
        assert_eq!(NcclVersion::new(2, 7, 8), NcclVersion(2708));
        assert_eq!(NcclVersion(22803).to_string(), "2.28.3");
        assert_eq!(NcclVersion(2708).to_string(), "2.7.8");
        assert_eq!(
            (
                NcclVersion(21900).major(),
                NcclVersion(21900).minor(),
                NcclVersion(21900).patch()
            ),
            (2, 19, 0)
        );
        assert!(NcclVersion::new(2, 18, 0) < NcclVersion::new(2, 28, 3));
        assert_eq!(
            Introduced::Nccl(NcclVersion(21800)).to_string(),
            "NCCL 2.18"
        );
        assert_eq!(
            Introduced::Cuda(CudaVersion(12040)).to_string(),
            "CUDA 12.4"
        );
        assert_eq!(Introduced::Cuda(CudaVersion(12040)).nccl(), None);
        assert_eq!(
            Introduced::Nccl(NcclVersion(21800)).nccl(),
            Some(NcclVersion(21800))
        );
    }

    #[test]
    fn splits_major_and_minor() {
        assert_eq!(CudaVersion(12040).to_string(), "12.4");
        assert_eq!(CudaVersion(3020).to_string(), "3.2");
        assert_eq!(CudaVersion(13000).major(), 13);
        assert_eq!(CudaVersion(13000).minor(), 0);
        assert!(CudaVersion(12090) < CudaVersion(13000));
    }

    #[test]
    fn a_library_version_is_its_own_numbering() {
        let cublas = LibraryVersion::new(12, 5);
        assert_eq!(cublas.to_string(), "12.5");
        assert_eq!((cublas.major(), cublas.minor()), (12, 5));
        assert!(LibraryVersion::new(12, 9) > cublas);
        let introduced = Introduced::Library(cublas);
        assert_eq!(introduced.to_string(), "release 12.5");
        assert_eq!(introduced.library(), Some(cublas));
        assert_eq!(introduced.cuda(), None);
        assert_eq!(introduced.nccl(), None);
        assert_eq!(introduced.remedy("cuBLAS"), "cuBLAS");
        assert_eq!(Introduced::Cuda(CudaVersion(12040)).library(), None);
        assert_eq!(Introduced::Nccl(NcclVersion(21800)).remedy("x"), "NCCL");
        // As small as the CUDA and NCCL dates, so an error carrying one stays small.
        assert_eq!(size_of::<Option<Introduced>>(), 8);
    }
}
