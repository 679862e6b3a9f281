//! `cargo xtask doc-cfg --check`: every public item of a publishable crate that a cargo
//! feature gates (`#[cfg(feature = "...")]`, or an `all`/`any` naming one) carries its docs.rs
//! badge, `#[cfg_attr(docsrs, doc(cfg(...)))]`, among the same attributes. docs.rs builds with
//! `--cfg docsrs` (each crate's `[package.metadata.docs.rs]`) on nightly, which CI cannot
//! install; this reads the sources instead. The workspace's tests run it too.

use std::fs;
use std::path::{Path, PathBuf};

/// Runs the check on this workspace.
pub fn run(args: &[String]) -> Result<(), String> {
    if !matches!(args, [flag] if flag == "--check") {
        return Err("usage: cargo xtask doc-cfg --check".into());
    }
    let (files, problems) = check_workspace(&crate::workspace_root())?;
    if problems.is_empty() {
        println!("doc-cfg: every feature-gated public item of {files} files has its badge");
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The number of files read, and a line for each gated public item without its badge.
fn check_workspace(root: &Path) -> Result<(usize, Vec<String>), String> {
    let mut files = Vec::new();
    for member in publishable_members(root)? {
        rust_files(&root.join(&member).join("src"), &mut files)?;
    }
    let mut problems = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        problems.extend(
            unbadged(&text)
                .into_iter()
                .map(|line| format!("{shown}:{line}: a feature-gated public item without #[cfg_attr(docsrs, doc(cfg(...)))]")),
        );
    }
    Ok((files.len(), problems))
}

/// The workspace's members: the folders of the root manifest's `members`.
pub(crate) fn workspace_members(root: &Path) -> Result<Vec<String>, String> {
    let manifest = read(&root.join("Cargo.toml"))?;
    let start = manifest
        .find("members = [")
        .ok_or("no `members = [` in the workspace's Cargo.toml")?;
    let list = &manifest[start..];
    let list = &list[..list.find(']').ok_or("an unclosed `members` list")?];
    Ok(list
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect())
}

/// The workspace's members whose manifest does not say `publish = false`.
pub(crate) fn publishable_members(root: &Path) -> Result<Vec<String>, String> {
    let mut members = Vec::new();
    for member in workspace_members(root)? {
        if !read(&root.join(&member).join("Cargo.toml"))?.contains("publish = false") {
            members.push(member);
        }
    }
    Ok(members)
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every `.rs` file under `dir`, appended to `files` in path order.
pub(crate) fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, files)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// The 1-based lines of the public items in `source` that a feature gates with no badge among
/// their attributes.
fn unbadged(source: &str) -> Vec<usize> {
    let mut found = Vec::new();
    // The attributes (each whole, however many lines it spans) before the item being read.
    let mut attributes: Vec<String> = Vec::new();
    let mut open: Option<(String, i32)> = None;
    for (index, line) in source.lines().enumerate() {
        let trimmed = line.trim();
        if let Some((mut text, depth)) = open.take() {
            text.push_str(trimmed);
            let depth = depth + brackets(trimmed);
            if depth > 0 {
                open = Some((text, depth));
            } else {
                attributes.push(text);
            }
            continue;
        }
        if trimmed.starts_with("#[") {
            let depth = brackets(trimmed);
            if depth > 0 {
                open = Some((trimmed.to_owned(), depth));
            } else {
                attributes.push(trimmed.to_owned());
            }
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        let gated = attributes.iter().any(|attribute| feature_gate(attribute));
        let badged = attributes
            .iter()
            .any(|attribute| attribute.contains("doc(cfg("));
        if gated && !badged && public(trimmed) {
            found.push(index + 1);
        }
        attributes.clear();
    }
    found
}

/// Whether `attribute` is a `cfg` that a cargo feature turns on: `feature = ...` in a `cfg`,
/// alone or in `all`/`any`, and not under `not`.
fn feature_gate(attribute: &str) -> bool {
    attribute.starts_with("#[cfg(")
        && attribute.contains("feature =")
        && !attribute.contains("not(")
}

/// Whether `item` (a trimmed line) declares a public item: `pub`, not `pub(crate)` or
/// `pub(super)`.
fn public(item: &str) -> bool {
    item.starts_with("pub ")
}

/// Opening minus closing square brackets on `line`.
fn brackets(line: &str) -> i32 {
    line.chars()
        .map(|c| match c {
            '[' => 1,
            ']' => -1,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::{check_workspace, unbadged};

    #[test]
    fn finds_gated_public_items_without_badges() {
        let source = r#"
#[cfg(feature = "half")]
pub mod half;
#[cfg(feature = "blas")]
#[cfg_attr(docsrs, doc(cfg(feature = "blas")))]
pub mod blas;
/// Docs.
#[cfg(all(unix, feature = "x"))]
#[doc(alias(
    "y"
))]
pub fn x() {}
#[cfg(not(feature = "x"))]
pub fn not_x() {}
#[cfg(feature = "x")]
pub(crate) fn inner() {}
#[cfg(feature = "x")]
mod private;
"#;
        assert_eq!(unbadged(source), [3, 12]);
    }

    /// The workspace's own sources: what `cargo xtask doc-cfg --check` checks.
    #[test]
    fn every_gated_public_item_of_the_workspace_has_its_badge() {
        let (files, problems) = check_workspace(&crate::workspace_root()).unwrap();
        assert!(files > 100, "only {files} files read");
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
