//! The compiler version a cache key names, learnt without loading NVRTC where a cache's note
//! says which NVRTC this process would load ([`identity`](super::identity)).
//!
//! Loading NVRTC to ask `nvrtcVersion` costs 5–9 ms in a fresh process, more than the rest of a
//! disk hit a hundredfold. So a program cache keeps a note: for the loader's search of this
//! environment, the file it opened and what that file's version was. A fresh process whose
//! search and files match the note keys with that version and loads nothing; any difference
//! opens NVRTC, asks it, and writes the note anew. Whenever a miss opens NVRTC anyway (to
//! compile), the recalled version is checked against NVRTC's own answer: a wrong note is
//! rewritten and the program keyed again with the right version before anything is stored.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use super::identity::Search;
use super::noted::{self, NotedSlot};
use super::version::nvrtc_version;
use crate::cache::ProgramCache;
use crate::error::Result;

/// The version a key is made with, and how it was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyCompiler {
    /// `major.minor`, as a key spells it.
    pub(crate) version: &'static str,
    /// Whether NVRTC itself said so (else a note did, unchecked in this process so far).
    pub(crate) asked: bool,
}

/// The version recalled from a note in this process, if any (NVRTC not loaded to ask).
static RECALLED: OnceLock<String> = OnceLock::new();

/// NVRTC's own version, once this process asked it.
static VERSION: OnceLock<String> = OnceLock::new();

/// The note on NVRTC this process found valid or wrote, for its noted entries.
pub(crate) static NOTED: NotedSlot = NotedSlot::new();

/// NVRTC's version as a cache key spells it (`"13.0"`), formatted once per process (the loaded
/// NVRTC does not change).
pub(crate) fn compiler_version() -> Result<&'static str> {
    if let Some(version) = VERSION.get() {
        return Ok(version);
    }
    let (major, minor) = nvrtc_version()?;
    Ok(VERSION.get_or_init(|| format!("{major}.{minor}")))
}

/// The version to key with if this process has it already, loading nothing: NVRTC's answer,
/// else the version a note recalled.
pub(crate) fn known_compiler() -> Option<KeyCompiler> {
    asked_already()
        .map(asked)
        .or_else(|| RECALLED.get().map(|version| recalled(version)))
}

/// The version to key with: [`known_compiler`], else the version a note of `cache` recalls
/// for the NVRTC the loader's `search` (made before anything loaded NVRTC) would open, else
/// NVRTC's answer (loading it), noted in `cache` for the next process.
///
/// # Errors
///
/// [`Error::Load`](crate::Error::Load) when NVRTC must be asked and cannot be loaded.
pub(crate) fn key_compiler(
    cache: &dyn ProgramCache,
    search: Option<&Search>,
) -> Result<KeyCompiler> {
    match known_compiler() {
        Some(known) => Ok(known),
        None => learn(cache, &RECALLED, search),
    }
}

/// [`key_compiler`] once this process knows no version: `recalled_once` keeps what a note
/// said for the rest of the process.
fn learn(
    cache: &dyn ProgramCache,
    recalled_once: &'static OnceLock<String>,
    search: Option<&Search>,
) -> Result<KeyCompiler> {
    if let Some(version) = recalled_once.get() {
        return Ok(recalled(version));
    }
    if let Some(search) = search
        && let Some(note) = cache.get_note(&search.note_key())
        && let Some(version) = search.recall(&note)
    {
        NOTED.keep(noted::label(search), &note, &version);
        return Ok(recalled(recalled_once.get_or_init(|| version)));
    }
    let version = compiler_version()?;
    if let Some(search) = search {
        remember(search, cache, version);
    }
    Ok(asked(version))
}

/// Takes `version`, from a noted entry whose note holds, as this process's recalled one;
/// `None` when another thread of this process recalled a different one first (a note
/// rewritten meanwhile), so the entry is not this process's hit.
pub(crate) fn recall(version: String) -> Option<KeyCompiler> {
    let kept = RECALLED.get_or_init(|| version.clone());
    (*kept == version).then(|| recalled(kept))
}

