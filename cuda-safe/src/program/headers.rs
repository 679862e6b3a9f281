//! CUDA's own headers for a compile ([`CudaHeaders`]): NVRTC's bundled copy (13.3 and newer),
//! or the toolkit's include folder, found as the libraries are; and what a cache key covers of
//! them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nvrtc_sys::LibrarySpec;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The NVRTC that bundles the CUDA headers (`--use-bundled-headers`).
pub(super) const BUNDLED_SINCE: (u32, u32) = (13, 3);

/// The variable naming the toolkit's include folder for [`CudaHeaders::Toolkit`]; when set,
/// that folder is the only one tried.
const CUDA_INCLUDE_ENV: &str = "CUDA_SAFE_CUDA_INCLUDE";

/// The file that marks a folder of CUDA's headers.
const MARKER: &str = "cuda_fp16.h";

/// Where the toolkit's headers are looked for: the roots and Python environments the loader
/// searches for the libraries (their `include` folders, and the wheels' include folders:
/// CUDA 13's `nvidia/cu13`, CUDA 12's runtime wheel), after the override alone when set.
static SEARCH: LibrarySpec = LibrarySpec {
    name: "the CUDA toolkit's headers (CudaHeaders::Toolkit)",
    env_var: CUDA_INCLUDE_ENV,
    file_names: &[MARKER],
    search_dirs: &["CUDA_HOME", "CUDA_PATH"],
    wheel_dirs: &["nvidia/cu13/include", "nvidia/cuda_runtime/include"],
    global: false,
};

/// Where a compile finds CUDA's own headers (`cuda_fp16.h`, `cuda_bf16.h`, CCCL's
/// `cuda/std/...`), which NVRTC does not look for by itself
/// ([`ProgramOptions::cuda_headers`](super::ProgramOptions::cuda_headers)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CudaHeaders {
    /// NVRTC's own copy of the toolkit's headers and CCCL (NVRTC 13.3 and newer), which NVRTC
    /// installs into the folder the first time and reuses: `--use-bundled-headers=DIR`. The
    /// folder must be absolute; `None` is `<the user's cache folder>/cuda-safe/nvrtc-headers`
    /// (`~/.cache/...` on Linux). Their content follows NVRTC's version, which a cache key
    /// names.
    Bundled(Option<String>),
    /// The toolkit's include folder, the first holding `cuda_fp16.h` of:
    /// `$CUDA_SAFE_CUDA_INCLUDE` (alone, when set; absolute), `$CUDA_HOME/include`,
    /// `$CUDA_PATH/include`, `/usr/local/cuda/include`, then `nvidia/cu13/include` and
    /// `nvidia/cuda_runtime/include` in the `site-packages` of `$VIRTUAL_ENV` and
    /// `$CONDA_PREFIX` (NVIDIA's wheels); with its `cccl` folder (CUDA 13) when it has one:
    /// `--include-path=DIR` for each, after
    /// [`include_paths`](super::ProgramOptions::include_paths). A cache key covers the folders'
    /// real paths and the size and modification time of each file directly in them, read once
    /// per process.
    Toolkit,
}

/// The flags [`CudaHeaders`] add, and the digest of the files a cache key cannot see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Resolved {
    /// `--use-bundled-headers=DIR`, or one `--include-path=DIR` per folder.
    pub(super) flags: Vec<String>,
    /// For the toolkit's folders: what the key covers of their files.
    pub(super) digest: Option<[u8; 32]>,
}

impl CudaHeaders {
    /// Checks what needs no search: a bundled folder given is absolute, without a NUL byte.
    pub(super) fn validate(&self) -> Result<()> {
        if let CudaHeaders::Bundled(Some(dir)) = self
            && (dir.contains('\0') || !Path::new(dir).is_absolute())
        {
            return Err(Error::invalid_argument(format!(
                "program options: the bundled-headers folder {dir:?} is not an absolute path"
            )));
        }
        Ok(())
    }

    /// The flags and digest, searching this process's environment for the toolkit's folder.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a bundled folder of `None` on a system that names no
    /// cache folder; [`Error::Unsupported`] when no toolkit folder is found, naming each one
    /// tried.
    pub(super) fn resolve(&self) -> Result<Resolved> {
        match self {
            CudaHeaders::Bundled(dir) => {
                let dir = match dir {
                    Some(dir) => PathBuf::from(dir),
                    None => default_bundled_dir()?,
                };
                let dir = dir.to_str().ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "the bundled-headers folder {} is not UTF-8",
                        dir.display()
                    ))
                })?;
                Ok(Resolved {
                    flags: vec![format!("--use-bundled-headers={dir}")],
                    digest: None,
                })
            }
            CudaHeaders::Toolkit => {
                let dirs = toolkit_dirs(&|var| std::env::var_os(var))?;
                let flags = dirs
                    .iter()
                    .map(|dir| {
                        dir.to_str()
                            .map(|dir| format!("--include-path={dir}"))
                            .ok_or_else(|| {
                                Error::invalid_argument(format!(
                                    "the CUDA include folder {} is not UTF-8",
                                    dir.display()
                                ))
                            })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Resolved {
                    flags,
                    digest: Some(remembered_digest(&dirs)),
                })
            }
        }
    }

    /// The folder the bundled headers go to, once resolved: it is made (with its parents)
    /// before NVRTC installs into it.
    pub(super) fn bundled_dir(flags: &[String]) -> Option<&str> {
        flags
            .iter()
            .find_map(|flag| flag.strip_prefix("--use-bundled-headers="))
    }
}

