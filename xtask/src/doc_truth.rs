//! `cargo xtask doc-truth --check`: what the product's text claims about the crates holds.
//!
//! - No crate that is not on crates.io is shown as if it were: no `documentation` field naming
//!   docs.rs in its manifest, no link to its crates.io or docs.rs page and no
//!   `version = "..."` dependency line for it in a README, a page of `docs/` or the CHANGELOG.
//!   [`PUBLISHED`] lists the packages that are; it is empty until the first release.
//! - The product cites no lab: nothing in those files, nor in any file of the workspace's
//!   members but the lab's and xtask's, points into `lab/` or at `../shared`.
//! - The README's count of publishable crates ("The first nineteen are the publishable
//!   crates") is the workspace's.
//!
//! The workspace's tests run it too.

use std::fs;
use std::path::{Path, PathBuf};

use crate::doc_cfg::{publishable_members, workspace_members};

/// The packages published on crates.io (none yet).
const PUBLISHED: &[&str] = &[];

/// Runs the check on this workspace.
pub fn run(args: &[String]) -> Result<(), String> {
    if !matches!(args, [flag] if flag == "--check") {
        return Err("usage: cargo xtask doc-truth --check".into());
    }
    let (files, problems) = check_workspace(&crate::workspace_root())?;
    if problems.is_empty() {
        println!("doc-truth: {files} files say nothing untrue about publishing or the lab");
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The number of files read, and a line for each untrue claim.
fn check_workspace(root: &Path) -> Result<(usize, Vec<String>), String> {
    let members = publishable_members(root)?;
    let mut packages = Vec::new();
    let mut problems = Vec::new();
    let mut read = 0;
    for member in &members {
        let path = root.join(member).join("Cargo.toml");
        let manifest = read_text(&path)?;
        read += 1;
        let package = package_name(&manifest)
            .ok_or_else(|| format!("{}: no `name = ` in [package]", path.display()))?;
        if !PUBLISHED.contains(&package.as_str()) && manifest.contains("\ndocumentation =") {
            problems.push(format!(
                "{member}/Cargo.toml: a `documentation` field for `{package}`, which is not on \
                 crates.io (its docs.rs page does not exist)"
            ));
        }
        packages.push(package);
    }
    let unpublished: Vec<&str> = packages
        .iter()
        .map(String::as_str)
        .filter(|package| !PUBLISHED.contains(package))
        .collect();
    for file in product_text(root)? {
        let text = read_text(&file)?;
        read += 1;
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let markdown = file.extension().is_some_and(|extension| extension == "md");
        for (index, line) in text.lines().enumerate() {
            let at = format!("{shown}:{}", index + 1);
            if let Some(cited) = cites_lab(line) {
                problems.push(format!("{at}: points at `{cited}`, outside the product"));
            }
            if markdown {
                problems.extend(
                    unpublished_claims(line, &unpublished)
                        .into_iter()
                        .map(|claim| format!("{at}: {claim}")),
                );
            }
        }
    }
    let readme = read_text(&root.join("README.md"))?;
    read += 1;
    problems.extend(crate_count_claim(&readme, members.len()));
    Ok((read, problems))
}

/// The README, the CHANGELOG, every page of `docs/`, and every file of the workspace's members
/// but the lab and xtask (which builds the lab's bundle): their READMEs, manifests, sources,
/// examples, benchmarks and tests.
fn product_text(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    text_files(&root.join("docs"), &mut files)?;
    for member in workspace_members(root)? {
        if member != "lab" && member != "xtask" {
            text_files(&root.join(member), &mut files)?;
        }
    }
    Ok(files)
}

/// Every `.md`, `.rs` and `.toml` file under `dir`, appended in path order (build outputs
/// skipped).
fn text_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_none_or(|name| name != "target") {
                text_files(&path, files)?;
            }
        } else if path
            .extension()
            .is_some_and(|extension| ["md", "rs", "toml"].iter().any(|known| extension == *known))
        {
            files.push(path);
        }
    }
    Ok(())
}

fn read_text(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The `name` of a manifest's `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let package = &manifest[manifest.find("[package]")?..];
    let line = package
        .lines()
        .find(|line| line.trim_start().starts_with("name ="))?;
    Some(line.split('"').nth(1)?.to_owned())
}

