//! The migration guides stay current: every public item of the crate root (each name its
//! `pub use` lines re-export, and each public module) appears in
//! `docs/migrating-from-cuda-core.md`, in its tables or in its list of deliberate omissions,
//! and neither guide calls something missing that the crate has.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// A workspace file's text.
fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every name the crate root makes public: the last segment (or the `as` name) of each item
/// of its `pub use` statements, and its `pub mod`s; not a `#[doc(hidden)]` module (the exported
/// macros' facade) or what it holds.
fn root_items() -> BTreeSet<String> {
    let lib = read("src/lib.rs");
    let mut items = BTreeSet::new();
    let mut statement = String::new();
    let (mut hidden, mut in_hidden_module) = (false, false);
    for line in lib.lines().map(str::trim) {
        if line.starts_with("//") {
            continue;
        }
        if in_hidden_module {
            in_hidden_module = line != "}";
            continue;
        }
        if line == "#[doc(hidden)]" {
            hidden = true;
            continue;
        }
        if std::mem::take(&mut hidden) && line.starts_with("pub mod ") {
            in_hidden_module = line.ends_with('{');
            continue;
        }
        if let Some(name) = line.strip_prefix("pub mod ") {
            items.insert(name.trim_end_matches(';').to_owned());
            continue;
        }
        if line.starts_with("pub use ") || !statement.is_empty() {
            statement.push_str(line);
            statement.push(' ');
            if !line.ends_with(';') {
                continue;
            }
            let body = statement
                .trim_start_matches("pub use ")
                .trim_end()
                .trim_end_matches(';');
            let inner = body.find('{').map_or(body, |open| &body[open + 1..]);
            for item in inner.trim_end_matches('}').split(',') {
                let item = item.trim();
                let name = match item.split_once(" as ") {
                    Some((_, alias)) => alias,
                    None => item.rsplit("::").next().unwrap_or(item),
                };
                if !name.is_empty() && name != "self" {
                    items.insert(name.trim().to_owned());
                }
            }
            statement.clear();
        }
    }
    items
}

/// Every identifier in the code of `markdown`: its fenced blocks and its inline code spans.
fn code_identifiers(markdown: &str) -> BTreeSet<String> {
    let mut code = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            code.push(line);
        } else {
            code.extend(line.split('`').skip(1).step_by(2));
        }
    }
    code.iter()
        .flat_map(|span| span.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The text of the section headed `## heading` (to the next `## ` heading).
fn section<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let start = markdown
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let rest = &markdown[start + heading.len() + 5..];
    rest.find("\n## ").map_or(rest, |end| &rest[..end])
}

#[test]
fn every_root_item_is_in_the_cuda_core_guide() {
    let guide = read("../docs/migrating-from-cuda-core.md");
    let items = root_items();
    assert!(items.len() > 80, "only {} root items found", items.len());
    let named = code_identifiers(&guide);
    let missing: Vec<&String> = items.iter().filter(|name| !named.contains(*name)).collect();
    assert!(
        missing.is_empty(),
        "public items of the crate root that docs/migrating-from-cuda-core.md does not name \
         (add a row, or list them under its deliberate omissions): {missing:?}"
    );
}

/// What the crate has, by the words a guide would use to call it missing.
const FEATURES: &[&str] = &[
    "IPC",
    "virtual memory",
    "NCCL",
    "graphs",
    "green contexts",
    "NVML",
    "TMA",
    "nvJitLink",
    "nvFatbin",
    "peer access",
    "managed memory",
    "cuBLAS",
    "cuBLASLt",
    "cuRAND",
    "cuFFT",
    "cuSOLVER",
    "cuSPARSE",
    "cuDNN",
    "NVTX",
];

#[test]
fn no_guide_calls_missing_what_the_crate_has() {
    let items = root_items();
    for guide in ["migrating-from-cuda-core.md", "migrating-from-cudarc.md"] {
        let text = read(&format!("../docs/{guide}"));
        let not_here = section(&text, "Not here");
        for name in code_identifiers(not_here) {
            assert!(!items.contains(&name), "{guide} lists {name} as not here");
        }
        for feature in FEATURES {
            assert!(
                !names_word(not_here, feature),
                "{guide}'s \"Not here\" names {feature}, which the crate has"
            );
        }
    }
}

