//! The backend and version a cached link's key names, learnt without loading nvJitLink where a
//! program cache's note says which nvJitLink this process would load (as
//! [`Program::compile_cached`](crate::Program::compile_cached) does for NVRTC: see
//! [`identity`](crate::program::identity)).
//!
//! Loading nvJitLink costs 5–7 ms in a fresh process, more than reading and loading the cached
//! image. A note records, for the loader's search of this environment, the nvJitLink file it
//! opened and its version; a fresh process whose search and files match keys with it and loads
//! nothing. A miss loads nvJitLink to link anyway and checks the note first.

use std::ffi::{c_uint, c_void};
use std::sync::OnceLock;

use super::options::LinkerBackend;
use super::{driver, nvjitlink, nvjitlink_usable};
use crate::cache::ProgramCache;
use crate::error::Result;
use crate::program::identity::Search;
use crate::program::noted::{self, NotedSlot};

/// A link's backend and its version, and whether a note (unchecked so far) said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LinkKeying {
    pub(super) backend: LinkerBackend,
    pub(super) version: String,
    pub(super) recalled: bool,
}

/// nvJitLink's version as this process found it when it loaded it: `None` when it is absent
/// or lacks the plain entry points (12.0 to 12.2).
static ASKED: OnceLock<Option<String>> = OnceLock::new();

/// The version a note recalled for the nvJitLink the loader would open.
static RECALLED: OnceLock<String> = OnceLock::new();

/// The note on nvJitLink this process found valid or wrote, for its noted entries.
pub(super) static NOTED: NotedSlot = NotedSlot::new();

/// The loader's search for nvJitLink, made before anything loads it, when a link asking for
/// `asked_for` may use nvJitLink and this process knows no version of it yet (`None` too
/// where the search cannot tell: see [`Search::of`]).
pub(super) fn fresh_search(asked_for: LinkerBackend) -> Option<Search> {
    let fresh =
        asked_for != LinkerBackend::Driver && ASKED.get().is_none() && RECALLED.get().is_none();
    if fresh {
        Search::of(&nvjitlink_sys::LIBNVJITLINK)
    } else {
        None
    }
}

/// Takes `version`, from a noted entry whose note holds, as this process's recalled one;
/// false when another thread of this process recalled a different one first (a note
/// rewritten meanwhile), so the entry is not this process's hit.
pub(super) fn recall(version: String) -> bool {
    *RECALLED.get_or_init(|| version.clone()) == version
}

/// The backend the options ask for (`Auto` resolved as [`Linker::backend`](super::Linker::backend)
/// would) and its version, learnt through `cache`'s note where nvJitLink is not loaded yet;
/// `search` is [`fresh_search`]'s, made before.
///
/// # Errors
///
/// [`Error::Load`](crate::Error::Load) when [`LinkerBackend::NvJitLink`] is asked for and
/// cannot be loaded; the driver's error asking its version.
pub(super) fn keying(
    asked_for: LinkerBackend,
    cache: &dyn ProgramCache,
    search: Option<&Search>,
) -> Result<LinkKeying> {
    let jit = match asked_for {
        LinkerBackend::Driver => None,
        _ => usable_nvjitlink(cache, search),
    };
    Ok(match (asked_for, jit) {
        (LinkerBackend::Driver, _) | (LinkerBackend::Auto, None) => driver_keying()?,
        (_, Some((version, recalled))) => LinkKeying {
            backend: LinkerBackend::NvJitLink,
            version,
            recalled,
        },
        // Asked for by name and not usable: the loader's error, or the version call's.
        (_, None) => LinkKeying {
            backend: LinkerBackend::NvJitLink,
            version: nvjitlink::version()?,
            recalled: false,
        },
    })
}

