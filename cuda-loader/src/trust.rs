//! Whether a library's path is one only root and this user can change.
//!
//! A library is code this process runs, so the loader holds its path to the rule the program
//! cache holds its own directory to: every directory from `/` down to the library, and the
//! library itself, must be owned by root or by this process's effective user and writable by
//! nobody else (neither group nor others). Two refinements keep ordinary systems working:
//!
//! - A *sticky* directory owned by root or this user (`/tmp`, `/var/tmp`, `/dev/shm`: mode
//!   `1777`) passes although others may write it: the sticky bit keeps them from removing or
//!   renaming what they do not own, so a library of this user's directly under `/tmp` stays
//!   this user's, and one another user put there is that user's and refused.
//! - A path through symbolic links is checked where it leads (every directory of the resolved
//!   path), and each link on the way must be owned by root or this user: another user's link
//!   could be pointed anywhere.
//!
//! A path that breaks the rule is refused with a reason naming the offending file or directory
//! and the fix, unless [`ALLOW_INSECURE_PATHS_VAR`] is `1`, which loads it with a warning. Only
//! paths are checked: a bare file name is the dynamic loader's own search. On systems other
//! than Unix nothing is checked.

use std::path::Path;

/// The environment variable that lets a library be loaded from a path another user could
/// change (a directory writable by group or others, or owned by neither root nor this user):
/// set to `1`, such a candidate is loaded with a warning (`log::warn!`) instead of refused.
/// Any other value leaves the rule on.
pub const ALLOW_INSECURE_PATHS_VAR: &str = "CUDA_SAFE_ALLOW_INSECURE_LIBRARY_PATHS";

/// Whether a library whose path breaks the rule is refused or loaded with a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    /// Refused (the default).
    Strict,
    /// Loaded, with a warning: [`ALLOW_INSECURE_PATHS_VAR`] is `1`.
    AllowInsecure,
}

impl Trust {
    /// The policy [`ALLOW_INSECURE_PATHS_VAR`] asks for, read from this process's environment.
    pub(crate) fn from_env() -> Self {
        match std::env::var_os(ALLOW_INSECURE_PATHS_VAR) {
            Some(value) if value == "1" => Self::AllowInsecure,
            Some(value) if !value.is_empty() => {
                log::warn!(
                    "cuda-loader: ignoring {ALLOW_INSECURE_PATHS_VAR}={}: only 1 turns it on",
                    value.to_string_lossy()
                );
                Self::Strict
            }
            _ => Self::Strict,
        }
    }

    /// Why `candidate`, a candidate for `library`, is not handed to the dynamic loader: a file
    /// or directory on its path that another user could change (see [`insecure`]). Under
    /// [`Trust::AllowInsecure`] that is logged as a warning instead, and nothing is refused.
    pub(crate) fn refusal(self, library: &str, candidate: &Path) -> Option<String> {
        let reason = insecure(candidate)?;
        match self {
            Self::Strict => Some(format!(
                "{reason}: not opened; {}, or set {ALLOW_INSECURE_PATHS_VAR}=1 to load it anyway",
                reason.fix
            )),
            Self::AllowInsecure => {
                log::warn!(
                    "cuda-loader: opening {} for {library} although {reason}, as \
                     {ALLOW_INSECURE_PATHS_VAR}=1 allows",
                    candidate.display()
                );
                None
            }
        }
    }
}

/// What another user could change on a library's path, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Insecure {
    /// What is wrong, naming the file, directory or link (`/opt/x is writable by others
    /// (mode 0777), so another user could put another library in its place`).
    what: String,
    /// The remedy (`run \`chmod go-w /opt/x\` if you trust what it holds`).
    fix: String,
}

impl std::fmt::Display for Insecure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

/// The first file, directory or link, from `/` down, on the path to `candidate` (an absolute
/// path) that a user other than root and this one could change; `None` when there is none, for
/// a bare file name or relative path, for a path that cannot be followed to its end (the
/// dynamic loader, following it as this process, says why it fails), and on systems other than
/// Unix.
pub(crate) fn insecure(candidate: &Path) -> Option<Insecure> {
    #[cfg(unix)]
    {
        unix::insecure(candidate)
    }
    #[cfg(not(unix))]
    {
        let _ = candidate;
        None
    }
}

#[cfg(unix)]
mod unix {
    use std::fs::{self, Metadata};
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    use super::Insecure;

    /// The effective user id: the user whose files the process may trust, beside root's.
    fn effective_uid() -> u32 {
        // SAFETY: `geteuid` has no preconditions and cannot fail.
        unsafe { libc::geteuid() }
    }