/// Whether `text` names `word` whole (`cuSOLVER` is not named by `cuSOLVERMg`).
fn names_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        [before, after]
            .into_iter()
            .flatten()
            .all(|c| !c.is_alphanumeric())
    })
}

/// C calls a wrapper may alias without `api_doc!`, and why.
const NO_API_DOC: &[(&str, &str)] = &[
    ("cuDevSmResourceSplit", CUDA_13_ONLY),
    ("cuMemPrefetchBatchAsync", CUDA_13_ONLY),
    ("cuMemDiscardBatchAsync", CUDA_13_ONLY),
    ("cuMemDiscardAndPrefetchBatchAsync", CUDA_13_ONLY),
    ("cuGraphGetId", CUDA_13_ONLY),
    ("cuGraphExecGetId", CUDA_13_ONLY),
    ("cuGraphNodeGetLocalId", CUDA_13_ONLY),
    ("cuGraphNodeGetToolsId", CUDA_13_ONLY),
    ("cuStreamBeginRecaptureToGraph", CUDA_13_ONLY),
    ("cuGreenCtxGetId", CUDA_13_ONLY),
    ("cuStreamGetDevResource", CUDA_13_ONLY),
    ("nvJitLinkGetLinkedLTOIR", CUDA_13_ONLY),
];

/// Why a name of [`NO_API_DOC`] links its reference by hand.
const CUDA_13_ONLY: &str =
    "in the CUDA 13 headers only, so the CUDA 12 ABI's api_doc! does not know it";

/// The prefixes of C names, and the raw crate whose `api_doc!` knows them.
const C_PREFIXES: &[(&str, &str)] = &[
    ("nvJitLink", "nvjitlink_sys"),
    ("nvFatbin", "nvfatbin_sys"),
    ("cublasLt", "cublaslt_sys"),
    ("cublas", "cublas_sys"),
    ("curand", "curand_sys"),
    ("cusolver", "cusolver_sys"),
    ("cusparse", "cusparse_sys"),
    ("cufft", "cufft_sys"),
    ("cudnn", "cudnn_sys"),
    ("nvrtc", "nvrtc_sys"),
    ("nvml", "nvml_sys"),
    ("nccl", "nccl_sys"),
    ("cu", "cuda_sys"),
];

/// The raw crate whose `api_doc!` documents the C function `name`, if it is one.
fn raw_crate_of(name: &str) -> Option<&'static str> {
    C_PREFIXES.iter().find_map(|(prefix, krate)| {
        let rest = name.strip_prefix(prefix)?;
        let next = rest.chars().next()?;
        (next.is_uppercase() || *prefix == "nvJitLink").then_some(*krate)
    })
}

#[test]
fn every_wrapper_links_the_c_call_it_aliases() {
    // The core's sources, and in the workspace the annex crates' beside it.
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs: Vec<_> = [
        "src",
        "../libs/src",
        "../nccl/src",
        "../ipc/src",
        "../async/src",
    ]
    .iter()
    .map(|dir| crate_dir.join(dir))
    .filter(|dir| dir.is_dir())
    .collect();
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    let mut checked = 0;
    let mut missing = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if !trimmed.starts_with("#[doc(alias") || trimmed.contains('$') {
                continue;
            }
            let mut attribute = String::new();
            for next in &lines[index..] {
                attribute.push_str(next);
                if next.trim_end().ends_with(")]") {
                    break;
                }
            }
            // The item's attributes and doc comment: the lines above, up to the previous item.
            let above = lines[..index]
                .iter()
                .rev()
                .take_while(|l| {
                    let l = l.trim_start();
                    l.starts_with("///") || l.starts_with("#[")
                })
                .copied()
                .collect::<Vec<_>>()
                .join("\n");
            for name in attribute.split('"').skip(1).step_by(2) {
                let Some(krate) = raw_crate_of(name) else {
                    continue;
                };
                if NO_API_DOC.iter().any(|(exempt, _)| *exempt == name) {
                    continue;
                }
                checked += 1;
                if !above.contains(&format!("{krate}::api_doc!({name})")) {
                    missing.push(format!("{}:{}: {name}", file.display(), index + 1));
                }
            }
        }
    }
    assert!(checked > 250, "only {checked} aliases checked");
    assert!(
        missing.is_empty(),
        "wrappers aliasing a C call without `#[doc = <crate>::api_doc!(name)]`:\n{}",
        missing.join("\n")
    );
}
