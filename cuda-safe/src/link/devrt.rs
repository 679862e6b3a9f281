//! The CUDA device runtime, `libcudadevrt.a`: what kernels that launch work from the GPU
//! (device graph launch, dynamic parallelism) are linked with, found as the crate's other
//! NVIDIA libraries are and added as a [`LinkInputKind::Library`] input.

use std::ffi::OsString;
use std::path::PathBuf;

use super::Linker;
use super::input::{LinkInput, LinkInputKind};
use crate::error::Result;
use cuda_sys::{Attempt, LibrarySpec, LoadError};

/// The archive's file name.
#[cfg(not(windows))]
const FILE_NAME: &str = "libcudadevrt.a";
/// The archive's file name.
#[cfg(windows)]
const FILE_NAME: &str = "cudadevrt.lib";

/// Where the device runtime is looked for: as the loader looks for a library (the override
/// alone when set; then `lib64` of `$CUDA_HOME`, `$CUDA_PATH` and `/usr/local/cuda`; then the
/// wheels' folders in each Python environment's `site-packages`: `nvidia/cu13/lib` of the
/// CUDA 13 wheels, `nvidia/cuda_runtime/lib` of CUDA 12's `nvidia-cuda-runtime-cu12`), as
/// `cuda.pathfinder.find_static_lib("cudadevrt")` does.
static SPEC: LibrarySpec = LibrarySpec {
    name: "the CUDA device runtime (libcudadevrt.a)",
    env_var: LinkInput::DEVICE_RUNTIME_ENV,
    file_names: &[FILE_NAME],
    search_dirs: &["CUDA_HOME", "CUDA_PATH"],
    wheel_dirs: &["nvidia/cu13/lib", "nvidia/cuda_runtime/lib"],
    global: false,
};

/// Every place the device runtime is looked for, in order, reading variables through `env`:
/// [`SPEC`]'s candidates but the bare file name (a static archive has no loader's search),
/// then a conda environment's `lib` (`$CONDA_PREFIX/lib`, where conda's `cuda-cudart-static`
/// puts it).
fn candidates(env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let set = |var: &str| env(var).filter(|value| !value.is_empty());
    if set(SPEC.env_var).is_some() {
        return SPEC.candidates_with(&env);
    }
    let conda = set("CONDA_PREFIX")
        .map(PathBuf::from)
        .filter(|prefix| prefix.is_absolute());
    let mut candidates = SPEC.candidates_with(&env);
    candidates.retain(|path| path.is_absolute());
    if let Some(prefix) = conda {
        let path = prefix.join("lib").join(FILE_NAME);
        if !candidates.contains(&path) {
            candidates.push(path);
        }
    }
    candidates
}

