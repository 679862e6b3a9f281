//! The version a cache key names for a compiler loaded at run time (NVRTC for programs,
//! nvJitLink for links), learnt without loading it where a program cache's note says which
//! file the loader would open and what version that file is ([`search`]).
//!
//! Loading NVRTC or nvJitLink to ask its version costs 5–9 ms in a fresh process, more than the
//! rest of a disk hit a hundredfold. So a program cache keeps a note per library: for the
//! loader's search of this environment, the file it opened and that file's version. A fresh
//! process whose search and files match the note keys with that version and loads nothing;
//! any difference loads the library, asks it, and writes the note anew. Whenever a miss loads
//! the library anyway (to compile or link), the recalled version is checked against the
//! library's own answer ([`Learner::check`]): a wrong note is rewritten and the key made again
//! before anything is stored.
//!
//! A note is trusted only for the file this process's loader would open now ([`search`]
//! tells it from the files, in the loader's order), never on its own word; a note found wrong
//! is rewritten with the search it held for, once the library's own answer is known.
//!
//! One [`Learner`] per library holds what the process learnt; the program and link modules
//! each declare theirs with the library's spec and the two calls that tell its version and
//! where it was loaded from. Notes are read from the cache a lookup goes through, or, for a
//! key made with no cache at hand, from the on-disk caches open in the process ([`Notes`]).
//!
//! ```text
//! learn:  known in this process? -> the note of the search (no load) -> ask the library (load),
//!         and note it for the next process
//! check:  a recalled version against the library's answer (a miss loads it anyway)
//! ```

#[cfg(feature = "nvjitlink")]
pub(crate) mod noted;
pub(crate) mod search;

use std::ffi::c_void;
use std::path::Path;
use std::sync::OnceLock;

use cuda_sys::LibrarySpec;
#[cfg(feature = "nvjitlink")]
use noted::NotedSlot;
use search::Search;

#[cfg(feature = "disk-cache")]
use crate::cache::open;
use crate::cache::{CacheKey, ProgramCache};
#[cfg(feature = "nvjitlink")]
use crate::code::CompiledCode;
use crate::error::Result;

/// Where notes are read from and written to.
#[derive(Clone, Copy)]
pub(crate) enum Notes<'a> {
    /// The notes of the cache a lookup goes through (`compile_cached`, `KernelCache`, links).
    In(&'a dyn ProgramCache),
    /// Those of the on-disk caches open in this process ([`open`]): for a key made with no
    /// cache at hand ([`Program::cache_key`](crate::Program::cache_key)).
    Open,
}

impl Notes<'_> {
    /// The note for `search` that holds ([`Search::recall`]), and the version it names.
    fn recall(self, search: &Search) -> Option<(Vec<u8>, String)> {
        let key = search.note_key();
        match self {
            Self::In(cache) => {
                let note = cache.get_note(&key)?;
                let version = search.recall(&note)?;
                Some((note, version))
            }
            #[cfg(feature = "disk-cache")]
            Self::Open => open::find_note(&key, |note| search.recall(note)),
            // No on-disk cache can be open: there are no notes to read.
            #[cfg(not(feature = "disk-cache"))]
            Self::Open => None,
        }
    }

    /// Stores `note` under `key`.
    fn put(self, key: &CacheKey, note: &[u8]) -> Result<()> {
        match self {
            Self::In(cache) => cache.put_note(key, note),
            #[cfg(feature = "disk-cache")]
            Self::Open => open::put_note(key, note),
            #[cfg(not(feature = "disk-cache"))]
            Self::Open => {
                let _ = (key, note);
                Ok(())
            }
        }
    }
}

/// The version a key is made with, and how it was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyVersion {
    /// `major.minor`, as a key spells it.
    pub(crate) version: &'static str,
    /// Whether a note said so (unchecked in this process so far); else the library did.
    pub(crate) recalled: bool,
}

/// What a note recalled in this process: the version, and the search it held for (made
/// before the library loaded), with which a note found wrong is written anew even once the
/// library is loaded (when a new search could tell nothing).
#[derive(Debug)]
struct Recalled {
    version: String,
    search: Search,
}

