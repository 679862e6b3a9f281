//! The module floors of `docs/architecture.md`, checked: every `crate::` path in a module of
//! `src/` names a module of its own floor or a lower one (never the crate root's
//! re-exports), the NVML wing (`system`) uses the ground floor only, and no C call is checked
//! with a hand-written API name (the `cu!`/`nvrtc!`/`nvml!`/`query!` macros name it once).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module and its floor, lowest first. Modules of one floor may use each other.
const FLOORS: &[(&str, u32)] = &[
    // Ground: no driver object.
    ("abi", 0),
    ("callback", 0),
    ("code", 0),
    ("driver", 0),
    ("error", 0),
    ("ffi", 0),
    ("handle", 0),
    ("user_file", 0),
    ("uuid", 0),
    // Compiled bytes by key.
    ("cache", 1),
    // The driver core.
    ("context", 2),
    ("device", 2),
    ("event", 2),
    ("memory", 2),
    ("ordering", 2),
    ("stream", 2),
    // What runs on the core.
    ("graph", 3),
    ("green", 3),
    ("kernel", 3),
    ("launch", 3),
    ("link", 3),
    ("module", 3),
    ("program", 3),
    ("tma", 3),
    // Beside, above the driver core (it may use floors 0 to 2 only; see ABOVE_CORE).
    ("nccl", 4),
    // Top.
    ("checkpoint", 5),
    ("dlpack", 5),
    ("kernels", 5),
    ("nvml_bridge", 5),
];

/// The NVML wing: beside the floors, on the ground floor only.
const BESIDE: &str = "system";

/// Modules beside the floors that stand on the driver core: they may use floors 0 to 2 (not
/// floor 3), and only the top may use them.
const ABOVE_CORE: &[&str] = &["nccl"];

/// Paths through the root that are not modules of this crate: the re-exported `-sys` crates.
const EXTERNAL: &[&str] = &["nvrtc_sys", "nvml_sys", "nvjitlink_sys", "nccl_sys"];

fn floor_of(module: &str) -> Option<u32> {
    FLOORS
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, floor)| *floor)
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to (`src/launch/args.rs` is `launch`).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_owned()
}

/// The code of a line: comments (and doc comments) removed.
fn code_of(line: &str) -> &str {
    match line.find("//") {
        Some(index) => &line[..index],
        None => line,
    }
}

/// Every `crate::<segment>` in `code`, with what follows the segment's first letter.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(index) = rest.find("crate::") {
        let after = &rest[index + "crate::".len()..];
        let segment: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{')
            .collect();
        found.push(segment);
        rest = after;
    }
    found
}

fn violations() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "lib" {
            continue;
        }
        let own = floor_of(&module);
        assert!(
            own.is_some() || module == BESIDE,
            "{} is in no floor: add its module to FLOORS (and to docs/architecture.md)",
            file.display()
        );
        let text = fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = code_of(line);
            let place = format!("{}:{}", file.display(), number + 1);
            if (code.contains("check(\"") && module != "error")
                || code.contains("check_nvrtc(\"")
                || code.contains("check_nvjitlink(\"")
                || code.contains("check_nccl(\"")
                || code.contains("check_nvml(\"") && !file.ends_with("system/text.rs")
            {
                problems.push(format!(
                    "{place}: a C call checked under a hand-written name; call it through \
                     cu!/nvrtc!/nvml!/query!"
                ));
            }
            for segment in crate_paths(code) {
                if segment.starts_with('{') {
                    problems.push(format!(
                        "{place}: `crate::{{...}}` imports through the root; name the defining modules"
                    ));
                    continue;
                }
                if segment.is_empty() || EXTERNAL.contains(&segment.as_str()) {
                    continue;
                }
                if segment.starts_with(|c: char| c.is_uppercase()) {
                    problems.push(format!(
                        "{place}: `crate::{segment}` goes through the root's re-exports; name the \
                         defining module"
                    ));
                    continue;
                }
                if segment == module {
                    continue;
                }
                let Some(target) = floor_of(&segment).or((segment == BESIDE).then_some(u32::MAX))
                else {
                    problems.push(format!("{place}: `crate::{segment}` is no known module"));
                    continue;
                };
                let allowed = match own {
                    // The NVML wing stands beside the floors, on the ground only.
                    None => target == 0,
                    // Beside, above the core: the driver core and below.
                    Some(_) if ABOVE_CORE.contains(&module.as_str()) => target <= 2,
                    // Only the top sees what stands above the core.
                    Some(floor) if ABOVE_CORE.contains(&segment.as_str()) => floor >= 5,
                    // Only the top sees the NVML wing.
                    Some(floor) if target == u32::MAX => floor >= 5,
                    Some(floor) => target <= floor,
                };
                if !allowed {
                    problems.push(format!(
                        "{place}: {module} (floor {}) imports {segment} (floor {}) from above",
                        own.map_or("beside".to_owned(), |floor| floor.to_string()),
                        if target == u32::MAX {
                            "beside".to_owned()
                        } else {
                            target.to_string()
                        }
                    ));
                }
            }
        }
    }
    problems
}

#[test]
fn every_module_imports_only_from_its_floor_or_below() {
    let problems = violations();
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_check_sees_what_it_checks() {
    // The scan found the modules it is meant to police (guards against a scan that reads
    // nothing and passes).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut per_module: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let paths = text
            .lines()
            .flat_map(|line| crate_paths(code_of(line)))
            .count();
        *per_module.entry(module_of(&src, file)).or_default() += paths;
    }
    for (module, _) in FLOORS {
        assert!(per_module.contains_key(*module), "no source for {module}");
    }
    assert!(per_module["launch"] > 0 && per_module["system"] > 0);
    assert_eq!(
        crate_paths("use crate::device::Device; crate::Error crate::{a, b}"),
        ["device", "Error", "{a"]
    );
    assert_eq!(code_of("let x = 1; // crate::Error"), "let x = 1; ");
}
