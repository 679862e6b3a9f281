//! Program caches: compiled code keyed by the SHA-256 of everything the compile read.
//!
//! A [`CacheKey`] is built from the compiler and its version, the target, the source, the
//! options, the name expressions, the in-memory headers and an optional caller digest. A
//! [`ProgramCache`] maps keys to [`CompiledCode`]s (the code, its [`CodeKind`] and the
//! name-expression → lowered-name map; re-exported here from the crate root). This module
//! stores bytes only: loading them, and keeping loaded kernels per process, is
//! [`KernelCache`](crate::KernelCache)'s job. Three implementations:
//!
//! - [`InMemoryProgramCache`]: a thread-safe LRU bounded by bytes;
//! - `FileStreamProgramCache` (feature `disk-cache`, a default): one checksummed file per
//!   entry in a directory private to its user, shared safely by processes;
//! - `TieredProgramCache` (feature `disk-cache`): memory in front of disk.
//!
//! Beside its entries a cache keeps notes ([`ProgramCache::get_note`]): what the NVRTC and
//! nvJitLink library files of this machine were found to be, so a fresh process keys a
//! program or a link without loading them. An on-disk cache also keeps each cached link a
//! second time with its note inside ([`ProgramCache::get_noted`]), so a fresh process finds
//! it in one read; a program is one entry, and a fresh process's hit on it writes nothing.
//!
//! `docs/program-cache.md` describes the key's encoding, the file format and the guarantees.
//!
//! ```
//! # #[cfg(feature = "disk-cache")] {
//! use cuda_safe::cache::{
//!     CacheKey, CompiledCode, CodeKind, FileStreamProgramCache, InMemoryProgramCache,
//!     ProgramCache, TieredProgramCache,
//! };
//!
//! let dir = tempfile::tempdir().unwrap();
//! let cache = TieredProgramCache::new(
//!     InMemoryProgramCache::new(64 << 20),
//!     FileStreamProgramCache::new(dir.path())?.with_max_bytes(1 << 30),
//! );
//! let source = "template <class T> __global__ void saxpy(T a, const T* x, T* y) {}";
//! let key = CacheKey::builder(source)
//!     .compiler("nvrtc", "13.0")
//!     .target(CodeKind::Cubin, "sm_90")
//!     .options(["-std=c++17"])
//!     .name_expressions(["saxpy<float>"])
//!     .build()?;
//!
//! if cache.get(&key)?.is_none() {
//!     // Compile here; a failed compile is never stored.
//!     let compiled = CompiledCode::new(
//!         CodeKind::Cubin,
//!         vec![0x7f, b'E', b'L', b'F'],
//!         vec![("saxpy<float>".to_owned(), "_Z5saxpyIfEvT_PKS0_PS0_".to_owned())],
//!     );
//!     cache.put(&key, &compiled)?;
//! }
//! let hit = cache.get(&key)?.expect("just stored");
//! assert_eq!(hit.lowered_name("saxpy<float>"), Some("_Z5saxpyIfEvT_PKS0_PS0_"));
//! # }
//! # Ok::<(), cuda_safe::Error>(())
//! ```

// The on-disk cache (feature `disk-cache`): its files, their format and the notes beside them.
#[cfg(feature = "disk-cache")]
mod file;
#[cfg(feature = "disk-cache")]
mod format;
#[cfg(feature = "disk-cache")]
mod fs_ops;
#[cfg(feature = "disk-cache")]
mod notes;
#[cfg(feature = "disk-cache")]
mod private;
#[cfg(feature = "disk-cache")]
mod root;
#[cfg(feature = "disk-cache")]
mod temp;
#[cfg(feature = "disk-cache")]
mod tiered;

#[cfg(feature = "disk-cache")]
pub(crate) mod open;

mod key;
mod memory;
mod stats;

pub use crate::code::{CodeKind, CompiledCode};
#[cfg(feature = "disk-cache")]
#[cfg_attr(docsrs, doc(cfg(feature = "disk-cache")))]
pub use file::{
    EntryInfo, FileStreamProgramCache, MAX_ENTRY_BYTES, RECENCY_GRANULARITY, STALE_TEMP_AGE,
};
pub use key::{CacheKey, CacheKeyBuilder, KEY_SCHEMA_VERSION};
pub use memory::InMemoryProgramCache;
pub use stats::CacheStats;
#[cfg(feature = "disk-cache")]
#[cfg_attr(docsrs, doc(cfg(feature = "disk-cache")))]
pub use tiered::TieredProgramCache;

use crate::error::{Error, Result};

/// The largest note a cache stores: 4 KiB.
pub const MAX_NOTE_BYTES: usize = 4096;