/// Where the library was loaded from: the candidate it opened as, and the address of one of
/// its functions (the file holding it is the file opened).
pub(crate) type Loaded = (&'static Path, *const c_void);

/// What one process learnt about one library's version, and how to learn more.
#[derive(Debug)]
pub(crate) struct Learner {
    /// Where the loader looks for the library.
    spec: &'static LibrarySpec,
    /// The library's name in messages (`"NVRTC"`).
    name: &'static str,
    /// Loads the library (once per process) and asks its version, `major.minor`.
    ask: fn() -> Result<String>,
    /// The loaded library, if it is loaded and can be told ([`Loaded`]).
    loaded: fn() -> Option<Loaded>,
    /// Whether the process keeps its note for noted copies ([`noted`]).
    copies: bool,
    /// The library's own answer, once asked.
    asked: OnceLock<Result<String>>,
    /// The version a note gave, once recalled.
    recalled: OnceLock<Recalled>,
    /// The note found valid or written, for noted copies (when `copies`).
    #[cfg(feature = "nvjitlink")]
    noted: NotedSlot,
}

impl Learner {
    /// A learner for the library of `spec` (`name` in messages): `ask` loads it and asks its
    /// version, `loaded` tells where it was loaded from; with `copies`, the note is kept for
    /// noted copies.
    pub(crate) const fn new(
        spec: &'static LibrarySpec,
        name: &'static str,
        ask: fn() -> Result<String>,
        loaded: fn() -> Option<Loaded>,
        copies: bool,
    ) -> Self {
        Self {
            spec,
            name,
            ask,
            loaded,
            copies,
            asked: OnceLock::new(),
            recalled: OnceLock::new(),
            #[cfg(feature = "nvjitlink")]
            noted: NotedSlot::new(),
        }
    }

    /// The version to key with if this process has it already, loading and reading nothing:
    /// the library's answer, else the version a note recalled.
    pub(crate) fn known(&'static self) -> Option<KeyVersion> {
        self.settled()?.ok()
    }

    /// [`known`](Self::known), with a failed answer given as the error it was.
    fn settled(&'static self) -> Option<Result<KeyVersion>> {
        match self.asked.get() {
            Some(Ok(version)) => Some(Ok(asked(version))),
            Some(Err(error)) => Some(Err(error.clone())),
            None => self.recalled.get().map(|kept| Ok(recalled(&kept.version))),
        }
    }

    /// The loader's search for the library, made before anything loads it, when this process
    /// knows no version yet (`None` too where the search cannot tell: see [`Search::of`]).
    pub(crate) fn fresh_search(&'static self) -> Option<Search> {
        match self.settled() {
            Some(_) => None,
            None => Search::of(self.spec),
        }
    }

    /// The version to key with: [`known`](Self::known), else what a note of `notes` for
    /// `search` ([`fresh_search`](Self::fresh_search)'s) recalls, else the library's own
    /// answer (loading it), noted in `notes` for the next process.
    ///
    /// # Errors
    ///
    /// The library's, when it must be asked and cannot be loaded or asked.
    pub(crate) fn learn(
        &'static self,
        notes: Notes<'_>,
        search: Option<&Search>,
    ) -> Result<KeyVersion> {
        if let Some(settled) = self.settled() {
            return settled;
        }
        if let Some(search) = search
            && let Some((note, version)) = notes.recall(search)
        {
            self.keep_note(search, &note, &version);
            let kept = self.recalled.get_or_init(|| Recalled {
                version,
                search: search.clone(),
            });
            return Ok(recalled(&kept.version));
        }
        let version = self.answer()?;
        if let Some(search) = search {
            self.remember(search, notes, version);
        }
        Ok(asked(version))
    }

    /// Takes `version`, from a noted entry whose `note` holds for `search`, as this process's
    /// recalled one; false when another thread of this process recalled a different one
    /// first (a note rewritten meanwhile), so the entry is not this process's hit.
    #[cfg(feature = "nvjitlink")]
    pub(crate) fn recall(&'static self, search: &Search, note: &[u8], version: String) -> bool {
        let kept = self.recalled.get_or_init(|| Recalled {
            version: version.clone(),
            search: search.clone(),
        });
        let same = kept.version == version;
        if same {
            self.keep_note(search, note, &version);
        }
        same
    }

    /// The library's own version for a key made with the recalled `used`: loads the library,
    /// and if the note was wrong writes it anew in `cache` and returns the right version
    /// (`None`: it was right).
    ///
    /// # Errors
    ///
    /// The library's, when it cannot be loaded or asked.
    pub(crate) fn check(
        &'static self,
        cache: &dyn ProgramCache,
        used: &str,
    ) -> Result<Option<&'static str>> {
        self.check_in(Notes::In(cache), used)
    }

    /// When this process keys with a recalled version and has not asked the library yet, asks
    /// it (for a caller about to load it anyway: a compile): a wrong note is rewritten in the
    /// on-disk caches open in this process, and logged. Best effort: a failure to ask is the
    /// caller's to meet when it loads the library.
    pub(crate) fn confirm(&'static self) {
        if self.asked.get().is_none()
            && let Some(Recalled { version: used, .. }) = self.recalled.get()
            && let Ok(Some(actual)) = self.check_in(Notes::Open, used)
        {
            log::warn!(
                "cuda-safe: keys this process made from the program cache's note name {} \
                 {used}, but {actual} is loaded",
                self.name
            );
        }
    }

    /// [`check`](Self::check), the note rewritten in `notes`.
    fn check_in(&'static self, notes: Notes<'_>, used: &str) -> Result<Option<&'static str>> {
        // The search the recalled note held for, made before anything loaded the library:
        // the one that loads it now, even where another library of the process loaded one
        // first (the note is then made only if the file loaded is the one it would open).
        let fresh;
        let search = match self.recalled.get() {
            Some(kept) => Some(&kept.search),
            None => {
                fresh = Search::of(self.spec);
                fresh.as_ref()
            }
        };
        let actual = self.answer()?;
        if actual == used {
            return Ok(None);
        }
        log::info!(
            "cuda-safe: the program cache's note named {} {used}, but {actual} is loaded: the \
             note is rewritten",
            self.name
        );
        if let Some(search) = search {
            self.remember(search, notes, actual);
        }
        Ok(Some(actual))
    }

    /// The library's own version, `major.minor` (loading it), asked once per process.
    ///
    /// # Errors
    ///
    /// The library's, when it cannot be loaded or asked (kept, and returned again).
    pub(crate) fn answer(&'static self) -> Result<&'static str> {
        match self.asked.get_or_init(self.ask) {
            Ok(version) => Ok(version),
            Err(error) => Err(error.clone()),
        }
    }

    /// Stores `code`, found or made under `key`, in `cache` as a noted copy with the note this
    /// process keeps ([`noted::store`]; best effort).
    #[cfg(feature = "nvjitlink")]
    pub(crate) fn store_noted(
        &'static self,
        cache: &dyn ProgramCache,
        code: &CompiledCode,
        key: &CacheKey,
        key_of: impl Fn(&str) -> Result<CacheKey>,
    ) {
        noted::store(cache, &self.noted, code, key, key_of);
    }

    /// Keeps `note`, found valid for `search` and naming `version`, for noted copies.
    fn keep_note(&self, search: &Search, note: &[u8], version: &str) {
        #[cfg(feature = "nvjitlink")]
        if self.copies {
            self.noted.keep(noted::label(search), note, version);
        }
        // Only links keep noted copies, and there are none without nvJitLink.
        #[cfg(not(feature = "nvjitlink"))]
        let _ = (self.copies, search, note, version);
    }

    /// Notes in `notes` that the loader's `search` opened the loaded library, of `version`,
    /// and keeps the note for noted copies; best effort (a note that cannot be made or stored
    /// is logged).
    fn remember(&self, search: &Search, notes: Notes<'_>, version: &str) {
        let Some((opened_as, function)) = (self.loaded)() else {
            return;
        };
        let Some(note) = search.note(opened_as, function, version) else {
            log::debug!(
                "cuda-safe: which {} file was loaded cannot be told; no note made",
                self.name
            );
            return;
        };
        self.keep_note(search, &note, version);
        if let Err(error) = notes.put(&search.note_key(), &note) {
            // Best effort (a read-only cache keeps none): the next process asks again.
            log::debug!(
                "cuda-safe: the program cache could not keep its note on {}: {error}",
                self.name
            );
        }
    }
}

fn asked(version: &'static str) -> KeyVersion {
    KeyVersion {
        version,
        recalled: false,
    }
}

fn recalled(version: &'static str) -> KeyVersion {
    KeyVersion {
        version,
        recalled: true,
    }
}

#[cfg(test)]
mod tests;
