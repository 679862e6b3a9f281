//! Where the on-disk cache lives by default, and making a root ready to use.

use std::path::{Path, PathBuf};

use super::fs_ops::{create_private_dir_all, io_error};
use super::private;
use crate::error::{Error, Result};

/// The directory of entry files, under the root.
pub(crate) const ENTRIES: &str = "entries";
/// The directory of temp files and graves, under the root.
pub(crate) const TMP: &str = "tmp";
/// The directory of notes, under the root (made by the first note stored).
pub(crate) const NOTES: &str = "notes";

/// Makes `root` ready: creates it (and missing parents, `0700`) if needed, checks that it and
/// its `entries/` and `tmp/` are this user's alone ([`private::check_root`],
/// [`private::ensure_dir`]), creating or repairing the sub-directories.
///
/// A root that may be read but not written (a read-only cache) is accepted: its missing
/// sub-directories are left missing.
pub(crate) fn prepare(root: &Path) -> Result<()> {
    if let Err(error) = create_private_dir_all(root) {
        // An existing non-directory is reported as such by the check below.
        if !root.exists() {
            return Err(io_error(root, error));
        }
    }
    private::check_root(root)?;
    for sub in [ENTRIES, TMP] {
        // A missing one that cannot be created is a read-only cache: accepted.
        private::ensure_dir(&root.join(sub))?;
    }
    Ok(())
}

/// `<the platform's cache directory>/cuda-safe/program-cache`: on Linux
/// `$XDG_CACHE_HOME/cuda-safe/program-cache`, or `$HOME/.cache/cuda-safe/program-cache` when
/// `XDG_CACHE_HOME` is unset, empty or relative (the XDG rule; the password
/// database's home folder when `HOME` is unset); `~/Library/Caches` on macOS, the local application data
/// folder on Windows.
pub(crate) fn default_root() -> Result<PathBuf> {
    let cache_home = crate::user_dirs::cache_dir().ok_or_else(|| {
        Error::invalid_argument(
            "no default program-cache directory: this system names no cache directory \
             (neither XDG_CACHE_HOME, absolute, nor a home directory); give the cache a \
             directory",
        )
    })?;
    Ok(cache_home.join("cuda-safe").join("program-cache"))
}
