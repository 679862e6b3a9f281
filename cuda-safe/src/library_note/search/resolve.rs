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
pub(super) fn pick(candidates: &[PathBuf], library_path: &[PathBuf]) -> Option<PathBuf> {
    // The loader's cache, read once for every bare name (a fresh process's hit pays for it).
    let mut cache = None;
    for candidate in candidates {
        let found = if candidate.as_os_str().as_encoded_bytes().contains(&b'/') {
            if !candidate.is_absolute() {
                continue; // refused by the loader: relative to the working directory
            }
            regular_file(candidate)?
        } else {
            find_name(candidate, library_path, &mut cache)?
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

/// Where glibc finds the bare file `name`: as [`regular_file`] says. `cache` holds the
/// loader's cache once read (`None` until then; `Some(None)` when there is none).
fn find_name(
    name: &Path,
    library_path: &[PathBuf],
    cache: &mut Option<Option<Vec<u8>>>,
) -> Option<Option<PathBuf>> {
    for dir in library_path {
        for sub in SUBDIRECTORIES {
            match fs::symlink_metadata(dir.join(sub)) {
                Ok(_) => return None,
                Err(error) if is_absent(&error) => {}
                Err(_) => return None,
            }
        }
        if let Some(found) = regular_file(&dir.join(name))? {
            return Some(Some(found));
        }
    }
    if cache.is_none() {
        *cache = Some(match fs::read(LOADER_CACHE) {
            Ok(bytes) => Some(bytes),
            Err(error) if is_absent(&error) => None,
            Err(_) => return None,
        });
    }
    if let Some(Some(bytes)) = cache.as_ref()
        && let Some(found) = ld_cache::lookup(bytes, name.as_os_str().as_encoded_bytes())?
    {
        return Some(Some(found));
    }
    let in_system_dir = system_dirs()
        .iter()
        .any(|dir| !matches!(regular_file(&dir.join(name)), Some(None)));
    if in_system_dir { None } else { Some(None) }
}

/// The system's library directories on this architecture (Debian's multi-arch ones too).
fn system_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let triple = format!("{}-linux-gnu", std::env::consts::ARCH);
    dirs.push(Path::new("/lib").join(&triple));
    dirs.push(Path::new("/usr/lib").join(&triple));
    dirs
}
