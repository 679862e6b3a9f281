//! Where the on-disk cache lives by default, and making a root ready to use.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::fs_ops::{create_private_dir_all, io_error};
use super::private;
use crate::error::{Error, Result};

/// The directory of entry files, under the root.
pub(crate) const ENTRIES: &str = "entries";
/// The directory of temp files and graves, under the root.
pub(crate) const TMP: &str = "tmp";

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

/// `$XDG_CACHE_HOME/cuda-safe/program-cache`, or `$HOME/.cache/cuda-safe/program-cache` when
/// `XDG_CACHE_HOME` is unset, empty or relative (the XDG rule).
pub(crate) fn default_root() -> Result<PathBuf> {
    root_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")).ok_or_else(|| {
        Error::invalid_argument(
            "no default program-cache directory: neither XDG_CACHE_HOME (absolute) nor HOME \
             is set; give the cache a directory",
        )
    })
}

fn root_from(xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let cache_home = xdg_cache_home
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| {
            home.filter(|home| !home.is_empty())
                .map(|home| Path::new(&home).join(".cache"))
        })?;
    Some(cache_home.join("cuda-safe").join("program-cache"))
}

#[cfg(test)]
mod tests {
    use super::root_from;
    use std::path::PathBuf;

    #[test]
    fn follows_the_xdg_rule() {
        let some = |text: &str| Some(text.into());
        assert_eq!(
            root_from(some("/xdg"), some("/home/u")),
            Some(PathBuf::from("/xdg/cuda-safe/program-cache"))
        );
        for xdg in [None, some(""), some("relative/dir")] {
            assert_eq!(
                root_from(xdg, some("/home/u")),
                Some(PathBuf::from("/home/u/.cache/cuda-safe/program-cache"))
            );
        }
        assert_eq!(root_from(None, None), None);
        assert_eq!(root_from(some("rel"), some("")), None);
    }
}
