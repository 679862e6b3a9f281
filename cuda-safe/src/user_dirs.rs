//! The user's cache folder, as each platform names it: where the on-disk program cache and
//! NVRTC's bundled headers go by default.

use std::ffi::OsString;
use std::path::PathBuf;

/// The platform's per-user cache folder: on Linux and the other Unix systems
/// `$XDG_CACHE_HOME` when it is absolute, else `$HOME/.cache` (the XDG rule; with `HOME`
/// unset or empty, the home folder the password database gives the effective user); on macOS
/// `$HOME/Library/Caches`; on Windows `%LOCALAPPDATA%`. `None` where none of these is known.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    cache_dir_from(&|name| std::env::var_os(name))
}

/// [`cache_dir`] with the environment read through `env`.
fn cache_dir_from(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let absolute = |name: &str| {
        env(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    if cfg!(windows) {
        return absolute("LOCALAPPDATA");
    }
    if cfg!(target_os = "macos") {
        return home(env).map(|home| home.join("Library").join("Caches"));
    }
    absolute("XDG_CACHE_HOME").or_else(|| home(env).map(|home| home.join(".cache")))
}

/// `$HOME` when it is set and not empty, else the password database's home folder of the
/// effective user (Unix).
fn home(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .or_else(password_home)
}

/// The effective user's home folder in the password database.
#[cfg(unix)]
fn password_home() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;

    let mut buffer = vec![0u8; 16 << 10];
    // SAFETY: `passwd` is plain data; all-zero is a valid value for getpwuid_r to overwrite.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: `entry` and `found` are valid places to write, and `buffer` is writable for the
    // length given; getpwuid_r writes the strings it points `entry` at into `buffer`.
    let code = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut entry,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &mut found,
        )
    };
    if code != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: on success `pw_dir` points at a NUL-terminated string inside `buffer`, which
    // lives until the end of this function.
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    let dir = std::ffi::OsStr::from_bytes(dir.to_bytes());
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// No password database off Unix.
#[cfg(not(unix))]
fn password_home() -> Option<PathBuf> {
    None
}

#[cfg(all(test, unix, not(target_os = "macos")))]
mod tests {
    use std::ffi::OsString;
    use std::path::PathBuf;

    use crate::user_dirs::cache_dir_from;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(known, _)| known == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn follows_the_xdg_rule() {
        let both = env(&[("XDG_CACHE_HOME", "/x/cache"), ("HOME", "/home/u")]);
        assert_eq!(cache_dir_from(&both), Some(PathBuf::from("/x/cache")));
        let relative = env(&[("XDG_CACHE_HOME", "cache"), ("HOME", "/home/u")]);
        assert_eq!(
            cache_dir_from(&relative),
            Some(PathBuf::from("/home/u/.cache"))
        );
        let empty = env(&[("XDG_CACHE_HOME", ""), ("HOME", "/home/u")]);
        assert_eq!(
            cache_dir_from(&empty),
            Some(PathBuf::from("/home/u/.cache"))
        );
    }

    #[test]
    fn without_home_asks_the_password_database() {
        let none = env(&[]);
        let found = cache_dir_from(&none);
        assert!(
            found
                .as_ref()
                .is_none_or(|dir| dir.is_absolute() && dir.ends_with(".cache")),
            "{found:?}"
        );
    }
}
