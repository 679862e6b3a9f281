//! Where to look for a library.

use std::ffi::OsString;
use std::path::PathBuf;

/// How to find one library: its name, its override variable and its candidate file names.
#[derive(Debug)]
pub struct LibrarySpec {
    /// Display name used in errors (`"the CUDA driver (libcuda)"`).
    pub name: &'static str,
    /// Environment variable holding an explicit path. When it is set (and not empty), that
    /// path is the only candidate: an explicit choice is never silently replaced by another
    /// library. A relative path (one with a folder, `./libnccl.so.2`) is never opened, whichever
    /// library it is for: it would resolve against the working directory, so the load fails,
    /// naming it and why; a bare file name goes to the dynamic loader's search.
    pub env_var: &'static str,
    /// Versioned file names, tried first through the system's search path, in order.
    pub file_names: &'static [&'static str],
    /// Environment variables naming toolkit roots (`CUDA_HOME`); for each one set to an
    /// absolute path, and then for `/usr/local/cuda`, `<root>/lib64/<file name>` is tried after
    /// the plain file names. A relative root is ignored with a warning: it would resolve against
    /// whatever the working directory is, so a library planted there would be loaded.
    pub search_dirs: &'static [&'static str],
    /// Folders inside a Python environment's `site-packages` where NVIDIA's PyPI wheels put
    /// the library (`nvidia/cublas/lib` for a CUDA 12 wheel, `nvidia/cu13/lib` for a CUDA 13
    /// one). For each of [`PYTHON_ENV_VARS`] set to an absolute path (an active virtual
    /// environment or conda environment), `<env>/lib/python3.*/site-packages/<folder>/<file
    /// name>` is tried after the toolkit roots (`<env>\Lib\site-packages\...` on Windows). A
    /// process that has already loaded the library (a Python program that imported PyTorch)
    /// finds it by its soname, through the plain file names.
    pub wheel_dirs: &'static [&'static str],
    /// Whether the library is opened as a library the executable is linked to is loaded at
    /// startup (`RTLD_NOW | RTLD_GLOBAL` on Unix: its symbols bound at open, a library that
    /// cannot be bound failing there, and joining the process's global scope); otherwise with
    /// `RTLD_LAZY | RTLD_LOCAL`. Only for a library of which a system has one copy, the
    /// driver's `libcuda`: the symbols of a global toolkit library (NVRTC, nvJitLink, NCCL), of
    /// which a process may hold another version (a framework's wheel), would take the place
    /// of that version's for the code that uses it.
    pub global: bool,
}

/// The toolkit root tried after the environment's roots.
const DEFAULT_TOOLKIT_ROOT: &str = "/usr/local/cuda";

/// The variables naming a Python environment whose wheels [`LibrarySpec::wheel_dirs`] are
/// looked for in: a virtual environment's (`VIRTUAL_ENV`, set by its `activate`) and a conda
/// environment's (`CONDA_PREFIX`).
pub const PYTHON_ENV_VARS: [&str; 2] = ["VIRTUAL_ENV", "CONDA_PREFIX"];

impl LibrarySpec {
    /// The candidates to try, in order, reading the environment of this process.
    pub fn candidates(&self) -> Vec<PathBuf> {
        self.candidates_with(|var| std::env::var_os(var))
    }

    /// The candidates to try, in order, reading variables through `env`.
    ///
    /// An explicit path from [`env_var`](Self::env_var) is the only candidate when it is set;
    /// otherwise the plain file names come first (the dynamic loader's own search), then the
    /// same names under each toolkit root's `lib64`, then in the wheels' folders of each Python
    /// environment (see [`wheel_dirs`](Self::wheel_dirs)). Duplicates are dropped.
    pub fn candidates_with(&self, env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
        if let Some(explicit) = env(self.env_var).filter(|value| !value.is_empty()) {
            return vec![PathBuf::from(explicit)];
        }
        let mut candidates: Vec<PathBuf> = self.file_names.iter().map(PathBuf::from).collect();
        let mut add = |path: PathBuf| {
            if !candidates.contains(&path) {
                candidates.push(path);
            }
        };
        for root in self.toolkit_roots_with(&env) {
            for name in self.file_names {
                add(root.join("lib64").join(name));
            }
        }
        for site in self.site_packages_with(&env) {
            for dir in self.wheel_dirs {
                for name in self.file_names {
                    add(site.join(dir).join(name));
                }
            }
        }
        candidates
    }