/// `<cache folder>/cuda-safe/nvrtc-headers`.
fn default_bundled_dir() -> Result<PathBuf> {
    let cache = crate::user_dirs::cache_dir().ok_or_else(|| {
        Error::invalid_argument(
            "no default folder for NVRTC's bundled headers: this system names no cache folder; \
             give CudaHeaders::Bundled a folder",
        )
    })?;
    Ok(cache.join("cuda-safe").join("nvrtc-headers"))
}

/// The toolkit's include folder (and its `cccl` folder when it has one), reading variables
/// through `env`.
fn toolkit_dirs(env: &dyn Fn(&str) -> Option<OsString>) -> Result<Vec<PathBuf>> {
    let tried = candidates(env);
    if let [explicit] = tried.as_slice()
        && !explicit.is_absolute()
    {
        return Err(Error::invalid_argument(format!(
            "{CUDA_INCLUDE_ENV}={} is a relative path, which would be read from the working \
             directory; name the folder by its absolute path",
            explicit.display()
        )));
    }
    let Some(found) = tried.iter().find(|dir| dir.join(MARKER).is_file()) else {
        let list = tried
            .iter()
            .map(|dir| dir.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Error::unsupported(
            "the CUDA toolkit's headers (CudaHeaders::Toolkit)",
            format!(
                "no {MARKER} in any of: {list}; set {CUDA_INCLUDE_ENV} to the folder holding it, \
                 or use CudaHeaders::Bundled (NVRTC 13.3)"
            ),
        ));
    };
    let mut dirs = vec![found.clone()];
    let cccl = found.join("cccl");
    if cccl.join("cuda").is_dir() {
        dirs.push(cccl);
    }
    Ok(dirs)
}

/// The folders tried for the toolkit's headers, in order.
fn candidates(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    if let Some(explicit) = env(SEARCH.env_var).filter(|value| !value.is_empty()) {
        return vec![PathBuf::from(explicit)];
    }
    let mut tried: Vec<PathBuf> = SEARCH
        .toolkit_roots_with(env)
        .into_iter()
        .map(|root| root.join("include"))
        .collect();
    for site in SEARCH.site_packages_with(env) {
        for dir in SEARCH.wheel_dirs {
            let dir = site.join(dir);
            if !tried.contains(&dir) {
                tried.push(dir);
            }
        }
    }
    tried
}

/// [`digest`] of `dirs`, made once per process for each set of folders.
fn remembered_digest(dirs: &[PathBuf]) -> [u8; 32] {
    static MADE: Mutex<Vec<(Vec<PathBuf>, [u8; 32])>> = Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, digest)) = made.iter().find(|(known, _)| known == dirs) {
        return *digest;
    }
    let digest = digest(dirs);
    made.push((dirs.to_vec(), digest));
    digest
}

/// The SHA-256 of each folder's real path, of the name, size and modification time of each
/// file directly in it (sorted by name), and of the contents of the version headers below it
/// ([`VERSION_FILES`]: CCCL's folder holds only folders): a toolkit, CCCL or wheel installed
/// over another, or a link moved to another, changes it.
fn digest(dirs: &[PathBuf]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let mut field = |value: &[u8]| {
        hasher.update((value.len() as u64).to_le_bytes());
        hasher.update(value);
    };
    for dir in dirs {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        field(real.as_os_str().as_encoded_bytes());
        let mut files: Vec<(OsString, u64, u128)> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let metadata = entry.metadata().ok()?;
                let modified = metadata
                    .modified()
                    .ok()
                    .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |since| since.as_nanos());
                metadata
                    .is_file()
                    .then(|| (entry.file_name(), metadata.len(), modified))
            })
            .collect();
        files.sort();
        field(&(files.len() as u64).to_le_bytes());
        for (name, size, modified) in files {
            field(name.as_encoded_bytes());
            field(&size.to_le_bytes());
            field(&modified.to_le_bytes());
        }
        for version in VERSION_FILES {
            match std::fs::read(dir.join(version)) {
                Ok(contents) => {
                    field(version.as_bytes());
                    field(&contents);
                }
                Err(_) => field(b"\xff absent"),
            }
        }
    }
    hasher.finalize().into()
}

