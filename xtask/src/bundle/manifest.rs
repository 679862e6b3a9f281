//! `MANIFEST.txt`: the commit the bundle was built from and every file in it.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use super::files::list_files;

/// Writes `MANIFEST.txt`: the git commit, the dirty count, and every other file with its size.
pub(super) fn write_manifest(root: &Path, out: &Path) -> Result<(), String> {
    let commit = git(root, &["rev-parse", "--short", "HEAD"]).map(|s| s.trim().to_owned());
    let dirty = git(root, &["status", "--porcelain"])
        .map(|s| s.lines().filter(|line| !line.trim().is_empty()).count());
    let text = manifest_text(commit.as_deref(), dirty, &list_files(out)?);
    let path = out.join("MANIFEST.txt");
    fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Runs git in `root`: its stdout, or `None` when git is missing or fails.
pub(super) fn git(root: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The manifest's text: commit, dirty count (`unknown` without git), then `path size` lines.
pub(super) fn manifest_text(
    commit: Option<&str>,
    dirty: Option<usize>,
    files: &[(String, u64)],
) -> String {
    let mut text = String::from("# written by `cargo xtask gpu-bundle`: path and size in bytes\n");
    text.push_str(&format!("commit: {}\n", commit.unwrap_or("unknown")));
    text.push_str(&format!(
        "dirty: {}\n",
        dirty.map_or_else(|| "unknown".to_owned(), |n| n.to_string())
    ));
    for (path, size) in files {
        text.push_str(&format!("{path} {size}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_lists_commit_dirty_count_and_files() {
        let files = vec![
            ("cuda-12/tests/raw_layer".to_owned(), 1234),
            ("run.sh".to_owned(), 56),
        ];
        let text = manifest_text(Some("a41f09a"), Some(3), &files);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "commit: a41f09a",
                "dirty: 3",
                "cuda-12/tests/raw_layer 1234",
                "run.sh 56"
            ]
        );
        let text = manifest_text(None, None, &[]);
        assert!(text.contains("commit: unknown\ndirty: unknown\n"));
    }
}