/// The lab path `line` points at: a word starting `lab/` (not `…/lab/`), or `../shared`.
fn cites_lab(line: &str) -> Option<&'static str> {
    if line.contains("../shared") {
        return Some("../shared");
    }
    let bytes = line.as_bytes();
    line.match_indices("lab/")
        .any(|(at, _)| {
            at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric()
                    || matches!(bytes[at - 1], b'/' | b'_' | b'-' | b'.'))
        })
        .then_some("lab/")
}

/// What `line` claims of a package in `unpublished` that only a published one has.
fn unpublished_claims(line: &str, unpublished: &[&str]) -> Vec<String> {
    let mut claims = Vec::new();
    for package in unpublished {
        for page in [
            format!("crates.io/crates/{package}"),
            format!("docs.rs/{package}"),
        ] {
            if names_page(line, &page) {
                claims.push(format!(
                    "a link to {page}, a page `{package}` does not have yet"
                ));
            }
        }
        let dependency = format!("{package} = ");
        if let Some(at) = line.trim_start().strip_prefix(&dependency) {
            let at = at.trim_start();
            if at.starts_with('"') || at.contains("version =") {
                claims.push(format!(
                    "a crates.io dependency line for `{package}`, which is not published (depend \
                     on it by path)"
                ));
            }
        }
    }
    claims
}

/// Whether `line` names `page` as a whole package (`docs.rs/cuda-safe` is not named by
/// `docs.rs/cuda-safe-sys`).
fn names_page(line: &str, page: &str) -> bool {
    line.match_indices(page).any(|(at, _)| {
        line[at + page.len()..]
            .chars()
            .next()
            .is_none_or(|next| !(next.is_ascii_alphanumeric() || next == '-' || next == '_'))
    })
}

/// A problem if the README's "The first N are the publishable crates" does not say `count`.
fn crate_count_claim(readme: &str, count: usize) -> Option<String> {
    const WORDS: [&str; 25] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "twenty-one",
        "twenty-two",
        "twenty-three",
        "twenty-four",
    ];
    let claim = " are the publishable crates";
    let Some(end) = readme.find(claim) else {
        return Some(format!("README.md: no \"The first N{claim}\" line"));
    };
    let said = readme[..end]
        .rsplit("The first ")
        .next()
        .unwrap_or_default();
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    let expected = WORDS.get(count).copied().unwrap_or("more than twenty-four");
    (said != expected).then(|| {
        format!("README.md: \"The first {said}{claim}\", but the workspace has {expected}")
    })
}

#[cfg(test)]
mod tests {
    use super::{check_workspace, cites_lab, crate_count_claim, unpublished_claims};

    #[test]
    fn finds_claims_of_publishing() {
        let unpublished = ["cuda-safe", "cuda-safe-sys"];
        let claims = |line| unpublished_claims(line, &unpublished).len();
        assert_eq!(
            claims("cuda-safe-sys = { version = \"0.1\", features = [] }"),
            1
        );
        assert_eq!(claims("cuda-safe = \"0.1\""), 1);
        assert_eq!(claims("cuda-safe = { path = \"../cuda-safe\" }"), 0);
        assert_eq!(
            claims("see [`cuda-safe`](https://crates.io/crates/cuda-safe)."),
            1
        );
        assert_eq!(claims("https://docs.rs/cuda-safe-sys/latest"), 1);
        assert_eq!(claims("https://docs.rs/cuda-safe-libs/latest"), 0);
        assert_eq!(claims("cudarc = \"0.19\""), 0);
    }

    #[test]
    fn finds_lab_citations() {
        assert_eq!(cites_lab("see lab/notes/x.md"), Some("lab/"));
        assert_eq!(cites_lab("(`lab/gpu`)"), Some("lab/"));
        assert_eq!(
            cites_lab("the floors in ../shared/bench"),
            Some("../shared")
        );
        assert_eq!(cites_lab("gitlab/x and /opt/lab/y and my_lab/z"), None);
    }

    #[test]
    fn reads_the_readmes_crate_count() {
        let readme = "x\nThe first nineteen are the publishable crates, packaged";
        assert_eq!(crate_count_claim(readme, 19), None);
        assert!(crate_count_claim(readme, 20).unwrap().contains("twenty"));
        assert!(crate_count_claim("nothing", 19).is_some());
    }

    /// The workspace's own text: what `cargo xtask doc-truth --check` checks.
    #[test]
    fn the_workspaces_text_is_true_about_publishing_and_the_lab() {
        let (files, problems) = check_workspace(&crate::workspace_root()).unwrap();
        assert!(files > 100, "only {files} files read");
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