/// The refusal of a note over [`MAX_NOTE_BYTES`].
fn too_large(note: &[u8]) -> Option<Error> {
    (note.len() > MAX_NOTE_BYTES).then(|| {
        Error::invalid_argument(format!(
            "a program cache note holds at most {MAX_NOTE_BYTES} bytes, not {}",
            note.len()
        ))
    })
}

/// A store of compiled programs by key. Implementations are safe to share between threads.
///
/// A cache never holds anything it has not checked: a `get` returns a program exactly as it
/// was `put`, or `None`.
pub trait ProgramCache: Send + Sync {
    /// The program stored under `key`, if any.
    fn get(&self, key: &CacheKey) -> Result<Option<CompiledCode>>;

    /// Stores `program` under `key`, replacing what was there. An entry larger than the
    /// cache's cap is not stored, and that is not an error.
    fn put(&self, key: &CacheKey, program: &CompiledCode) -> Result<()>;

    /// Removes `key`'s entry, if there is one.
    fn remove(&self, key: &CacheKey) -> Result<()>;

    /// Removes every entry.
    fn clear(&self) -> Result<()>;

    /// What the cache holds and what it has done.
    fn stats(&self) -> Result<CacheStats>;

    /// The program under `key`; on a miss, `make`'s, stored under `key` and returned.
    ///
    /// A cache that fails to read is a miss and one that fails to store is not an error (both
    /// are logged; a failed store is counted in [`CacheStats::failed_stores`]); `make`'s
    /// error is returned and nothing is stored.
    ///
    /// # Errors
    ///
    /// `make`'s.
    fn get_or_insert_with(
        &self,
        key: &CacheKey,
        make: impl FnOnce() -> Result<CompiledCode>,
    ) -> Result<CompiledCode>
    where
        Self: Sized,
    {
        match self.get(key) {
            Ok(Some(hit)) => return Ok(hit),
            Ok(None) => {}
            Err(error) => {
                log::warn!("cuda-safe: reading program cache entry {key} failed: {error}")
            }
        }
        let made = make()?;
        if let Err(error) = self.put(key, &made) {
            log::warn!("cuda-safe: storing program cache entry {key} failed: {error}");
        }
        Ok(made)
    }

    /// The note stored under `key`, if any: a few bytes the crate keeps beside the entries
    /// (what a compiler's library file was found to be, so a fresh process need not load it
    /// to key a program). A damaged, foreign or unreadable note is `None`, never an error.
    ///
    /// The default keeps no notes.
    fn get_note(&self, key: &CacheKey) -> Option<Vec<u8>> {
        let _ = key;
        None
    }

    /// Stores `note` (at most [`MAX_NOTE_BYTES`]) under `key`, replacing what was there.
    ///
    /// The default keeps no notes and succeeds.
    ///
    /// # Errors
    ///
    /// A cache's own failure to write; a note over [`MAX_NOTE_BYTES`] is
    /// [`InvalidArgument`](crate::Error::InvalidArgument).
    fn put_note(&self, key: &CacheKey, note: &[u8]) -> Result<()> {
        let _ = (key, note);
        Ok(())
    }

    /// The program under `key` and the note stored with it ([`put_noted`](Self::put_noted)),
    /// read together, if `accept` takes the note: what a fresh process needs to find a
    /// link without loading nvJitLink, in one read (programs are not stored noted). An entry stored without a note is
    /// `None` here; one whose note `accept` refuses is `None` too, and counts as no hit.
    ///
    /// The default keeps no noted entries (`Ok(None)`): the crate then reads the note and the
    /// entry apart ([`get_note`](Self::get_note), [`get`](Self::get)). A cache that a new
    /// process finds full (one on disk) gains from keeping them.
    ///
    /// # Errors
    ///
    /// A cache's own failure to read.
    fn get_noted(
        &self,
        key: &CacheKey,
        accept: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Option<(Vec<u8>, CompiledCode)>> {
        let _ = (key, accept);
        Ok(None)
    }

    /// Stores `program` under `key` with `note` (at most [`MAX_NOTE_BYTES`]) in one entry,
    /// replacing what was there; [`get`](Self::get) of `key` returns the program alone.
    ///
    /// The default keeps none and succeeds.
    ///
    /// # Errors
    ///
    /// A cache's own failure to write; a note over [`MAX_NOTE_BYTES`] is
    /// [`InvalidArgument`](crate::Error::InvalidArgument).
    fn put_noted(&self, key: &CacheKey, note: &[u8], program: &CompiledCode) -> Result<()> {
        let _ = (key, note, program);
        Ok(())
    }
}