/// The headers, below an include folder, that name the version of what lies in its
/// sub-folders (CCCL's libcu++, Thrust and CUB).
const VERSION_FILES: [&str; 3] = [
    "cuda/std/__cccl/version.h",
    "thrust/version.h",
    "cub/version.cuh",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: Vec<(&'static str, OsString)>) -> impl Fn(&str) -> Option<OsString> {
        move |var| {
            pairs
                .iter()
                .find(|(name, _)| *name == var)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn the_search_tries_the_override_alone_then_roots_then_wheels() {
        let env = env_of(vec![(CUDA_INCLUDE_ENV, "/opt/inc".into())]);
        assert_eq!(candidates(&env), [PathBuf::from("/opt/inc")]);
        let venv = tempfile::tempdir().unwrap();
        let site = venv.path().join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        let env = env_of(vec![
            ("CUDA_HOME", "/opt/cuda".into()),
            ("CUDA_PATH", "relative/cuda".into()),
            ("VIRTUAL_ENV", venv.path().into()),
        ]);
        assert_eq!(
            candidates(&env),
            [
                PathBuf::from("/opt/cuda/include"),
                PathBuf::from("/usr/local/cuda/include"),
                site.join("nvidia/cu13/include"),
                site.join("nvidia/cuda_runtime/include"),
            ]
        );
    }

    #[test]
    fn a_relative_override_is_refused() {
        let env = env_of(vec![(CUDA_INCLUDE_ENV, "include".into())]);
        let error = toolkit_dirs(&env).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        assert!(error.to_string().contains("relative"), "{error}");
    }

    #[test]
    fn a_folder_without_the_marker_is_refused_naming_where_it_looked() {
        let empty = tempfile::tempdir().unwrap();
        let env = env_of(vec![(CUDA_INCLUDE_ENV, empty.path().into())]);
        let error = toolkit_dirs(&env).unwrap_err();
        assert!(error.is_not_supported(), "{error}");
        let text = error.to_string();
        assert!(text.contains(&empty.path().display().to_string()), "{text}");
        assert!(
            text.contains("cuda_fp16.h") && text.contains(CUDA_INCLUDE_ENV),
            "{text}"
        );
    }

    #[test]
    fn the_found_folder_brings_its_cccl_and_a_digest_that_follows_its_files() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join(MARKER), "// fp16").unwrap();
        let env = env_of(vec![(CUDA_INCLUDE_ENV, root.path().into())]);
        assert_eq!(toolkit_dirs(&env).unwrap(), [root.path().to_path_buf()]);
        std::fs::create_dir_all(root.path().join("cccl/cuda/std")).unwrap();
        let dirs = toolkit_dirs(&env).unwrap();
        assert_eq!(dirs, [root.path().to_path_buf(), root.path().join("cccl")]);
        let before = digest(&dirs);
        assert_eq!(before, digest(&dirs));
        std::fs::write(root.path().join("cuda_bf16.h"), "// bf16").unwrap();
        assert_ne!(before, digest(&dirs), "a new file changes the digest");
        let after = digest(&dirs);
        std::fs::write(root.path().join(MARKER), "// fp16, longer").unwrap();
        assert_ne!(after, digest(&dirs), "a rewritten file changes the digest");
        let before_cccl = digest(&dirs);
        let version = root.path().join("cccl/cuda/std/__cccl");
        std::fs::create_dir_all(&version).unwrap();
        std::fs::write(version.join("version.h"), "#define CCCL_VERSION 3000000").unwrap();
        let with_cccl = digest(&dirs);
        assert_ne!(before_cccl, with_cccl, "CCCL's version header counts");
        std::fs::write(version.join("version.h"), "#define CCCL_VERSION 3001000").unwrap();
        assert_ne!(
            with_cccl,
            digest(&dirs),
            "another CCCL version changes the digest"
        );
    }

    #[test]
    fn bundled_headers_render_one_flag_and_need_an_absolute_folder() {
        let given = CudaHeaders::Bundled(Some("/opt/h".into()));
        assert!(given.validate().is_ok());
        let resolved = given.resolve().unwrap();
        assert_eq!(resolved.flags, ["--use-bundled-headers=/opt/h"]);
        assert_eq!(resolved.digest, None);
        assert_eq!(CudaHeaders::bundled_dir(&resolved.flags), Some("/opt/h"));
        for bad in ["relative/h", "/a\0b"] {
            let error = CudaHeaders::Bundled(Some(bad.into()))
                .validate()
                .unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        }
        if let Ok(default) = CudaHeaders::Bundled(None).resolve() {
            assert!(
                default.flags[0].ends_with("cuda-safe/nvrtc-headers"),
                "{default:?}"
            );
        }
    }
}