/// For a key made with a recalled `used`: loads nvJitLink, and when the note was wrong writes
/// it anew and returns the keying to use instead (`None`: it was right).
///
/// # Errors
///
/// As [`keying`].
pub(super) fn check_recalled(
    asked_for: LinkerBackend,
    cache: &dyn ProgramCache,
    used: &LinkKeying,
) -> Result<Option<LinkKeying>> {
    let search = Search::of(&nvjitlink_sys::LIBNVJITLINK);
    let asked = ask();
    if asked.as_deref() == Some(used.version.as_str()) {
        return Ok(None);
    }
    log::info!(
        "cuda-safe: the program cache's note named nvJitLink {}, but {asked:?} is loaded: the \
         note is rewritten and the link keyed again",
        used.version
    );
    if let (Some(search), Some(version)) = (&search, &asked) {
        remember(search, cache, version);
    }
    let actual = match (asked_for, asked) {
        (LinkerBackend::Auto, None) => driver_keying()?,
        (_, Some(version)) => LinkKeying {
            backend: LinkerBackend::NvJitLink,
            version,
            recalled: false,
        },
        (_, None) => LinkKeying {
            backend: LinkerBackend::NvJitLink,
            version: nvjitlink::version()?,
            recalled: false,
        },
    };
    Ok(Some(actual))
}

fn driver_keying() -> Result<LinkKeying> {
    Ok(LinkKeying {
        backend: LinkerBackend::Driver,
        version: driver::version()?,
        recalled: false,
    })
}

/// nvJitLink's version if it is usable, and whether a note said so: this process's answer,
/// else a note's for the file the loader's `search` would open, else the answer of loading it
/// (noted).
fn usable_nvjitlink(cache: &dyn ProgramCache, search: Option<&Search>) -> Option<(String, bool)> {
    if let Some(asked) = ASKED.get() {
        return asked.clone().map(|version| (version, false));
    }
    if let Some(version) = RECALLED.get() {
        return Some((version.clone(), true));
    }
    if let Some(search) = search
        && let Some(note) = cache.get_note(&search.note_key())
        && let Some(version) = search.recall(&note)
    {
        NOTED.keep(noted::label(search), &note, &version);
        return Some((RECALLED.get_or_init(|| version).clone(), true));
    }
    let asked = ask();
    if let (Some(search), Some(version)) = (search, &asked) {
        remember(search, cache, version);
    }
    asked.map(|version| (version, false))
}

/// Loads nvJitLink (once per process) and asks its version, if it is usable.
fn ask() -> Option<String> {
    ASKED
        .get_or_init(|| {
            if nvjitlink_usable() {
                nvjitlink::version().ok()
            } else {
                None
            }
        })
        .clone()
}

/// Notes in `cache` that the loader's `search` opened the loaded nvJitLink, of `version`, and
/// keeps the note for this process's noted entries; best effort (logged).
fn remember(search: &Search, cache: &dyn ProgramCache, version: &str) {
    let Ok(nvjitlink) = nvjitlink_sys::nvjitlink() else {
        return;
    };
    let library = nvjitlink.library();
    let Some(index) = library
        .entry_points()
        .iter()
        .position(|entry| entry.name() == "nvJitLinkVersion")
    else {
        return;
    };
    type Version = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> nvjitlink_sys::nvJitLinkResult;
    // SAFETY: `nvJitLinkVersion(unsigned int*, unsigned int*)` has this signature; only its
    // address is used.
    let Ok(function) = (unsafe { library.get::<Version>(index) }) else {
        return;
    };
    let Some(note) = search.note(library.path(), function as *const c_void, version) else {
        log::debug!("cuda-safe: which nvJitLink file was loaded cannot be told; no note made");
        return;
    };
    NOTED.keep(noted::label(search), &note, version);
    if let Err(error) = cache.put_note(&search.note_key(), &note) {
        // Best effort (a read-only cache keeps none): the next process asks nvJitLink again.
        log::debug!("cuda-safe: the program cache could not keep its note on nvJitLink: {error}");
    }
}