/// The first candidate that is a regular file, or every candidate with why it was passed over.
fn find(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, LoadError> {
    let mut tried = Vec::new();
    for candidate in candidates(env) {
        let reason = if !candidate.is_absolute() {
            "a relative path is not searched: give an absolute one".to_owned()
        } else {
            match std::fs::metadata(&candidate) {
                Ok(metadata) if metadata.is_file() => return Ok(candidate),
                Ok(_) => "not a regular file".to_owned(),
                Err(error) => error.to_string(),
            }
        };
        tried.push(Attempt {
            candidate: candidate.display().to_string(),
            reason,
        });
    }
    Err(LoadError::LibraryNotFound {
        library: SPEC.name,
        tried,
    })
}

impl LinkInput {
    /// The variable that names the device runtime archive (`libcudadevrt.a`) explicitly:
    /// when it is set (and not empty), that absolute path is the only one tried.
    pub const DEVICE_RUNTIME_ENV: &'static str = "CUDA_SAFE_LIBCUDADEVRT";

    /// Where the CUDA device runtime archive is (`libcudadevrt.a`, what
    /// `cuda.pathfinder.find_static_lib("cudadevrt")` finds for `cuda.core`): the path in
    /// [`DEVICE_RUNTIME_ENV`](Self::DEVICE_RUNTIME_ENV) alone when it is set; otherwise the
    /// first that exists of `lib64/libcudadevrt.a` under `$CUDA_HOME`, `$CUDA_PATH` and
    /// `/usr/local/cuda`, then `nvidia/cu13/lib` and `nvidia/cuda_runtime/lib` in the
    /// `site-packages` of `$VIRTUAL_ENV` and `$CONDA_PREFIX` (NVIDIA's wheels), then
    /// `$CONDA_PREFIX/lib`.
    ///
    /// # Errors
    ///
    /// [`Error::Load`](crate::Error::Load) with [`LoadError::LibraryNotFound`] listing every
    /// place looked in and why each was passed over.
    pub fn device_runtime_path() -> Result<PathBuf> {
        Ok(find(|var| std::env::var_os(var))?)
    }

    /// The CUDA device runtime as a [`LinkInputKind::Library`] input, read now: what a kernel
    /// that launches graphs or kernels from the device (`cudaGraphLaunch`, `<<<...>>>` in
    /// device code) is linked with, after compiling it with
    /// [`relocatable_device_code`](crate::ProgramOptions::relocatable_device_code).
    ///
    /// # Errors
    ///
    /// As [`device_runtime_path`](Self::device_runtime_path), then as
    /// [`from_file_as`](Self::from_file_as).
    pub fn device_runtime() -> Result<Self> {
        Self::from_file_as(Self::device_runtime_path()?, LinkInputKind::Library)
    }
}

impl Linker {
    /// Adds the CUDA device runtime ([`LinkInput::device_runtime`]) after the inputs already
    /// added: `cuda.core`'s `ObjectCode.from_library(find_static_lib("cudadevrt"))` input.
    ///
    /// # Errors
    ///
    /// As [`LinkInput::device_runtime`]; nothing is added then.
    pub fn add_device_runtime(&mut self) -> Result<&mut Self> {
        Ok(self.add(LinkInput::device_runtime()?))
    }
}

#[cfg(unix)]
#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    /// Looks variables up in `pairs`.
    fn env_of(pairs: Vec<(&'static str, PathBuf)>) -> impl Fn(&str) -> Option<OsString> {
        move |var| {
            pairs
                .iter()
                .find(|(name, _)| *name == var)
                .map(|(_, value)| value.clone().into_os_string())
        }
    }

    /// An empty archive at `dir/relative`.
    fn plant(dir: &Path, relative: &str) -> PathBuf {
        let path = dir.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, b"!<arch>\n").unwrap();
        path
    }

    #[test]
    fn toolkit_roots_then_wheels_then_conda() {
        let temp = tempfile::tempdir().unwrap();
        let (home, path, venv, conda) = (
            temp.path().join("home"),
            temp.path().join("path"),
            temp.path().join("venv"),
            temp.path().join("conda"),
        );
        let site = "lib/python3.12/site-packages";
        for prefix in [&venv, &conda] {
            fs::create_dir_all(prefix.join(site)).unwrap();
        }
        let env = || {
            env_of(vec![
                ("CUDA_HOME", home.clone()),
                ("CUDA_PATH", path.clone()),
                ("VIRTUAL_ENV", venv.clone()),
                ("CONDA_PREFIX", conda.clone()),
            ])
        };
        let expected: Vec<PathBuf> = [
            home.join("lib64/libcudadevrt.a"),
            path.join("lib64/libcudadevrt.a"),
            PathBuf::from("/usr/local/cuda/lib64/libcudadevrt.a"),
            venv.join(site).join("nvidia/cu13/lib/libcudadevrt.a"),
            venv.join(site)
                .join("nvidia/cuda_runtime/lib/libcudadevrt.a"),
            conda.join(site).join("nvidia/cu13/lib/libcudadevrt.a"),
            conda
                .join(site)
                .join("nvidia/cuda_runtime/lib/libcudadevrt.a"),
            conda.join("lib/libcudadevrt.a"),
        ]
        .into();
        assert_eq!(candidates(env()), expected);

        // The first that exists wins, wherever it is in the order.
        let real_toolkit = Path::new("/usr/local/cuda/lib64/libcudadevrt.a").is_file();
        let last = plant(&conda, "lib/libcudadevrt.a");
        if !real_toolkit {
            assert_eq!(find(env()).unwrap(), last);
            let wheel = plant(&venv.join(site), "nvidia/cuda_runtime/lib/libcudadevrt.a");
            assert_eq!(find(env()).unwrap(), wheel);
        }
        let second = plant(&path, "lib64/libcudadevrt.a");
        assert_eq!(find(env()).unwrap(), second);
        let first = plant(&home, "lib64/libcudadevrt.a");
        assert_eq!(find(env()).unwrap(), first);
        // A folder by the archive's name is passed over.
        fs::remove_file(&first).unwrap();
        fs::create_dir(&first).unwrap();
        assert_eq!(find(env()).unwrap(), second);
    }

    #[test]
    fn the_override_is_the_only_place_looked_in() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        plant(&home, "lib64/libcudadevrt.a");
        let missing = temp.path().join("elsewhere/libcudadevrt.a");
        let env = env_of(vec![
            (LinkInput::DEVICE_RUNTIME_ENV, missing.clone()),
            ("CUDA_HOME", home.clone()),
        ]);
        assert_eq!(candidates(&env), std::slice::from_ref(&missing));
        match find(&env) {
            Err(LoadError::LibraryNotFound { library, tried }) => {
                assert_eq!(library, SPEC.name);
                assert_eq!(tried.len(), 1, "{tried:?}");
                assert_eq!(tried[0].candidate, missing.display().to_string());
                assert!(tried[0].reason.contains("No such file"), "{tried:?}");
            }
            other => panic!("unexpected {other:?}"),
        }
        let explicit = plant(temp.path(), "elsewhere/libcudadevrt.a");
        assert_eq!(find(&env).unwrap(), explicit);

        // A relative override is refused, not resolved against the working directory.
        let relative = env_of(vec![(
            LinkInput::DEVICE_RUNTIME_ENV,
            PathBuf::from("libcudadevrt.a"),
        )]);
        let error = crate::error::Error::from(find(relative).unwrap_err()).to_string();
        assert!(error.contains("a relative path is not searched"), "{error}");
        assert!(
            error.contains("the CUDA device runtime (libcudadevrt.a)"),
            "{error}"
        );
    }

    #[test]
    fn relative_roots_and_an_empty_override_are_ignored() {
        let env = env_of(vec![
            (LinkInput::DEVICE_RUNTIME_ENV, PathBuf::new()),
            ("CUDA_HOME", PathBuf::from("relative/cuda")),
            ("CONDA_PREFIX", PathBuf::from("relative/conda")),
        ]);
        assert_eq!(
            candidates(env),
            [PathBuf::from("/usr/local/cuda/lib64/libcudadevrt.a")]
        );
    }
}
