//! The loader's error type.

use std::fmt;
use std::path::PathBuf;

use crate::Introduced;

/// One place the loader tried to open a library from, and why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The path or file name handed to the dynamic loader.
    pub candidate: String,
    /// The dynamic loader's reason for refusing it.
    pub reason: String,
}

/// Why a library or one of its entry points could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadError {
    /// No candidate path could be opened; `tried` lists each one in the order tried.
    LibraryNotFound {
        /// The library's display name (`"the CUDA driver (libcuda)"`).
        library: &'static str,
        /// Every candidate tried, in order, with the loader's reason.
        tried: Vec<Attempt>,
    },
    /// The library was loaded but lacks this entry point (an older driver or toolkit).
    SymbolMissing {
        /// The library's display name.
        library: &'static str,
        /// The path the library was loaded from.
        path: PathBuf,
        /// The exported symbol that was looked up (`cuKernelGetParamInfo`).
        symbol: &'static str,
        /// The release that introduced the symbol (a CUDA or an NCCL version), when the
        /// headers say so.
        since: Option<Introduced>,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::LibraryNotFound { library, tried } => {
                write!(
                    f,
                    "{library} could not be loaded; tried {}",
                    AttemptList(tried)
                )
            }
            LoadError::SymbolMissing {
                library,
                path,
                symbol,
                since,
            } => write!(
                f,
                "{library} at {} has no entry point `{symbol}`{}",
                path.display(),
                SinceNote(*since, library)
            ),
        }
    }
}

impl std::error::Error for LoadError {}

struct AttemptList<'a>(&'a [Attempt]);

impl fmt::Display for AttemptList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no candidates");
        }
        for (i, attempt) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{} ({})", attempt.candidate, attempt.reason)?;
        }
        Ok(())
    }
}

/// ` (introduced in CUDA 12.4; update the driver)`: the release that introduced a missing
/// symbol, when known, of the library whose display name is `.1` (`cuBLAS (libcublas)`: a
/// release of a library versioned on its own is named by the name's first word, `cuBLAS 12.5`).
struct SinceNote<'a>(Option<Introduced>, &'a &'static str);

impl fmt::Display for SinceNote<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short: &'static str = self.1.split(' ').next().unwrap_or(self.1);
        match self.0 {
            Some(Introduced::Library(version)) => {
                write!(f, " (introduced in {short} {version}; update {short})")
            }
            Some(release) => write!(
                f,
                " (introduced in {release}; update {})",
                release.remedy(short)
            ),
            None => Ok(()),
        }
    }
}
