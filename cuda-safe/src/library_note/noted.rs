//! Noted copies: a link a cache stores is stored a second time with the note on nvJitLink
//! inside ([`ProgramCache::put_noted`]), under a key that names the loader's search for the
//! library ([`label`]) where the ordinary key names its version, so a fresh process's first
//! hit reads one file.
//!
//! A process that knows no version yet makes the search, reads that one entry, and checks
//! the note as [`Search::recall`] does: if it holds, the note's version is this process's
//! from then on and the entry is the hit, with no note read apart and nothing loaded.
//! Anything else (no such entry, a file changed, a cache that keeps no noted entries) falls
//! back to the note and the ordinary key, and a hit found that way is stored noted for the
//! next process. Programs keep none: a fresh process's program hit reads the note on NVRTC
//! and the entry (two small reads, inside the noise of a copy's one), and writes nothing.

use std::sync::{Arc, Mutex, PoisonError};

use super::search::Search;
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

/// What a process keeps to store noted entries: the label of its search, the note, and the
/// version the note names.
#[derive(Debug)]
struct Noted {
    /// [`label`] of the search the note is for.
    label: String,
    /// The note, as the cache keeps it.
    note: Vec<u8>,
    /// The compiler version the note names (what a process recalling it keys with).
    version: String,
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

    /// Keeps `note`, found valid for the search of `label` and naming `version`, for the
    /// noted entries stored from now on.
    pub(crate) fn keep(&self, label: String, note: &[u8], version: &str) {
        let noted = Arc::new(Noted {
            label,
            note: note.to_vec(),
            version: version.to_owned(),
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

/// The noted entry of `cache` under `key`, if it holds code of `kind` and its note still
/// holds for `search`: the note, the version it names, and the code. A cache that fails to
/// read is a miss (logged).
pub(crate) fn lookup(
    cache: &dyn ProgramCache,
    key: &CacheKey,
    search: &Search,
    kind: CodeKind,
) -> Option<(Vec<u8>, String, CompiledCode)> {
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
    let version = version?;
    (code.kind() == kind).then_some((note, version, code))
}

/// Stores `code`, found or made under `key`, in `cache` with the note kept in `slot`, under
/// the key `key_of` makes from the note's label, if `key` is the one `key_of` makes from the
/// note's version: a noted entry only ever holds code keyed with the version its note names
/// (not code of another compiler, or of another backend for a link). Best effort: nothing
/// without a note or for another key; a key that cannot be made or a cache that cannot store
/// is logged, and the next process reads the note and the entry apart.
pub(crate) fn store(
    cache: &dyn ProgramCache,
    slot: &NotedSlot,
    code: &CompiledCode,
    key: &CacheKey,
    key_of: impl Fn(&str) -> Result<CacheKey>,
) {
    let Some(kept) = slot.get() else {
        return;
    };
    let stored = key_of(&kept.version).and_then(|named| {
        if named != *key {
            log::debug!(
                "cuda-safe: no noted program cache entry for {key}: the note names another \
                 compiler version"
            );
            return Ok(());
        }
        cache.put_noted(&key_of(&kept.label)?, &kept.note, code)
    });
    if let Err(error) = stored {
        log::debug!("cuda-safe: storing a noted program cache entry failed: {error}");
    }
}

// On an on-disk cache, the one kind that keeps noted entries.
#[cfg(all(test, feature = "disk-cache"))]
mod tests {
    use super::{NotedSlot, store};
    use crate::cache::{CacheKey, FileStreamProgramCache, ProgramCache};
    use crate::code::{CodeKind, CompiledCode};

    /// A stand-in for a program's key with `field` as its compiler version.
    fn key_of(field: &str) -> crate::error::Result<CacheKey> {
        CacheKey::builder("extern \"C\" __global__ void k() {}")
            .compiler("nvrtc", field)
            .target(CodeKind::Ptx, "90")
            .build()
    }

    /// A noted entry is stored only for code keyed with the version its note names: code of
    /// another compiler (a recalled note that proved wrong) gets none.
    #[test]
    fn a_noted_entry_holds_only_code_of_the_version_its_note_names() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path()).unwrap();
        let code = CompiledCode::new(CodeKind::Ptx, b".version 8.0".to_vec(), Vec::new());
        let slot = NotedSlot::new();
        let noted_key = key_of("noted search").unwrap();
        store(&cache, &slot, &code, &key_of("12.4").unwrap(), key_of);
        assert_eq!(
            cache.stats().unwrap().entries,
            0,
            "no note kept: nothing stored"
        );

        slot.keep("noted search".into(), b"the note", "12.4");
        store(&cache, &slot, &code, &key_of("12.6").unwrap(), key_of);
        assert_eq!(
            cache.get_noted(&noted_key, &mut |_| true).unwrap(),
            None,
            "code keyed with 12.6 is not stored under a note naming 12.4"
        );
        store(&cache, &slot, &code, &key_of("12.4").unwrap(), key_of);
        assert_eq!(
            cache.get_noted(&noted_key, &mut |_| true).unwrap(),
            Some((b"the note".to_vec(), code))
        );
    }
}
