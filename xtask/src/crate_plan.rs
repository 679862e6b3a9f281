//! `cargo xtask crate-plan --check`: the crate graph of `docs/architecture.md` held against the
//! workspace's manifests. Each line of the plan names a crate and the workspace crates its
//! library may depend on (normal dependencies, optional ones included). The check fails on a
//! dependency the line does not name (the core on an annex, an annex on another it does not
//! name), on a crate of the plan that is gone, and on a publishable crate built on the core
//! that the plan does not name.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The comment that marks the plan's block in the Markdown.
const MARKER: &str = "<!-- crate plan";

/// The core, which every annex stands on.
const CORE: &str = "cuda-safe";

/// Runs the task: `args` are the arguments after `crate-plan`.
pub fn run(args: &[String]) -> Result<(), String> {
    if !matches!(args, [flag] if flag == "--check") {
        return Err("usage: cargo xtask crate-plan --check".into());
    }
    let root = crate::workspace_root();
    let markdown = fs::read_to_string(root.join("docs/architecture.md"))
        .map_err(|e| format!("reading docs/architecture.md: {e}"))?;
    let plan = parse(&markdown)?;
    let graph = workspace_graph(&root)?;
    let problems = check(&plan, &graph);
    if problems.is_empty() {
        println!(
            "crate-plan: {} crates keep to the plan in docs/architecture.md",
            plan.len()
        );
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// What a workspace package depends on among the workspace's packages, and whether it is
/// published.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Package {
    publishable: bool,
    depends_on: BTreeSet<String>,
}

/// The plan: each crate and the workspace crates it may depend on.
fn parse(markdown: &str) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let start = markdown
        .find(MARKER)
        .ok_or("docs/architecture.md has no `<!-- crate plan` marker")?;
    let mut lines = markdown[start..].lines().skip(1);
    if lines.next().map(str::trim) != Some("```text") {
        return Err("the crate plan's marker must be followed by a ```text block".into());
    }
    let mut plan = BTreeMap::new();
    for line in lines.take_while(|line| line.trim() != "```") {
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        let allowed: BTreeSet<String> = words.map(str::to_owned).collect();
        if plan.insert(name.to_owned(), allowed).is_some() {
            return Err(format!("the crate plan names {name} twice"));
        }
    }
    if plan.is_empty() {
        return Err("the crate plan is empty".into());
    }
    Ok(plan)
}

/// The workspace's packages from `cargo metadata`, each with its normal dependencies on other
/// workspace packages.
fn workspace_graph(root: &Path) -> Result<BTreeMap<String, Package>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .map_err(|e| format!("running cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata's output: {e}"))?;
    Ok(graph_of(&metadata))
}

/// The graph of `metadata` (`cargo metadata --no-deps`'s JSON).
fn graph_of(metadata: &Value) -> BTreeMap<String, Package> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let names: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    packages
        .iter()
        .filter_map(|package| {
            let name = package["name"].as_str()?.to_owned();
            let publishable =
                !matches!(&package["publish"], Value::Array(registries) if registries.is_empty());
            let depends_on = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|dep| dep["kind"].is_null())
                .filter_map(|dep| dep["name"].as_str())
                .filter(|dep| names.contains(*dep))
                .map(str::to_owned)
                .collect();
            Some((
                name,
                Package {
                    publishable,
                    depends_on,
                },
            ))
        })
        .collect()
}

/// Every way `graph` runs against `plan`, one line each.
fn check(
    plan: &BTreeMap<String, BTreeSet<String>>,
    graph: &BTreeMap<String, Package>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, allowed) in plan {
        let Some(package) = graph.get(name) else {
            problems.push(format!(
                "the crate plan names {name}, which is no workspace package"
            ));
            continue;
        };
        for dependency in package.depends_on.difference(allowed) {
            problems.push(format!(
                "{name} depends on {dependency}, which its line of the crate plan does not name"
            ));
        }
    }
    for (name, package) in graph {
        if package.publishable && package.depends_on.contains(CORE) && !plan.contains_key(name) {
            problems.push(format!(
                "{name} is built on {CORE} and published, but the crate plan does not name it"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "intro\n<!-- crate plan: read by xtask -->\n```text\ncuda-safe   cuda-safe-sys\n\
                        cuda-safe-libs   cuda-safe cuda-safe-sys\n```\n";

    fn package(publishable: bool, depends_on: &[&str]) -> Package {
        Package {
            publishable,
            depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn the_core_on_an_annex_and_an_unplanned_annex_are_refused() {
        let plan = parse(PLAN).expect("the plan parses");
        let mut graph = BTreeMap::from([
            ("cuda-safe".to_owned(), package(true, &["cuda-safe-sys"])),
            ("cuda-safe-sys".to_owned(), package(true, &[])),
            (
                "cuda-safe-libs".to_owned(),
                package(true, &["cuda-safe", "cuda-safe-sys"]),
            ),
            ("cuda-gpu-tests".to_owned(), package(false, &["cuda-safe"])),
        ]);
        assert!(
            check(&plan, &graph).is_empty(),
            "{:?}",
            check(&plan, &graph)
        );
        graph.insert(
            "cuda-safe".to_owned(),
            package(true, &["cuda-safe-sys", "cuda-safe-libs"]),
        );
        graph.insert("cuda-safe-fft".to_owned(), package(true, &["cuda-safe"]));
        let problems = check(&plan, &graph);
        assert!(
            problems
                .iter()
                .any(|p| p.contains("cuda-safe depends on cuda-safe-libs")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("cuda-safe-fft is built on")),
            "{problems:?}"
        );
        graph.remove("cuda-safe-libs");
        assert!(
            check(&plan, &graph)
                .iter()
                .any(|p| p.contains("no workspace package"))
        );
    }

    #[test]
    fn the_metadata_gives_normal_workspace_dependencies_only() {
        let metadata: Value = serde_json::from_str(
            r#"{"packages": [
                {"name": "a", "publish": null, "dependencies": [
                    {"name": "b", "kind": null}, {"name": "c", "kind": "dev"},
                    {"name": "serde", "kind": null}]},
                {"name": "b", "publish": [], "dependencies": []},
                {"name": "c", "publish": null, "dependencies": []}
            ]}"#,
        )
        .expect("JSON");
        let graph = graph_of(&metadata);
        assert_eq!(graph["a"], package(true, &["b"]));
        assert!(!graph["b"].publishable);
        assert!(parse("no marker").is_err());
    }
}
