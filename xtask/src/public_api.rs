//! `cargo xtask public-api [--check]`: the public API of `cuda-safe` and of each annex crate,
//! one line per public path, read from rustdoc's JSON output, and the check that keeps the
//! CHANGELOG honest.
//!
//! Each crate's listing is written to `<its folder>/api/current.txt`. `--check` (run by CI) fails
//! when
//! - a committed listing differs from the code's (a public change must update it, so every
//!   change shows in review), or
//! - a name removed since the last release (`cuda-safe/api/<version>.txt`, from before the
//!   annexes left the core), or a type, trait, module, constant or free function added since,
//!   is named in no code span of `CHANGELOG.md`. The modules that moved to an annex crate
//!   ([`MOVES`]) are compared at their new paths, and each move must itself be named there.
//!
//! rustdoc's JSON output is unstable; it is asked of the stable toolchain with
//! `RUSTC_BOOTSTRAP=1`, as `cargo-semver-checks` and `cargo-public-api` do, into a target
//! folder of its own.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The last released version, whose listing is the baseline of the CHANGELOG check.
const RELEASED: &str = "0.1.0";

/// The publishable crates with a safe API: package, crate name, folder, and the features the
/// listing is made with (every optional part of the API).
const CRATES: &[(&str, &str, &str, &str)] = &[
    (
        "cuda-safe",
        "cuda_safe",
        "cuda-safe",
        "disk-cache,nvjitlink,fatbin,half,serde,tracing,cudarc,dlpark,uuid",
    ),
    ("cuda-safe-libs", "cuda_safe_libs", "libs", "blas,rand,half"),
    ("cuda-safe-nccl", "cuda_safe_nccl", "nccl", "half"),
    ("cuda-safe-ipc", "cuda_safe_ipc", "ipc", ""),
    ("cuda-safe-async", "cuda_safe_async", "async", "nccl"),
];

/// Paths of the last release that moved to an annex crate: the old prefix and the new one. The
/// baseline is read through them, so a moved item counts as unchanged.
const MOVES: &[(&str, &str)] = &[
    ("cuda_safe::blas", "cuda_safe_libs::blas"),
    ("cuda_safe::rand", "cuda_safe_libs::rand"),
    ("cuda_safe::nccl", "cuda_safe_nccl"),
    ("cuda_safe::completion", "cuda_safe_async"),
    ("cuda_safe::ipc::Channel", "cuda_safe_ipc::Channel"),
    ("cuda_safe::ipc::Listener", "cuda_safe_ipc::Listener"),
    ("cuda_safe::ipc::Released", "cuda_safe_ipc::Released"),
    (
        "cuda_safe::ipc::MAX_MESSAGE_BYTES",
        "cuda_safe_ipc::MAX_MESSAGE_BYTES",
    ),
    (
        "cuda_safe::ipc::MAX_VMM_CHUNKS",
        "cuda_safe_ipc::MAX_VMM_CHUNKS",
    ),
];

