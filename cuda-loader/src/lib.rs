//! Run-time loading of NVIDIA's shared libraries for the `-sys` crates.
//!
//! Each `-sys` crate describes its library with a [`LibrarySpec`] (a display name, the
//! environment variable that overrides the path, and the versioned file names to try) and its
//! entry points with a generated table of [`EntryPoint`]s. [`Library::open`] opens the first
//! candidate that loads; [`Library::get`] resolves an entry point the first time it is called
//! and caches the address, so a symbol that an older library lacks fails only when it is used,
//! with [`LoadError::SymbolMissing`].
//!
//! A candidate given as a path is vetted before the dynamic loader sees it, and refused with the
//! reason (in [`LoadError::LibraryNotFound`]'s list) when it is relative, not a regular file, on
//! a path another user could change (owned by neither root nor this user, or writable by group
//! or others, a sticky directory such as `/tmp` aside: [`ALLOW_INSECURE_PATHS_VAR`] set to `1`
//! loads it anyway, with a warning), or an ELF file whose headers do not fit it (a truncated
//! copy, which `dlopen` would die of with `SIGBUS`).
//!
//! ```
//! use cuda_loader::{EntryPoint, Library, LibrarySpec, LoadError};
//!
//! static ENTRY_POINTS: [EntryPoint; 1] = [EntryPoint::new(c"cuNotARealSymbol", None)];
//! static SPEC: LibrarySpec = LibrarySpec {
//!     name: "example library",
//!     env_var: "CUDA_LOADER_DOC_EXAMPLE_PATH",
//!     file_names: &["libdoes-not-exist.so.1"],
//!     search_dirs: &[],
//!     wheel_dirs: &[],
//!     global: false,
//! };
//! // SAFETY: the only candidate does not exist, so no library's initialisers run.
//! match unsafe { Library::open(&SPEC, &ENTRY_POINTS) } {
//!     Err(LoadError::LibraryNotFound { tried, .. }) => assert_eq!(tried.len(), 1),
//!     other => panic!("unexpected: {other:?}"),
//! }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(all(unix, not(target_vendor = "apple")))]
mod elf;
mod entry_point;
mod error;
mod library;
mod open;
mod spec;
#[cfg(all(test, unix))]
mod test_support;
mod trust;
mod version;

pub use entry_point::EntryPoint;
pub use error::{Attempt, LoadError};
pub use library::Library;
pub use spec::{LibrarySpec, PYTHON_ENV_VARS};
pub use trust::ALLOW_INSECURE_PATHS_VAR;
pub use version::{CudaVersion, Introduced, LibraryVersion, NcclVersion};
