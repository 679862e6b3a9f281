//! Which file the dynamic loader would open for a library spec (NVRTC's, nvJitLink's), told
//! without opening it, so a fresh process can key a program without loading the compiler.
//!
//! When a process opens the library, the file it got is learnt from the loader itself
//! (`dladdr` of one of its symbols, checked against the device and inode of that mapping in
//! `/proc/self/maps`), and a note records it: that path and the identity of the file there
//! (device, inode, size, modification and change times), the identity of what else steers the
//! search (`/etc/ld.so.cache`, each `LD_LIBRARY_PATH` directory, every path candidate tried
//! before the one that opened), and the version. The note is keyed by everything the search
//! reads from the environment (the candidates, so the override variable and the toolkit
//! roots, `LD_LIBRARY_PATH`, `LD_PRELOAD`, `GLIBC_TUNABLES`).
//!
//! A note is not believed on its own word: a later process takes its version only if every
//! file it names is as it was and the file it says was opened is the one this process's
//! search would open now, told from the files in the loader's order ([`resolve`]: the
//! candidates in turn, a bare name through `LD_LIBRARY_PATH` and `ld.so.cache`), with the same
//! identity. Any difference (a file replaced in place or renamed over, a link retargeted,
//! `ldconfig` run, a candidate appearing, a note naming another file) misses, and the library
//! is opened; a note is written only where that order tells the file that opened.
//!
//! Declined (the library is opened, as without notes): other systems than 64-bit Linux with
//! glibc; a set-user-id process (the loader ignores `LD_LIBRARY_PATH` there); an executable or
//! library holding this code that carries `DT_RPATH`/`DT_RUNPATH` (search paths this module
//! does not read); a library of the spec already loaded in the process (the loader would
//! return it whatever the files say); an `LD_LIBRARY_PATH` with a `$` element (an empty or
//! relative one is the working directory, or lies in it: keyed and watched so); what
//! [`resolve`] cannot tell (a CPU-level sub-directory or cache entry, a name found only in a
//! system library directory).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cuda_sys::LibrarySpec;
use sha2::{Digest, Sha256};

use crate::cache::CacheKey;

/// The first line of every note this module writes.
const HEADER: &str = "cuda-safe library note 1";

/// The environment variables the search reads: the dynamic loader's, and the loader's opt-in
/// to libraries under paths others may write (which changes the candidate it opens).
const LOADER_VARIABLES: [&str; 5] = [
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "GLIBC_TUNABLES",
    "LD_HWCAP_MASK",
    cuda_loader::ALLOW_INSECURE_PATHS_VAR,
];

/// The dynamic loader's cache of library locations, which `ldconfig` rewrites.
const LOADER_CACHE: &str = "/etc/ld.so.cache";

/// A library spec's search as this process would run it.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    key: CacheKey,
    candidates: Vec<PathBuf>,
    library_path: Vec<PathBuf>,
}

impl Search {
    /// The search for `spec` in this process, or `None` where the file it would open cannot be
    /// told without opening it (see the module's documentation).
    pub(crate) fn of(spec: &LibrarySpec) -> Option<Self> {
        Self::with(spec, |var| std::env::var_os(var), loader::clean(spec))
    }