/// Runs the task: `args` are the arguments after `public-api`.
pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask public-api [--check]".into()),
    };
    let root = crate::workspace_root();
    let mut problems = Vec::new();
    let mut everything = String::new();
    for &(package, name, folder, features) in CRATES {
        let listing = generate(&root, package, name, features)?;
        everything.push_str(&listing);
        let current = root.join(folder).join("api/current.txt");
        if !check {
            if let Some(dir) = current.parent() {
                fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
            }
            fs::write(&current, &listing)
                .map_err(|e| format!("writing {}: {e}", current.display()))?;
            println!(
                "public-api: wrote {} ({} lines)",
                current.display(),
                listing.lines().count()
            );
            continue;
        }
        let committed = fs::read_to_string(&current).unwrap_or_default();
        if committed != listing {
            let (added, removed) = difference(&committed, &listing);
            problems.push(format!(
                "{} is not the code's public API ({} lines added, {} removed, e.g. {:?}): run \
                 `cargo xtask public-api` and say what changed in CHANGELOG.md",
                current.display(),
                added.len(),
                removed.len(),
                added.iter().chain(&removed).take(3).collect::<Vec<_>>()
            ));
        }
    }
    if !check {
        return Ok(());
    }
    let baseline_path = root.join(format!("cuda-safe/api/{RELEASED}.txt"));
    let baseline = fs::read_to_string(&baseline_path)
        .map_err(|e| format!("reading {}: {e}", baseline_path.display()))?;
    let changelog = fs::read_to_string(root.join("CHANGELOG.md"))
        .map_err(|e| format!("reading CHANGELOG.md: {e}"))?;
    let everything: String = {
        let lines: BTreeSet<&str> = everything.lines().collect();
        lines.into_iter().map(|line| format!("{line}\n")).collect()
    };
    problems.extend(unrecorded(&moved(&baseline), &everything, &changelog));
    problems.extend(unrecorded_moves(&changelog));
    if problems.is_empty() {
        println!(
            "public-api: the listings match the code; every change since {RELEASED} is in CHANGELOG.md"
        );
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// `baseline` with each moved path ([`MOVES`]) at its new place.
fn moved(baseline: &str) -> String {
    let lines: BTreeSet<String> = baseline
        .lines()
        .map(|line| {
            let (kind, rest) = line.split_once(' ').unwrap_or(("", line));
            let rest = MOVES
                .iter()
                .find_map(|(old, new)| {
                    let tail = rest.strip_prefix(old)?;
                    (tail.is_empty() || tail.starts_with([':', '.', ' ']))
                        .then(|| format!("{new}{tail}"))
                })
                .unwrap_or_else(|| rest.to_owned());
            format!("{kind} {rest}")
        })
        .collect();
    lines.into_iter().map(|line| line + "\n").collect()
}

/// The moves CHANGELOG.md does not name (each old path must appear in a code span).
fn unrecorded_moves(changelog: &str) -> Vec<String> {
    MOVES
        .iter()
        .filter(|(old, _)| !changelog.contains(&format!("`{old}")))
        .map(|(old, new)| format!("CHANGELOG.md does not say that `{old}` moved to `{new}`"))
        .collect()
}

/// The listing of `package` (crate `name`) as it stands: rustdoc's JSON, walked from the crate
/// root.
fn generate(root: &Path, package: &str, name: &str, features: &str) -> Result<String, String> {
    let target = root.join("target/public-api");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .args([
            "rustdoc",
            "--quiet",
            "-p",
            package,
            "--lib",
            "--features",
            features,
        ])
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .status()
        .map_err(|e| format!("running cargo rustdoc: {e}"))?;
    if !status.success() {
        return Err(format!("cargo rustdoc failed: {status}"));
    }
    let json = target.join(format!("doc/{name}.json"));
    let text = fs::read_to_string(&json).map_err(|e| format!("reading {}: {e}", json.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let mut lines = BTreeSet::new();
    Walker {
        doc: &doc,
        lines: &mut lines,
    }
    .visit(&doc["root"], name, &mut Vec::new());
    Ok(lines.into_iter().map(|line| line + "\n").collect())
}

/// Walks rustdoc's JSON from a module, writing one line per public item.
struct Walker<'a> {
    doc: &'a Value,
    lines: &'a mut BTreeSet<String>,
}

impl<'a> Walker<'a> {
    fn item(&self, id: &Value) -> Option<&'a Value> {
        let doc: &'a Value = self.doc;
        let key = match id {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            _ => return None,
        };
        doc["index"].get(key)
    }

    fn visit(&mut self, id: &Value, path: &str, modules: &mut Vec<String>) {
        let Some(item) = self.item(id) else { return };
        let Some((kind, inner)) = kind_of(item) else {
            return;
        };
        let deprecated = if item["deprecation"].is_null() {
            ""
        } else {
            " (deprecated)"
        };
        if kind == "module" {
            let key = id.to_string();
            if modules.contains(&key) {
                return;
            }
            modules.push(key);
            self.lines.insert(format!("mod {path}{deprecated}"));
            for child in inner["items"].as_array().into_iter().flatten() {
                self.child(child, path, modules);
            }
            modules.pop();
            return;
        }
        self.lines.insert(format!("{kind} {path}{deprecated}"));
        match kind {
            "struct" | "enum" | "union" => {
                self.impls(inner, path);
                for field in struct_fields(inner) {
                    if let Some(field) = self.item(field).filter(|f| is_public(f)) {
                        let name = field["name"].as_str().unwrap_or("?");
                        self.lines.insert(format!("field {path}.{name}"));
                    }
                }
                for variant in inner["variants"].as_array().into_iter().flatten() {
                    if let Some(name) = self.item(variant).and_then(|v| v["name"].as_str()) {
                        self.lines.insert(format!("variant {path}::{name}"));
                    }
                }
            }
            "trait" => {
                for member in inner["items"].as_array().into_iter().flatten() {
                    if let Some(member) = self.item(member)
                        && let (Some((kind, _)), Some(name)) =
                            (kind_of(member), member["name"].as_str())
                    {
                        self.lines.insert(format!("{kind} {path}::{name}"));
                    }
                }
            }
            _ => {}
        }
    }

    /// One item of a module: a public item or a public re-export.
    fn child(&mut self, id: &Value, path: &str, modules: &mut Vec<String>) {
        let Some(item) = self.item(id).filter(|item| is_public(item)) else {
            return;
        };
        let Some((kind, inner)) = kind_of(item) else {
            return;
        };
        if kind != "use" {
            if let Some(name) = item["name"].as_str() {
                self.visit(id, &format!("{path}::{name}"), modules);
            }
            return;
        }
        let name = inner["name"].as_str().unwrap_or("?");
        let source = inner["source"].as_str().unwrap_or("?");
        if inner["is_glob"].as_bool() == Some(true) {
            self.lines.insert(format!("glob {path}::{source}"));
        } else if self.item(&inner["id"]).is_some() {
            self.visit(&inner["id"], &format!("{path}::{name}"), modules);
        } else {
            self.lines.insert(format!("use {path}::{name} = {source}"));
        }
    }

    /// The public methods and constants of a type's inherent impls, and its trait impls.
    fn impls(&mut self, inner: &Value, path: &str) {
        for id in inner["impls"].as_array().into_iter().flatten() {
            let Some(implementation) = self.item(id).and_then(|i| i["inner"].get("impl")) else {
                continue;
            };
            if let Some(name) = implementation["trait"]["path"].as_str() {
                // rustdoc lists the auto traits a type lacks as negative impls (`!Sync`).
                let not = if implementation["is_negative"] == true {
                    "!"
                } else {
                    ""
                };
                self.lines.insert(format!("impl {path}: {not}{name}"));
                continue;
            }
            for member in implementation["items"].as_array().into_iter().flatten() {
                let Some(member) = self.item(member).filter(|m| is_public(m)) else {
                    continue;
                };
                if let (Some((kind, _)), Some(name)) = (kind_of(member), member["name"].as_str()) {
                    let deprecated = if member["deprecation"].is_null() {
                        ""
                    } else {
                        " (deprecated)"
                    };
                    self.lines
                        .insert(format!("{kind} {path}::{name}{deprecated}"));
                }
            }
        }
    }
}

/// An item's kind (`struct`, `function`, ...) and what rustdoc says inside it.
fn kind_of(item: &Value) -> Option<(&str, &Value)> {
    let inner = item["inner"].as_object()?;
    inner
        .iter()
        .next()
        .map(|(kind, value)| (kind.as_str(), value))
}

fn is_public(item: &Value) -> bool {
    item["visibility"].as_str() == Some("public")
}

/// The field ids of a struct (plain or tuple), none for other kinds.
fn struct_fields(inner: &Value) -> Vec<&Value> {
    let kind = &inner["kind"];
    let fields = kind["plain"]["fields"]
        .as_array()
        .or_else(|| kind["tuple"].as_array());
    fields
        .into_iter()
        .flatten()
        .filter(|f| !f.is_null())
        .collect()
}

/// The lines of `after` not in `before`, and those of `before` not in `after`.
fn difference(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
    let before: BTreeSet<&str> = before.lines().collect();
    let after: BTreeSet<&str> = after.lines().collect();
    let added = after.difference(&before).map(|s| s.to_string()).collect();
    let removed = before.difference(&after).map(|s| s.to_string()).collect();
    (added, removed)
}

/// The changes since `baseline` that `changelog` does not name: every removed name, and every
/// added type, trait, module, constant or free function (their methods and fields are covered
/// by the type's line). Trait impls are left out.
fn unrecorded(baseline: &str, listing: &str, changelog: &str) -> Vec<String> {
    let named = code_identifiers(changelog);
    let (added, removed) = difference(baseline, listing);
    let significant_addition = |line: &str| {
        let kind = line.split(' ').next().unwrap_or("");
        let path = line.split(' ').nth(1).unwrap_or("");
        // A free function's path names modules only; a method's names its type.
        let in_a_module = !path
            .split("::")
            .any(|segment| segment.starts_with(|c: char| c.is_uppercase()));
        match kind {
            "struct" | "enum" | "union" | "trait" | "mod" | "type_alias" | "constant"
            | "static" | "macro" => true,
            "function" => in_a_module,
            _ => false,
        }
    };
    let checks = removed.iter().map(|line| ("removed", line)).chain(
        added
            .iter()
            .filter(|line| significant_addition(line))
            .map(|line| ("added", line)),
    );
    checks
        .filter(|(_, line)| !line.starts_with("impl ") && !line.ends_with("(deprecated)"))
        .filter(|(_, line)| !named.contains(name_of(line)))
        .map(|(what, line)| {
            format!(
                "CHANGELOG.md names no `{}` ({what} since {RELEASED}: {line})",
                name_of(line)
            )
        })
        .collect()
}

/// The name a listing line is about: the last segment of its path (a field's own name).
fn name_of(line: &str) -> &str {
    let path = line.split(' ').nth(1).unwrap_or(line);
    path.rsplit(['.', ':']).next().unwrap_or(path)
}

/// Every identifier inside the code spans of `markdown`.
fn code_identifiers(markdown: &str) -> BTreeSet<&str> {
    markdown
        .lines()
        .flat_map(|line| line.split('`').skip(1).step_by(2))
        .flat_map(|span| span.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| !word.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removals_and_added_types_need_a_changelog_line() {
        let baseline = "function cuda_safe::Device::raw\nstruct cuda_safe::Device\n";
        let listing = "function cuda_safe::Device::as_raw\nstruct cuda_safe::Device\nstruct cuda_safe::Toolchain\nfunction cuda_safe::Toolchain::name\n";
        let problems = unrecorded(baseline, listing, "nothing here");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("`raw`")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("`Toolchain`")),
            "{problems:?}"
        );
        let recorded = "- `Device::raw` is `as_raw`\n- `Toolchain`: which tool made the code\n";
        assert!(unrecorded(baseline, listing, recorded).is_empty());
    }

    #[test]
    fn moved_paths_are_compared_at_their_new_place_and_must_be_named() {
        let baseline = "struct cuda_safe::blas::Blas\nfunction cuda_safe::blas::Blas::gemm\n\
                        struct cuda_safe::blasphemy\n";
        let after = moved(baseline);
        assert!(
            after.contains("struct cuda_safe_libs::blas::Blas\n"),
            "{after}"
        );
        assert!(
            after.contains("function cuda_safe_libs::blas::Blas::gemm\n"),
            "{after}"
        );
        assert!(after.contains("struct cuda_safe::blasphemy\n"), "{after}");
        let missing = unrecorded_moves("- `cuda_safe::blas` is `cuda_safe_libs::blas`");
        assert!(
            missing.iter().all(|m| !m.contains("`cuda_safe::blas`")),
            "{missing:?}"
        );
        assert!(
            missing.iter().any(|m| m.contains("`cuda_safe::nccl`")),
            "{missing:?}"
        );
    }

    #[test]
    fn an_auto_trait_a_type_lacks_is_listed_as_lacking() {
        let doc = serde_json::json!({"index": {
            "1": {"inner": {"impl": {"trait": {"path": "Sync"}, "is_negative": true}}},
            "2": {"inner": {"impl": {"trait": {"path": "Send"}, "is_negative": false}}},
        }});
        let mut lines = BTreeSet::new();
        Walker {
            doc: &doc,
            lines: &mut lines,
        }
        .impls(&serde_json::json!({"impls": [1, 2]}), "cuda_safe::Graph");
        let lines: Vec<_> = lines.into_iter().collect();
        assert_eq!(
            lines,
            [
                "impl cuda_safe::Graph: !Sync",
                "impl cuda_safe::Graph: Send"
            ]
        );
    }

    #[test]
    fn names_and_code_spans_are_read_as_written() {
        assert_eq!(name_of("field cuda_safe::CompiledProgram.log"), "log");
        assert_eq!(name_of("function cuda_safe::nccl::group"), "group");
        let spans = code_identifiers("a `Device::raw` b `x` and `Toolchain`");
        assert!(spans.contains("raw") && spans.contains("Toolchain") && !spans.contains("b"));
    }
}
