//! `cargo xtask file-length --check`: no file of the repository is over [`MAX_LINES`] lines,
//! but those nobody writes by hand or that are a record rather than code:
//! - files marked `@generated` on their first line (the raw bindings);
//! - the public-API listings (`api/*.txt`) and lock files;
//! - C floors copied byte for byte from the shared floors (`.ci/floors-identical` checks them);
//! - `CHANGELOG.md` and the lab's measurements (`lab/measurements/`): records, not code.
//!
//! The files are those `git ls-files` names (the lab's included). The workspace's tests run it
//! too.

use std::fs;
use std::path::Path;
use std::process::Command;

/// The most lines a file may have.
const MAX_LINES: usize = 600;

/// The C floors copied from the shared floors folder, checked identical there.
const FLOOR_COPIES: &[&str] = &[
    "bench/floors/async_floor.c",
    "bench/floors/blas_floor.c",
    "bench/floors/disk_hit_floor.c",
    "bench/floors/driver_floor.c",
    "bench/floors/graph_floor.c",
    "bench/floors/libs_floor.c",
    "bench/floors/multi_gpu_floor.c",
    "bench/floors/nccl_floor.c",
];

/// Runs the check on this repository.
pub fn run(args: &[String]) -> Result<(), String> {
    if !matches!(args, [flag] if flag == "--check") {
        return Err("usage: cargo xtask file-length --check".into());
    }
    let (files, problems) = check_repository(&crate::workspace_root())?;
    if problems.is_empty() {
        println!("file-length: none of {files} files is over {MAX_LINES} lines");
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The number of files read, and a line for each file over the limit.
fn check_repository(root: &Path) -> Result<(usize, Vec<String>), String> {
    let output = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    if !output.status.success() {
        return Err("git ls-files failed: is this a git checkout?".into());
    }
    let mut read = 0;
    let mut problems = Vec::new();
    for name in output
        .stdout
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
    {
        let name = String::from_utf8_lossy(name);
        if exempt_by_name(&name) {
            continue;
        }
        // A file listed but deleted in the work tree, or not text, has no lines to count.
        let Ok(text) = fs::read_to_string(root.join(&*name)) else {
            continue;
        };
        read += 1;
        let lines = text.lines().count();
        if lines > MAX_LINES
            && !text
                .lines()
                .next()
                .is_some_and(|l| l.contains("@generated"))
        {
            problems.push(format!(
                "{name}: {lines} lines (at most {MAX_LINES}): split it"
            ));
        }
    }
    Ok((read, problems))
}

/// Whether `name` (a path relative to the root) is exempt whatever its length.
fn exempt_by_name(name: &str) -> bool {
    name == "CHANGELOG.md"
        || name.starts_with("lab/measurements/")
        || name.ends_with("Cargo.lock")
        || (name.contains("api/") && name.ends_with(".txt"))
        || FLOOR_COPIES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::{check_repository, exempt_by_name};

    #[test]
    fn exempts_records_listings_locks_and_floor_copies_only() {
        assert!(exempt_by_name("CHANGELOG.md"));
        assert!(exempt_by_name("lab/measurements/h200-bench.json"));
        assert!(!exempt_by_name("lab/benches/diag_launch_ab.rs"));
        assert!(exempt_by_name("cuda-safe/api/current.txt"));
        assert!(exempt_by_name(".ci/abi-mix/Cargo.lock"));
        assert!(exempt_by_name("bench/floors/libs_floor.c"));
        assert!(!exempt_by_name("bench/floors/dnn_graph_floor.c"));
        assert!(!exempt_by_name("cuda-safe/src/lib.rs"));
    }

    /// The repository's own files: what `cargo xtask file-length --check` checks.
    #[test]
    fn no_file_of_the_repository_is_too_long() {
        let (files, problems) = check_repository(&crate::workspace_root()).unwrap();
        assert!(files > 500, "only {files} files read");
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