    /// See [`super::insecure`]. Each prefix of `candidate` is looked at as it is (a link must
    /// be root's or this user's) and where it leads: every directory of its resolved path, from
    /// `/` down, each once.
    pub(super) fn insecure(candidate: &Path) -> Option<Insecure> {
        // A missing file is the dynamic loader's to report, whatever its folders are.
        if !candidate.is_absolute() || fs::metadata(candidate).is_err() {
            return None;
        }
        let me = effective_uid();
        let mut checked: Vec<PathBuf> = Vec::new();
        let mut prefix = PathBuf::new();
        for component in candidate.components() {
            prefix.push(component);
            let link = fs::symlink_metadata(&prefix).ok()?;
            if link.file_type().is_symlink() && !trusted_owner(link.uid(), me) {
                return Some(foreign_link(&prefix, link.uid(), me));
            }
            let resolved = fs::canonicalize(&prefix).ok()?;
            let mut chain: Vec<&Path> = resolved.ancestors().collect();
            chain.reverse();
            for path in chain {
                if checked.iter().any(|done| done == path) {
                    continue;
                }
                let metadata = fs::metadata(path).ok()?;
                if let Some(problem) = problem(path, &metadata, me) {
                    return Some(problem);
                }
                checked.push(path.to_path_buf());
            }
        }
        None
    }

    /// Whether a file of user `owner` is one this process may trust: root's or its own.
    fn trusted_owner(owner: u32, me: u32) -> bool {
        owner == 0 || owner == me
    }

