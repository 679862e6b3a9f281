//! A fresh process's first hit in one read: each program a cache stores is stored a second
//! time with the note on its compiler's library inside ([`ProgramCache::put_noted`]), under
//! a key that names the loader's search for that library ([`label`]) where the ordinary key
//! names the library's version.
//!
//! A process that knows no version yet makes the search, reads that one entry, and checks
//! the note's files as [`Search::recall`] does: if they hold, the note's version is this
//! process's from then on and the entry is the hit, with no note read apart and nothing
//! loaded. Anything else (no such entry, a file changed, a cache that keeps no noted
//! entries) falls back to the note and the ordinary key, and a hit found that way is stored
//! noted for the next process. The ordinary entry stays what [`Program::cache_key`] names.
//!
//! [`Program::cache_key`]: crate::Program::cache_key

use std::sync::{Arc, Mutex, PoisonError};

use super::identity::Search;
use crate::cache::{CacheKey, ProgramCache};
use crate::code::{CodeKind, CompiledCode};
use crate::error::Result;

/// The compiler-version field of a noted entry's key, for `search`: no version, but the
/// search that finds the library (the note inside says which file and version it found).
pub(crate) fn label(search: &Search) -> String {
    // Built by hand: `format!` is the costlier code to run cold, in a fresh process.
    let mut label = String::with_capacity(70);
    label.push_str("noted ");
    label.push_str(&search.note_key().to_hex());
    label
}

/// What a process keeps to store noted entries: the label of its search and the note.
#[derive(Debug)]
struct Noted {
    /// [`label`] of the search the note is for.
    label: String,
    /// The note, as the cache keeps it.
    note: Vec<u8>,
}

/// The process's [`Noted`] for one library (NVRTC's, nvJitLink's); replaced when a note is
/// rewritten.
#[derive(Debug)]
pub(crate) struct NotedSlot(Mutex<Option<Arc<Noted>>>);

impl NotedSlot {
    /// An empty slot.
    pub(crate) const fn new() -> Self {
        Self(Mutex::new(None))
    }

    /// Keeps `note`, found valid for the search of `label`, for the noted entries stored from
    /// now on.
    pub(crate) fn keep(&self, label: String, note: &[u8]) {
        let noted = Arc::new(Noted {
            label,
            note: note.to_vec(),
        });
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(noted);
    }

    /// What was kept, if anything.
    fn get(&self) -> Option<Arc<Noted>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The noted entry of `cache` under `key` (made with `label`), if it holds code of `kind` and
/// its note still holds for `search`: the version the note names, and the code; the note is
/// kept in `slot`. A cache that fails to read is a miss (logged).
pub(crate) fn lookup(
    cache: &dyn ProgramCache,
    key: &CacheKey,
    (search, label): (&Search, String),
    kind: CodeKind,
    slot: &NotedSlot,
) -> Option<(String, CompiledCode)> {
    let mut version = None;
    let mut accept = |note: &[u8]| {
        version = search.recall(note);
        version.is_some()
    };
    let (note, code) = match cache.get_noted(key, &mut accept) {
        Ok(found) => found?,
        Err(error) => {
            log::warn!("cuda-safe: reading noted program cache entry {key} failed: {error}");
            return None;
        }
    };
    if code.kind() != kind {
        return None;
    }
    slot.keep(label, &note);
    Some((version?, code))
}

/// Stores `code` in `cache` with the note kept in `slot`, under the key `key_of` makes from
/// the note's label; best effort (nothing without a note; a key that cannot be made or a
/// cache that cannot store is logged, and the next process reads the note and the entry
/// apart).
pub(crate) fn store(
    cache: &dyn ProgramCache,
    slot: &NotedSlot,
    code: &CompiledCode,
    key_of: impl FnOnce(&str) -> Result<CacheKey>,
) {
    let Some(kept) = slot.get() else {
        return;
    };
    let stored = key_of(&kept.label).and_then(|key| cache.put_noted(&key, &kept.note, code));
    if let Err(error) = stored {
        log::debug!("cuda-safe: storing a noted program cache entry failed: {error}");
    }
}