    /// The toolkit roots searched, in order, each once, reading variables through `env`: each
    /// of [`search_dirs`](Self::search_dirs) set to an absolute path (a relative one is ignored
    /// with a warning), then `/usr/local/cuda`; none when `search_dirs` is empty.
    pub fn toolkit_roots_with(&self, env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
        if self.search_dirs.is_empty() {
            return Vec::new();
        }
        let mut roots: Vec<PathBuf> = Vec::new();
        let named = self
            .search_dirs
            .iter()
            .filter_map(|var| self.absolute(var, env(var), "a toolkit root"));
        for root in named.chain([PathBuf::from(DEFAULT_TOOLKIT_ROOT)]) {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        roots
    }

    /// The `site-packages` folders of each Python environment of [`PYTHON_ENV_VARS`] set to
    /// an absolute path (a relative one is ignored with a warning), in order, reading
    /// variables through `env`; none when [`wheel_dirs`](Self::wheel_dirs) is empty.
    pub fn site_packages_with(&self, env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
        if self.wheel_dirs.is_empty() {
            return Vec::new();
        }
        PYTHON_ENV_VARS
            .iter()
            .filter_map(|var| self.absolute(var, env(var), "a Python environment"))
            .flat_map(|prefix| site_packages(&prefix))
            .collect()
    }

    /// `value` of `var` as a path, if set and absolute; a relative one is logged as ignored
    /// (it would resolve against the working directory, where a file could be planted).
    fn absolute(&self, var: &str, value: Option<OsString>, what: &str) -> Option<PathBuf> {
        let path = PathBuf::from(value.filter(|value| !value.is_empty())?);
        if path.is_absolute() {
            return Some(path);
        }
        log::warn!(
            "cuda-loader: ignoring {var}={} while looking for {}: {what} must be an absolute path",
            path.display(),
            self.name
        );
        None
    }
}

/// The `site-packages` folders of the Python environment at `prefix`, in name order:
/// `lib/python3.*/site-packages` (`Lib\site-packages` on Windows).
fn site_packages(prefix: &std::path::Path) -> Vec<PathBuf> {
    if cfg!(windows) {
        return vec![prefix.join("Lib").join("site-packages")];
    }
    let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
        .map(|entry| entry.path().join("site-packages"))
        .filter(|site| site.is_dir())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::LibrarySpec;
    use std::ffi::OsString;
    use std::path::PathBuf;

    const SPEC: LibrarySpec = LibrarySpec {
        name: "test library",
        env_var: "TEST_LIB_PATH",
        file_names: &["libtest.so.13", "libtest.so.12"],
        search_dirs: &["CUDA_HOME", "CUDA_PATH"],
        wheel_dirs: &[],
        global: false,
    };

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |var| {
            pairs
                .iter()
                .find(|(name, _)| *name == var)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn explicit_path_is_the_only_candidate() {
        let candidates = SPEC.candidates_with(env_of(&[("TEST_LIB_PATH", "/opt/x/libtest.so")]));
        assert_eq!(candidates, vec![PathBuf::from("/opt/x/libtest.so")]);
    }

    #[test]
    fn empty_explicit_path_is_ignored() {
        let candidates = SPEC.candidates_with(env_of(&[("TEST_LIB_PATH", "")]));
        assert_eq!(candidates[0], PathBuf::from("libtest.so.13"));
    }

    #[test]
    fn sonames_first_then_toolkit_roots_in_order() {
        let candidates = SPEC.candidates_with(env_of(&[
            ("CUDA_HOME", "/opt/cuda"),
            ("CUDA_PATH", "/opt/cuda"),
        ]));
        let expected: Vec<PathBuf> = [
            "libtest.so.13",
            "libtest.so.12",
            "/opt/cuda/lib64/libtest.so.13",
            "/opt/cuda/lib64/libtest.so.12",
            "/usr/local/cuda/lib64/libtest.so.13",
            "/usr/local/cuda/lib64/libtest.so.12",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(candidates, expected);
    }

    #[test]
    fn relative_toolkit_roots_are_ignored() {
        let candidates =
            SPEC.candidates_with(env_of(&[("CUDA_HOME", "rel"), ("CUDA_PATH", "./planted")]));
        assert!(
            candidates
                .iter()
                .all(|path| !path.starts_with("rel") && !path.starts_with("./planted")),
            "{candidates:?}"
        );
        assert_eq!(
            candidates.last(),
            Some(&PathBuf::from("/usr/local/cuda/lib64/libtest.so.12"))
        );
        let mixed = SPEC.candidates_with(env_of(&[("CUDA_HOME", "rel"), ("CUDA_PATH", "/opt/c")]));
        assert!(mixed.contains(&PathBuf::from("/opt/c/lib64/libtest.so.13")));
    }

    #[test]
    fn never_an_unversioned_name() {
        for candidate in SPEC.candidates_with(env_of(&[])) {
            let name = candidate
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            assert!(!name.ends_with(".so"), "unversioned candidate {name}");
        }
    }

    #[test]
    #[cfg(unix)]
    fn wheels_of_each_python_environment_come_after_the_toolkit_roots() {
        let venv = std::env::temp_dir().join(format!("cuda-loader-venv-{}", std::process::id()));
        let site = venv.join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(venv.join("lib/not-python")).unwrap();
        let spec = LibrarySpec {
            wheel_dirs: &["nvidia/cu13/lib", "nvidia/test/lib"],
            ..SPEC
        };
        let venv_text: &'static str = Box::leak(venv.display().to_string().into_boxed_str());
        let pairs: &'static [(&'static str, &'static str)] = Box::leak(Box::new([
            ("VIRTUAL_ENV", venv_text),
            ("CONDA_PREFIX", "relative/conda"),
        ]));
        let candidates = spec.candidates_with(env_of(pairs));
        assert_eq!(candidates.len(), 4 + 4, "{candidates:?}");
        assert_eq!(
            candidates[4],
            site.join("nvidia/cu13/lib/libtest.so.13"),
            "{candidates:?}"
        );
        assert_eq!(candidates[7], site.join("nvidia/test/lib/libtest.so.12"));
        // No environment, or one without wheels: the search is the toolkit's alone.
        assert_eq!(spec.candidates_with(env_of(&[])).len(), 4);
        std::fs::remove_dir_all(&venv).unwrap();
        let gone = spec.candidates_with(env_of(pairs));
        assert_eq!(gone.len(), 4, "{gone:?}");
    }

    #[test]
    fn each_toolkit_root_is_tried_once_and_a_spec_without_roots_has_none() {
        let env = env_of(&[("CUDA_HOME", "/usr/local/cuda"), ("CUDA_PATH", "/opt/cuda")]);
        assert_eq!(
            SPEC.toolkit_roots_with(&env),
            [PathBuf::from("/usr/local/cuda"), PathBuf::from("/opt/cuda")]
        );
        let bare = LibrarySpec {
            search_dirs: &[],
            ..SPEC
        };
        assert!(bare.toolkit_roots_with(&env).is_empty());
        assert!(
            SPEC.site_packages_with(env_of(&[("VIRTUAL_ENV", "/")]))
                .is_empty()
        );
    }
}
