//! The backend and version a cached link's key names: nvJitLink's version learnt as NVRTC's is
//! ([`library_note`](crate::library_note): from a program cache's note without loading
//! nvJitLink where it can), else the driver's for its linker.

//!
//! Without the `nvjitlink` feature there is nothing to learn: every link keys with the driver's
//! linker, and the notes on nvJitLink are neither read nor written.

#[cfg(feature = "nvjitlink")]
use std::ffi::{c_uint, c_void};

use super::driver;
use super::nvjitlink;
#[cfg(feature = "nvjitlink")]
use super::nvjitlink_usable;
use super::options::LinkerBackend;
use crate::cache::ProgramCache;
#[cfg(feature = "nvjitlink")]
use crate::error::Error;
use crate::error::Result;
use crate::library_note::search::Search;
#[cfg(feature = "nvjitlink")]
use crate::library_note::{KeyVersion, Learner, Loaded, Notes};

/// What this process learnt of nvJitLink's version (usable: with the plain entry points,
/// 12.3 on).
#[cfg(feature = "nvjitlink")]
pub(super) static NVJITLINK: Learner =
    Learner::new(&nvjitlink_sys::LIBNVJITLINK, "nvJitLink", ask, loaded, true);

/// A link's backend and its version, and whether a note (unchecked so far) said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LinkKeying {
    pub(super) backend: LinkerBackend,
    pub(super) version: String,
    pub(super) recalled: bool,
}

/// The loader's search for nvJitLink, made before anything loads it, when a link asking for
/// `asked_for` may use nvJitLink and this process knows no version of it yet (`None` too
/// where the search cannot tell: see [`Search::of`]).
pub(super) fn fresh_search(asked_for: LinkerBackend) -> Option<Search> {
    match asked_for {
        LinkerBackend::Driver => None,
        #[cfg(feature = "nvjitlink")]
        _ => NVJITLINK.fresh_search(),
        #[cfg(not(feature = "nvjitlink"))]
        _ => None,
    }
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
    match asked_for {
        LinkerBackend::Driver => driver_keying(),
        #[cfg(not(feature = "nvjitlink"))]
        _ => {
            let _ = (cache, search);
            unusable(asked_for)
        }
        #[cfg(feature = "nvjitlink")]
        _ => match NVJITLINK.learn(Notes::In(cache), search) {
            Ok(KeyVersion { version, recalled }) => Ok(LinkKeying {
                backend: LinkerBackend::NvJitLink,
                version: version.to_owned(),
                recalled,
            }),
            Err(_) => unusable(asked_for),
        },
    }
}

/// For a key made with a recalled `used`: loads nvJitLink, and when the note was wrong writes
/// it anew and returns the keying to use instead (`None`: it was right).
///
/// # Errors
///
/// As [`keying`].
#[cfg(feature = "nvjitlink")]
pub(super) fn check_recalled(
    asked_for: LinkerBackend,
    cache: &dyn ProgramCache,
    used: &LinkKeying,
) -> Result<Option<LinkKeying>> {
    match NVJITLINK.check(cache, &used.version) {
        Ok(None) => Ok(None),
        Ok(Some(version)) => Ok(Some(LinkKeying {
            backend: LinkerBackend::NvJitLink,
            version: version.to_owned(),
            recalled: false,
        })),
        Err(_) => unusable(asked_for).map(Some),
    }
}

/// [`check_recalled`] without the `nvjitlink` feature: nothing is recalled without nvJitLink's
/// notes, so the key was right.
#[cfg(not(feature = "nvjitlink"))]
pub(super) fn check_recalled(
    asked_for: LinkerBackend,
    cache: &dyn ProgramCache,
    used: &LinkKeying,
) -> Result<Option<LinkKeying>> {
    let _ = (asked_for, cache, used);
    Ok(None)
}

/// The keying when nvJitLink is not usable: the driver's for `Auto`; for nvJitLink asked by
/// name, the version nvJitLink still gives (its link fails later), or the error asking it.
fn unusable(asked_for: LinkerBackend) -> Result<LinkKeying> {
    match asked_for {
        LinkerBackend::Auto => driver_keying(),
        _ => Ok(LinkKeying {
            backend: LinkerBackend::NvJitLink,
            version: nvjitlink::version()?,
            recalled: false,
        }),
    }
}

fn driver_keying() -> Result<LinkKeying> {
    Ok(LinkKeying {
        backend: LinkerBackend::Driver,
        version: driver::version()?,
        recalled: false,
    })
}

/// Loads nvJitLink and asks its version, if it is usable.
#[cfg(feature = "nvjitlink")]
fn ask() -> Result<String> {
    nvjitlink_sys::nvjitlink()?;
    if nvjitlink_usable() {
        nvjitlink::version()
    } else {
        Err(Error::unsupported(
            "linking with nvJitLink",
            "the loaded nvJitLink lacks nvJitLinkCreate or nvJitLinkVersion (12.0 to 12.2)",
        ))
    }
}

/// The loaded nvJitLink: the candidate it opened as, and the address of `nvJitLinkVersion`.
#[cfg(feature = "nvjitlink")]
fn loaded() -> Option<Loaded> {
    let library = nvjitlink_sys::nvjitlink().ok()?.library();
    let index = library
        .entry_points()
        .iter()
        .position(|entry| entry.name() == "nvJitLinkVersion")?;
    type Version = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> nvjitlink_sys::nvJitLinkResult;
    // SAFETY: `nvJitLinkVersion(unsigned int*, unsigned int*)` has this signature; only its
    // address is used.
    let function = unsafe { library.get::<Version>(index) }.ok()?;
    Some((library.path(), function as *const c_void))
}
