//! Which file the dynamic loader would open for a search's candidates, told from the files
//! alone, so that a note is trusted only for that file.
//!
//! The loader (`cuda_loader`) tries the candidates in order. A candidate with a `/` is opened
//! as it is: an absolute path to a regular file (a relative one, or a directory, FIFO or
//! device, is refused and the next tried). A bare file name is glibc's to find: in each
//! `LD_LIBRARY_PATH` directory in order, then through `/etc/ld.so.cache` (`ldconfig`'s map
//! of names to files), then in the system's library directories.
//!
//! Where that order could pick a file this module does not model, it says nothing (`None`)
//! and no note is trusted: a `glibc-hwcaps`, `tls` or platform sub-directory in an
//! `LD_LIBRARY_PATH` directory (searched before the directory itself), a cache entry for
//! another CPU level or OS version, a name found only in a system directory (whose order is
//! glibc's build's), a cache in a format other than glibc's "1.1" of this machine's byte
//! order, or an architecture without a known cache tag. Run paths and libraries already
//! loaded are declined before ([`Search::of`](super::Search::of)).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::{LOADER_CACHE, ld_cache};

/// The sub-directories glibc searches in an `LD_LIBRARY_PATH` directory before the directory
/// itself (per CPU level, the TLS and platform directories of glibc before 2.37).
const SUBDIRECTORIES: [&str; 7] = [
    "glibc-hwcaps",
    "tls",
    "haswell",
    "xeon_phi",
    "avx512_1",
    "x86_64",
    "aarch64",
];

/// The file the loader would open for `candidates`, with `library_path` the `LD_LIBRARY_PATH`
/// directories (absolute); `None` when none would open or it cannot be told.
///
/// `dirs_as_noted`: every directory of `library_path` has the identity a note recorded
/// (device, inode, modification and change times), so holds the entries it held when the
/// note's search passed it, none of [`SUBDIRECTORIES`] among them (a note is written only
/// then); their absence is not looked at again. Whether a file name there leads to a file is
/// (a link's target may have appeared).
pub(super) fn pick(
    candidates: &[PathBuf],
    library_path: &[PathBuf],
    dirs_as_noted: bool,
) -> Option<PathBuf> {
    let mut names = NameSearch {
        library_path,
        clean_dirs: if dirs_as_noted { library_path.len() } else { 0 },
        cache: None,
    };
    for candidate in candidates {
        let found = if candidate.as_os_str().as_encoded_bytes().contains(&b'/') {
            if !candidate.is_absolute() {
                continue; // refused by the loader: relative to the working directory
            }
            regular_file(candidate)?
        } else {
            names.find(candidate)?
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// `Some(Some(path))` for a regular file (links followed) at `path`, `Some(None)` for nothing
/// or something else there (the loader goes on), `None` when it cannot be told.
fn regular_file(path: &Path) -> Option<Option<PathBuf>> {
    match fs::metadata(path) {
        Ok(metadata) => Some(metadata.is_file().then(|| path.to_path_buf())),
        Err(error) if is_absent(&error) => Some(None),
        Err(_) => None,
    }
}

fn is_absent(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// glibc's search for bare names, with what one pick reads once: which `LD_LIBRARY_PATH`
/// directories hold none of [`SUBDIRECTORIES`], and the loader's cache.
struct NameSearch<'a> {
    library_path: &'a [PathBuf],
    /// How many directories of `library_path`, from the first, were found without any of
    /// [`SUBDIRECTORIES`].
    clean_dirs: usize,
    /// The loader's cache once read (`Some(None)` when there is none).
    cache: Option<Option<Vec<u8>>>,
}

impl NameSearch<'_> {
    /// Where glibc finds the bare file `name`: as [`regular_file`] says.
    fn find(&mut self, name: &Path) -> Option<Option<PathBuf>> {
        for (index, dir) in self.library_path.iter().enumerate() {
            if index == self.clean_dirs {
                for sub in SUBDIRECTORIES {
                    match fs::symlink_metadata(dir.join(sub)) {
                        Ok(_) => return None,
                        Err(error) if is_absent(&error) => {}
                        Err(_) => return None,
                    }
                }
                self.clean_dirs += 1;
            }
            if let Some(found) = regular_file(&dir.join(name))? {
                return Some(Some(found));
            }
        }
        if self.cache.is_none() {
            self.cache = Some(match fs::read(LOADER_CACHE) {
                Ok(bytes) => Some(bytes),
                Err(error) if is_absent(&error) => None,
                Err(_) => return None,
            });
        }
        if let Some(Some(bytes)) = &self.cache
            && let Some(found) = ld_cache::lookup(bytes, name.as_os_str().as_encoded_bytes())?
        {
            return Some(Some(found));
        }
        let in_system_dir = system_dirs()
            .any(|dir| !matches!(regular_file(&Path::new(dir).join(name)), Some(None)));
        if in_system_dir { None } else { Some(None) }
    }
}

/// The system's library directories on this architecture (Debian's multi-arch ones too).
fn system_dirs() -> impl Iterator<Item = &'static str> {
    let multiarch: &[&str] = if cfg!(target_arch = "x86_64") {
        &["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"]
    } else if cfg!(target_arch = "aarch64") {
        &["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"]
    } else {
        &[]
    };
    ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
        .into_iter()
        .chain(multiarch.iter().copied())
}