    /// [`Search::of`] with the environment read through `env`; `clean` says whether the
    /// process lets the loader's search decide (not set-user-id, no run paths, nothing of the
    /// spec loaded yet).
    fn with(
        spec: &LibrarySpec,
        env: impl Fn(&str) -> Option<OsString>,
        clean: bool,
    ) -> Option<Self> {
        if !clean {
            return None;
        }
        let candidates = spec.candidates_with(&env);
        let mut library_path = Vec::new();
        if let Some(value) = env("LD_LIBRARY_PATH").filter(|value| !value.is_empty()) {
            let value = value.into_string().ok()?;
            for dir in value.split([':', ';']) {
                // `$ORIGIN`, `$LIB` and `$PLATFORM` are expanded by the loader alone.
                if dir.contains('$') {
                    return None;
                }
                // An empty element is the working directory, and a relative one lies in it.
                let dir = Path::new(if dir.is_empty() { "." } else { dir });
                if dir.is_absolute() {
                    library_path.push(dir.to_path_buf());
                } else {
                    library_path.push(std::env::current_dir().ok()?.join(dir));
                }
            }
        }
        let mut hasher = Sha256::new();
        let mut field = |label: &str, value: &[u8]| {
            hasher.update((label.len() as u64).to_le_bytes());
            hasher.update(label.as_bytes());
            hasher.update((value.len() as u64).to_le_bytes());
            hasher.update(value);
        };
        field("library-identity", HEADER.as_bytes());
        field("arch", std::env::consts::ARCH.as_bytes());
        field("spec", spec.name.as_bytes());
        for candidate in &candidates {
            field("candidate", candidate.as_os_str().as_encoded_bytes());
        }
        for dir in &library_path {
            field("library-path", dir.as_os_str().as_encoded_bytes());
        }
        for var in LOADER_VARIABLES {
            match env(var) {
                Some(value) => field(var, value.as_encoded_bytes()),
                None => field(var, b"\xff unset"),
            }
        }
        Some(Self {
            key: CacheKey::from_bytes(hasher.finalize().into()),
            candidates,
            library_path,
        })
    }

    /// The key of this search's note in a program cache.
    pub(crate) fn note_key(&self) -> CacheKey {
        self.key
    }

    /// The value `note` records, if every file it names is still as it was and the file it
    /// says was opened is the one this search would open now ([`resolve`]), with the same
    /// identity: a note is never believed on its own word.
    pub(crate) fn recall(&self, note: &[u8]) -> Option<String> {
        let text = std::str::from_utf8(note).ok()?;
        let mut lines = text.lines();
        if lines.next()? != HEADER {
            return None;
        }
        let value = lines.next()?.strip_prefix("value\t")?;
        let mut opened = None;
        let mut watched = Vec::new();
        for line in lines {
            let (kind, rest) = line.split_once('\t')?;
            let (path, recorded) = rest.split_once('\t')?;
            match kind {
                "opened" if opened.is_none() => opened = Some(recorded),
                "watch" => watched.push(path),
                _ => return None,
            }
            if identity(Path::new(path)) != recorded {
                return None;
            }
        }
        let opened = opened?;
        // The library path's directories are as the note found them (all of them are
        // watched in a note this module writes; one that is not is looked at again).
        let dirs_as_noted = self
            .library_path
            .iter()
            .all(|dir| watched.iter().any(|path| Path::new(path) == dir));
        (identity(&self.pick(dirs_as_noted)?) == opened).then(|| value.to_owned())
    }

    /// The file the loader would open for this search now ([`resolve::pick`]).
    fn pick(&self, dirs_as_noted: bool) -> Option<PathBuf> {
        resolve::pick(&self.candidates, &self.library_path, dirs_as_noted)
    }

    /// The note for the library this search opened: `opened_as` is the candidate that
    /// opened, `symbol` the address of one of its functions, `value` what to remember (the
    /// version). `None` when what was opened cannot be told for sure, or is not the file this
    /// module tells the search opens (a later recall would refuse the note).
    pub(crate) fn note(
        &self,
        opened_as: &Path,
        symbol: *const std::ffi::c_void,
        value: &str,
    ) -> Option<Vec<u8>> {
        let position = self.candidates.iter().position(|c| c == opened_as)?;
        let file = loader::file_of(symbol)?;
        if identity(&self.pick(false)?) != identity(&file) {
            return None;
        }
        let mut watched: Vec<PathBuf> = vec![PathBuf::from(LOADER_CACHE)];
        watched.extend(self.library_path.iter().cloned());
        watched.extend(
            self.candidates[..position]
                .iter()
                .filter(|c| c.as_os_str().as_encoded_bytes().contains(&b'/'))
                .cloned(),
        );
        note_of(&file, &watched, value)
    }
}