    /// What another user could change at `path` (not a link), if anything: it is owned by
    /// neither root nor this user, or it is writable by group or others and is not a sticky
    /// directory.
    fn problem(path: &Path, metadata: &Metadata, me: u32) -> Option<Insecure> {
        let owner = metadata.uid();
        let kind = if metadata.is_dir() {
            "directory"
        } else {
            "file"
        };
        if !trusted_owner(owner, me) {
            return Some(Insecure {
                what: format!(
                    "the {kind} {} is owned by uid {owner}, neither root nor this user (uid \
                     {me}), so that user could put another library in its place",
                    path.display()
                ),
                fix: "use a copy of your own".to_owned(),
            });
        }
        let mode = metadata.mode() & 0o7777;
        let sticky = metadata.is_dir() && mode & 0o1000 != 0;
        if mode & 0o022 == 0 || sticky {
            return None;
        }
        let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
            (true, true) => "group and others",
            (true, false) => "its group",
            _ => "others",
        };
        Some(Insecure {
            what: format!(
                "the {kind} {} is writable by {who} (mode {mode:04o}), so another user could \
                 put another library in its place",
                path.display()
            ),
            fix: format!(
                "run `chmod go-w {}` if you trust what it holds",
                path.display()
            ),
        })
    }

    /// The link at `path`, owned by `owner`, is another user's.
    fn foreign_link(path: &Path, owner: u32, me: u32) -> Insecure {
        Insecure {
            what: format!(
                "the symbolic link {} is owned by uid {owner}, neither root nor this user (uid \
                 {me}), who could point it anywhere",
                path.display()
            ),
            fix: "replace it by a link of your own".to_owned(),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{ALLOW_INSECURE_PATHS_VAR, Trust};
    use crate::test_support::{
        OPEN_WORKER, OVERRIDE_VAR, PROBE_FILE_NAME, ROOT_VAR, compiled_probe, loaded_library,
        remove_probe, reported, run_worker, set_mode, temp_dir,
    };
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    /// A file named as a library in `dir`, with mode `mode` (what it holds is no matter here).
    fn library_in(dir: &Path, mode: u32) -> PathBuf {
        let path = dir.join(PROBE_FILE_NAME);
        std::fs::write(&path, b"\x7fELF").expect("write");
        set_mode(&path, mode);
        path
    }

    /// A folder `name` in `parent`, with mode `mode`.
    fn dir_in(parent: &Path, name: &str, mode: u32) -> PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        set_mode(&dir, mode);
        dir
    }

    /// Why the rule refuses `path` (empty when it does not).
    fn refusal(path: &Path) -> String {
        Trust::Strict.refusal("the probe", path).unwrap_or_default()
    }

    /// The refusal of a candidate under `dir`, a `kind` writable by `who` with mode `mode`.
    fn writable(kind: &str, dir: &Path, who: &str, mode: u32) -> String {
        format!(
            "the {kind} {dir} is writable by {who} (mode {mode:04o}), so another user could put \
             another library in its place: not opened; run `chmod go-w {dir}` if you trust what \
             it holds, or set {ALLOW_INSECURE_PATHS_VAR}=1 to load it anyway",
            dir = dir.display()
        )
    }

    #[test]
    fn a_library_in_a_directory_that_others_or_its_group_may_write_is_refused() {
        let top = temp_dir("trust-modes", 0o700);
        for (mode, who) in [
            (0o777, "group and others"),
            (0o757, "others"),
            (0o775, "its group"),
        ] {
            let dir = dir_in(&top, &format!("{mode:o}"), mode);
            let library = library_in(&dir, 0o644);
            assert_eq!(refusal(&library), writable("directory", &dir, who, mode));
            // The opt-in loads it, with a warning.
            assert_eq!(Trust::AllowInsecure.refusal("the probe", &library), None);
        }
        let private = dir_in(&top, "755", 0o755);
        assert_eq!(refusal(&library_in(&private, 0o644)), "");
        let _ = std::fs::remove_dir_all(&top);
    }

    #[test]
    fn a_library_file_that_others_or_its_group_may_write_is_refused() {
        let dir = temp_dir("trust-file", 0o755);
        for (mode, who) in [(0o666, "group and others"), (0o664, "its group")] {
            let library = library_in(&dir, mode);
            assert_eq!(refusal(&library), writable("file", &library, who, mode));
        }
        for mode in [0o644, 0o755, 0o600] {
            assert_eq!(refusal(&library_in(&dir, mode)), "", "{mode:o}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A sticky directory (`/tmp`'s `1777`) is a way through: others may add to it, not replace
    /// what is this user's. A library of this user's directly under `/tmp` is loaded; a
    /// world-writable directory under it is refused.
    #[test]
    fn a_sticky_directory_is_a_way_through() {
        let sticky = temp_dir("trust-sticky", 0o1777);
        assert_eq!(refusal(&library_in(&sticky, 0o644)), "");
        let open = dir_in(&sticky, "open", 0o777);
        assert_eq!(
            refusal(&library_in(&open, 0o644)),
            writable("directory", &open, "group and others", 0o777)
        );
        let _ = std::fs::remove_dir_all(&sticky);
        let tmp = std::env::temp_dir();
        let system_tmp = std::fs::metadata(&tmp)
            .is_ok_and(|m| m.uid() == 0 && m.mode() & 0o1777 == 0o1777 && tmp.is_absolute());
        if system_tmp {
            let library = tmp.join(format!("libcuda-loader-trust-{}.so.1", std::process::id()));
            std::fs::write(&library, b"\x7fELF").expect("write");
            set_mode(&library, 0o644);
            assert_eq!(refusal(&library), "", "{}", library.display());
            let _ = std::fs::remove_file(&library);
        }
    }

    /// A path through a symbolic link is checked where it leads: a private directory's link to
    /// a world-writable one is refused, naming the directory the link leads to.
    #[test]
    fn a_path_through_a_link_is_checked_where_it_leads() {
        let top = temp_dir("trust-link", 0o700);
        let open = dir_in(&top, "open", 0o777);
        let good = dir_in(&top, "good", 0o755);
        library_in(&open, 0o644);
        library_in(&good, 0o644);
        let private = dir_in(&top, "private", 0o755);
        std::os::unix::fs::symlink("../open", private.join("bad")).expect("link");
        std::os::unix::fs::symlink("../good", private.join("fine")).expect("link");
        let through_bad = private.join("bad").join(PROBE_FILE_NAME);
        let expected = writable(
            "directory",
            &open.canonicalize().unwrap(),
            "group and others",
            0o777,
        );
        assert_eq!(refusal(&through_bad), expected);
        assert_eq!(refusal(&private.join("fine").join(PROBE_FILE_NAME)), "");
        let _ = std::fs::remove_dir_all(&top);
    }

    /// The system's own libraries (root's, under root's directories) pass, and bare names and
    /// missing paths are left to the dynamic loader.
    #[test]
    fn system_libraries_pass() {
        for prefix in ["libc.so", "libm.so", "ld-linux"] {
            if let Some(library) = loaded_library(prefix) {
                assert_eq!(refusal(&library), "", "{}", library.display());
            }
        }
        assert_eq!(refusal(Path::new("libc.so.6")), "");
        assert_eq!(refusal(Path::new("/nonexistent/libc.so.6")), "");
        // Nor is a missing file refused for its folders: the dynamic loader says it is missing.
        let open = temp_dir("trust-missing", 0o777);
        assert_eq!(refusal(&open.join(PROBE_FILE_NAME)), "");
        let _ = std::fs::remove_dir_all(&open);
    }

    /// A directory, a library or a link owned by another user (neither root nor this one) is
    /// refused, naming its owner. Only root can give a file away, so elsewhere this is skipped.
    #[test]
    fn what_another_user_owns_is_refused() {
        // SAFETY: `geteuid` has no preconditions.
        let me = unsafe { libc::geteuid() };
        if me != 0 {
            println!("skipped: only root can give a file to another user");
            return;
        }
        const OTHER: u32 = 65534;
        let owned = |what: &str, path: &Path, fix: &str| {
            format!(
                "the {what} {} is owned by uid {OTHER}, neither root nor this user (uid 0), \
                 {fix}: not opened; ",
                path.display()
            )
        };
        let top = temp_dir("trust-owner", 0o1777);
        let theirs = dir_in(&top, "theirs", 0o755);
        std::os::unix::fs::chown(&theirs, Some(OTHER), None).expect("chown");
        let reason = refusal(&library_in(&theirs, 0o644));
        let expected = owned(
            "directory",
            &theirs,
            "so that user could put another library in its place",
        );
        assert!(
            reason.starts_with(&(expected + "use a copy of your own")),
            "{reason}"
        );

        let mine = dir_in(&top, "mine", 0o755);
        let library = library_in(&mine, 0o644);
        std::os::unix::fs::chown(&library, Some(OTHER), None).expect("chown");
        let reason = refusal(&library);
        let expected = owned(
            "file",
            &library,
            "so that user could put another library in its place",
        );
        assert!(reason.starts_with(&expected), "{reason}");

        let good = dir_in(&top, "good", 0o755);
        library_in(&good, 0o644);
        let link = top.join("link");
        std::os::unix::fs::symlink(&good, &link).expect("link");
        std::os::unix::fs::lchown(&link, Some(OTHER), None).expect("lchown");
        let reason = refusal(&link.join(PROBE_FILE_NAME));
        let expected = owned("symbolic link", &link, "who could point it anywhere");
        assert!(
            reason.starts_with(&(expected + "replace it by a link of your own")),
            "{reason}"
        );
        let _ = std::fs::remove_dir_all(&top);
    }

    /// End to end, as a `-sys` crate opens its library: a real library in a world-writable
    /// directory, named by the override variable or found under a toolkit root, is refused
    /// with the reason; `CUDA_SAFE_ALLOW_INSECURE_LIBRARY_PATHS=1` (and no other value) loads
    /// it.
    #[test]
    fn a_library_in_a_world_writable_directory_loads_only_when_the_user_opts_in() {
        let source = "int cuda_loader_trust_probe(void) { return 7; }\n";
        let Some(probe) = compiled_probe("trust-optin", source) else {
            return;
        };
        let dir = probe.parent().expect("the probe's folder").to_path_buf();
        set_mode(&dir, 0o777);
        let root = temp_dir("trust-optin-root", 0o777);
        let lib64 = dir_in(&root, "lib64", 0o755);
        let in_root = lib64.join(PROBE_FILE_NAME);
        std::fs::copy(&probe, &in_root).expect("copy");
        set_mode(&in_root, 0o755);
        let allow = ALLOW_INSECURE_PATHS_VAR;

        let output = run_worker(OPEN_WORKER, &[(OVERRIDE_VAR, &probe)], &[allow, ROOT_VAR]);
        let expected = format!(
            "{} | {}",
            probe.display(),
            writable("directory", &dir, "group and others", 0o777)
        );
        assert_eq!(
            reported(&output, "tried: "),
            std::slice::from_ref(&expected)
        );
        let yes = [(OVERRIDE_VAR, probe.as_path()), (allow, Path::new("yes"))];
        let output = run_worker(OPEN_WORKER, &yes, &[ROOT_VAR]);
        assert_eq!(reported(&output, "tried: "), [expected]);
        let opt_in = [(OVERRIDE_VAR, probe.as_path()), (allow, Path::new("1"))];
        let output = run_worker(OPEN_WORKER, &opt_in, &[ROOT_VAR]);
        assert_eq!(reported(&output, "opened: "), [probe.display().to_string()]);

        let output = run_worker(OPEN_WORKER, &[(ROOT_VAR, &root)], &[allow, OVERRIDE_VAR]);
        let tried = reported(&output, "tried: ");
        assert_eq!(tried.len(), 3, "{tried:?}");
        let expected = writable("directory", &root, "group and others", 0o777);
        assert_eq!(tried[1], format!("{} | {expected}", in_root.display()));
        let opt_in = [(ROOT_VAR, root.as_path()), (allow, Path::new("1"))];
        let output = run_worker(OPEN_WORKER, &opt_in, &[OVERRIDE_VAR]);
        assert_eq!(
            reported(&output, "opened: "),
            [in_root.display().to_string()]
        );
        remove_probe(&probe);
        let _ = std::fs::remove_dir_all(&root);
    }
}
