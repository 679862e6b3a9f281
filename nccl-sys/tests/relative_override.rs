//! `CUDA_SAFE_LIBNCCL` set to a relative path is never opened, as for every library's override:
//! `nccl()` fails naming the path and why, although the path leads (from the working directory)
//! to a file the dynamic loader would open, this process's libc.
//!
//! A `main` of its own (`harness = false`): the variable is set before any other thread starts
//! and before anything opens NCCL.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use nccl_sys::{LIBNCCL_PATH_ENV, LoadError, nccl};

/// The absolute path of this process's libc, from its memory map; `None` where there is none.
fn loaded_libc() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            Path::new(path)
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("libc.so"))
        })
        .map(PathBuf::from)
}

/// `target` (absolute) as a path relative to `from` (absolute): `..` up to the root, then down.
fn relative_to(target: &Path, from: &Path) -> PathBuf {
    let mut relative = PathBuf::new();
    for component in from.components() {
        if matches!(component, Component::Normal(_)) {
            relative.push("..");
        }
    }
    relative.join(target.strip_prefix("/").unwrap_or(target))
}

fn main() -> ExitCode {
    if !cfg!(target_os = "linux") {
        println!("relative_override: skipped: /proc/self/maps is Linux's");
        return ExitCode::SUCCESS;
    }
    let Some(libc) = loaded_libc() else {
        println!("relative_override: skipped: no libc in this process's map");
        return ExitCode::SUCCESS;
    };
    let here = std::env::current_dir().expect("a working directory");
    let relative = relative_to(&libc, &here);
    assert!(
        here.join(&relative).exists() && relative.is_relative(),
        "{relative:?} leads to {libc:?} from {here:?}"
    );
    // SAFETY: no other thread exists yet, so nothing reads the environment concurrently.
    unsafe { std::env::set_var(LIBNCCL_PATH_ENV, &relative) };
    let failed = match nccl() {
        Err(LoadError::LibraryNotFound { tried, .. }) => match tried.as_slice() {
            [only]
                if only.candidate == relative.display().to_string()
                    && only.reason.contains("relative path")
                    && only.reason.contains("working directory") =>
            {
                None
            }
            other => Some(format!("tried {other:?}")),
        },
        Err(error) => Some(format!("the wrong error: {error}")),
        Ok(_) => Some(format!("{relative:?} was opened")),
    };
    match failed {
        None => {
            println!(
                "relative_override: {LIBNCCL_PATH_ENV}={} refused",
                relative.display()
            );
            ExitCode::SUCCESS
        }
        Some(problem) => {
            println!("relative_override: FAIL: {problem}");
            ExitCode::FAILURE
        }
    }
}