/// A note that `file` was opened, with `watched` as they are now, remembering `value`; `None`
/// for a path or value that a note's lines cannot hold.
fn note_of(file: &Path, watched: &[PathBuf], value: &str) -> Option<Vec<u8>> {
    let plain = |text: &str| !text.contains(['\t', '\n', '\r']);
    if !plain(value) || value.is_empty() {
        return None;
    }
    let mut note = format!("{HEADER}\nvalue\t{value}\n");
    let lines =
        std::iter::once(("opened", file)).chain(watched.iter().map(|p| ("watch", p.as_path())));
    for (kind, path) in lines {
        let text = path.to_str().filter(|text| plain(text))?;
        note.push_str(&format!("{kind}\t{text}\t{}\n", identity(path)));
    }
    Some(note.into_bytes())
}

/// What identifies the file or directory at `path` now (links followed), or `absent`.
fn identity(path: &Path) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(path) {
            Ok(m) => {
                // Written by hand, not with `format!`: this runs in a fresh process's hit,
                // where formatting machinery is the costlier code to run cold.
                let mut text = String::with_capacity(96);
                let fields: [(i128, &str); 7] = [
                    (m.dev().into(), ":"),
                    (m.ino().into(), ":"),
                    (m.size().into(), ":"),
                    (m.mtime().into(), "."),
                    (m.mtime_nsec().into(), ":"),
                    (m.ctime().into(), "."),
                    (m.ctime_nsec().into(), ""),
                ];
                for (value, separator) in fields {
                    push_decimal(&mut text, value);
                    text.push_str(separator);
                }
                text
            }
            Err(_) => "absent".to_owned(),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        "unknown".to_owned()
    }
}

/// Appends `value` in decimal, as `{value}` would.
#[cfg(unix)]
fn push_decimal(text: &mut String, value: i128) {
    if value < 0 {
        text.push('-');
    }
    let mut digits = [0u8; 40];
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    text.extend(digits[at..].iter().map(|&digit| char::from(digit)));
}

/// What the dynamic loader has done in this process: on 64-bit Linux with glibc, read from its
/// own records (`dl_iterate_phdr`, `dladdr`, `/proc/self/maps`); elsewhere nothing is told.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
mod loader;

/// Which file the loader would open, told from the files (glibc's search order and its
/// `ld.so.cache`); elsewhere nothing is told.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
mod resolve;

#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
mod ld_cache;

#[cfg(not(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64")))]
mod resolve {
    use std::path::PathBuf;

    /// Never known here.
    pub(super) fn pick(
        _candidates: &[PathBuf],
        _library_path: &[PathBuf],
        _dirs_as_noted: bool,
    ) -> Option<PathBuf> {
        None
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64")))]
mod loader {
    use std::path::PathBuf;

    use cuda_sys::LibrarySpec;

    /// Never clean: the loader's records are not read here.
    pub(super) fn clean(_spec: &LibrarySpec) -> bool {
        false
    }

    /// Never known here.
    pub(super) fn file_of(_symbol: *const std::ffi::c_void) -> Option<PathBuf> {
        None
    }
}

/// A search made as if this process were clean (tests that need no library loaded).
#[cfg(test)]
impl Search {
    /// The search for `spec` whose one candidate, its override, is `file`.
    pub(crate) fn opening_for_tests(spec: &LibrarySpec, file: &Path) -> Self {
        let env = |var: &str| match var == spec.env_var {
            true => Some(file.as_os_str().to_owned()),
            false => std::env::var_os(var),
        };
        Self::with(spec, env, true)
            .unwrap_or_else(|| panic!("this test environment's LD_LIBRARY_PATH is not absolute"))
    }
}

/// A note that `file` was opened, watching nothing else.
#[cfg(test)]
pub(crate) fn note_for_tests(file: &Path, value: &str) -> Vec<u8> {
    note_of(file, &[], value).unwrap_or_default()
}

#[cfg(test)]
mod tests;