/// NVRTC's own version for a key made with `used` (a recalled one): loads NVRTC, and if the
/// note was wrong writes it anew in `cache` and returns the right version (`None`: it was
/// right).
///
/// # Errors
///
/// [`Error::Load`](crate::Error::Load) when NVRTC cannot be loaded.
pub(crate) fn check_recalled(cache: &dyn ProgramCache, used: &str) -> Result<Option<&'static str>> {
    // Made before NVRTC is loaded, so it describes the search that loads it.
    let search = Search::of(&nvrtc_sys::LIBNVRTC);
    let actual = compiler_version()?;
    if actual == used {
        return Ok(None);
    }
    log::info!(
        "cuda-safe: the program cache's note named NVRTC {used}, but NVRTC {actual} is loaded: \
         the note is rewritten and the program keyed again"
    );
    if let Some(search) = &search {
        remember(search, cache, actual);
    }
    Ok(Some(actual))
}

/// The version NVRTC gave this process already, if it has (never loading it).
fn asked_already() -> Option<&'static str> {
    VERSION.get().map(String::as_str)
}

fn asked(version: &'static str) -> KeyCompiler {
    KeyCompiler {
        version,
        asked: true,
    }
}

fn recalled(version: &'static str) -> KeyCompiler {
    KeyCompiler {
        version,
        asked: false,
    }
}

/// Notes in `cache` that the loader's `search` opened the loaded NVRTC, of `version`, and
/// keeps the note for this process's noted entries; best effort (a note that cannot be made
/// or stored is logged).
fn remember(search: &Search, cache: &dyn ProgramCache, version: &str) {
    let Ok(nvrtc) = nvrtc_sys::nvrtc() else {
        return;
    };
    let library = nvrtc.library();
    let Some(index) = library
        .entry_points()
        .iter()
        .position(|entry| entry.name() == "nvrtcVersion")
    else {
        return;
    };
    type Version = unsafe extern "C" fn(*mut c_int, *mut c_int) -> nvrtc_sys::nvrtcResult;
    // SAFETY: `nvrtcVersion(int*, int*)` has this signature; only its address is used.
    let Ok(function) = (unsafe { library.get::<Version>(index) }) else {
        return;
    };
    let Some(note) = search.note(library.path(), function as *const c_void, version) else {
        log::debug!("cuda-safe: which NVRTC file was loaded cannot be told; no note made");
        return;
    };
    NOTED.keep(noted::label(search), &note, version);
    if let Err(error) = cache.put_note(&search.note_key(), &note) {
        // Best effort (a read-only cache keeps none): the next process asks NVRTC again.
        log::debug!("cuda-safe: the program cache could not keep its note on NVRTC: {error}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::{KeyCompiler, learn};
    use crate::cache::{InMemoryProgramCache, ProgramCache};
    use crate::program::identity::Search;

    /// A note for a stand-in library file recalls its version without NVRTC, once per
    /// process; a cache without the note asks NVRTC (here: fails to load it, or gets it).
    #[test]
    fn a_note_gives_the_version_without_loading_nvrtc() {
        static RECALLED: OnceLock<String> = OnceLock::new();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libnvrtc.so.99");
        std::fs::write(&file, b"a stand-in").unwrap();
        let search = || Search::for_tests(&nvrtc_sys::LIBNVRTC);
        let cache = InMemoryProgramCache::default();
        let note = crate::program::identity::note_for_tests(&file, "99.1");
        cache.put_note(&search().note_key(), &note).unwrap();
        let learnt = learn(&cache, &RECALLED, Some(&search())).unwrap();
        assert_eq!(
            learnt,
            KeyCompiler {
                version: "99.1",
                asked: false
            }
        );
        // Remembered for the process: no second look at the note.
        let again = learn(&InMemoryProgramCache::default(), &RECALLED, None).unwrap();
        assert_eq!(again.version, "99.1");

        static FRESH: OnceLock<String> = OnceLock::new();
        std::fs::write(&file, b"replaced in place").unwrap();
        match learn(&cache, &FRESH, Some(&search())) {
            Ok(asked) => assert!(asked.asked && asked.version != "99.1"),
            Err(error) => assert!(matches!(error, crate::error::Error::Load(_)), "{error}"),
        }
        assert!(FRESH.get().is_none(), "a changed file is no recall");
    }
}
