//! `cargo xtask bindgen`: generates the raw bindings and the lazily loading entry-point tables,
//! and each `-sys` crate's scaffolding (see [`scaffold`]).
//!
//! For each header (`cuda.h`, `nvrtc.h`, `nvml.h`, `nvJitLink.h`, `nvFatbin.h`, and the cuBLAS,
//! cuBLASLt, cuRAND, cuDNN, cuFFT, cuSPARSE and cuSOLVER headers of their own wheels: see
//! [`libraries`]) of each CUDA major, and
//! for `nccl.h`
//! once (NCCL's ABI does not follow the CUDA major; see [`nccl`]), bindgen produces the
//! types and constants; the function declarations it finds become methods of one struct
//! (`Driver`, `Nvrtc`, `Nvml`) that resolve their symbol through `cuda-loader` on first use.
//! The symbol of each method is the name clang sees after the header's macros, so it is the
//! versioned one (`cuMemAlloc_v2`). The output goes through prettyplease and then rustfmt, so
//! two runs give identical bytes and `cargo fmt --check` accepts it; its first line is an
//! `// @generated` marker, which tools and diff viewers recognise.

mod api;
mod doxygen;
mod entry_points;
mod format;
mod generate;
mod libraries;
mod library_apis;
mod links;
mod md5;
mod nccl;
mod nvml;
mod scaffold;
mod scan;
mod sections;

use std::fs;
use std::path::PathBuf;

use api::APIS;
use generate::generate;
use libraries::generate_library;
use library_apis::LIBRARY_APIS;
use scaffold::SCAFFOLDS;

use crate::headers;

/// Parsed command line of `cargo xtask bindgen`.
#[derive(Debug, Default, PartialEq)]
struct Options {
    /// `--cuda-home DIR`: the local toolkit to read the headers from; `None` for the wheels.
    cuda_home: Option<PathBuf>,
    /// `--check`: compare with the committed files instead of writing them.
    check: bool,
    /// `--only CRATE` (repeatable): generate only these crates' files (`nccl-sys`).
    only: Vec<String>,
}

/// Reads the task's arguments (those after `bindgen`).
fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => options.check = true,
            "--from-wheels" => options.cuda_home = None,
            "--only" => {
                let krate = args
                    .next()
                    .ok_or("--only needs a crate directory (nccl-sys)")?;
                options.only.push(krate.clone());
            }
            "--cuda-home" => {
                let dir = args.next().ok_or("--cuda-home needs a directory")?;
                options.cuda_home = Some(PathBuf::from(dir));
            }
            other => return Err(format!("unknown argument `{other}` for bindgen")),
        }
    }
    Ok(options)
}

/// Runs `cargo xtask bindgen`.
pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let root = crate::workspace_root();
    let wanted = |krate: &str| options.only.is_empty() || options.only.iter().any(|k| k == krate);
    let header_crates = APIS
        .iter()
        .map(|api| api.crate_dir)
        .chain(LIBRARY_APIS.iter().map(|library| library.api.crate_dir));
    let sets = if !header_crates.clone().any(wanted) {
        Vec::new()
    } else {
        match &options.cuda_home {
            Some(dir) => vec![headers::from_toolkit(dir)?],
            None => headers::from_wheels(&root)?,
        }
    };
    let mut drifted = Vec::new();
    let mut outputs = Vec::new();
    for set in &sets {
        for api in APIS.iter().filter(|api| wanted(api.crate_dir)) {
            let path = root
                .join(api.crate_dir)
                .join("src")
                .join(format!("v{}.rs", set.major));
            outputs.push((path, generate(api, set)?));
        }
        for library in LIBRARY_APIS
            .iter()
            .filter(|library| wanted(library.api.crate_dir))
        {
            let path = root
                .join(library.api.crate_dir)
                .join("src")
                .join(format!("v{}.rs", set.major));
            outputs.push((path, generate_library(library, set, &root)?));
        }
    }
    // nccl.h is not part of a CUDA toolkit: it always comes from its pinned wheels.
    if wanted(nccl::NCCL_API.crate_dir) {
        let nccl_path = root
            .join(nccl::NCCL_API.crate_dir)
            .join("src")
            .join(nccl::OUTPUT);
        outputs.push((nccl_path, nccl::generate_nccl(&root)?));
    }
    // The scaffolding needs no headers.
    for scaffold in SCAFFOLDS
        .iter()
        .filter(|scaffold| wanted(scaffold.crate_dir))
    {
        for (relative, code) in scaffold.files()? {
            outputs.push((root.join(scaffold.crate_dir).join(relative), code));
        }
    }
    for (path, code) in outputs {
        let committed = fs::read_to_string(&path).ok();
        if committed.as_deref() == Some(code.as_str()) {
            println!("unchanged {}", path.display());
        } else if options.check {
            drifted.push(path.display().to_string());
        } else {
            fs::write(&path, &code).map_err(|e| format!("writing {}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if drifted.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "generated files differ from the committed ones (run `cargo xtask bindgen`): {}",
            drifted.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_arguments() {
        assert_eq!(parse_args(&[]).unwrap(), Options::default());
        let options = parse_args(&strings(&["--cuda-home", "/opt/cuda", "--check"])).unwrap();
        assert_eq!(options.cuda_home, Some(PathBuf::from("/opt/cuda")));
        assert!(options.check);
        let options = parse_args(&strings(&["--only", "nccl-sys"])).unwrap();
        assert_eq!(options.only, ["nccl-sys"]);
        assert!(parse_args(&strings(&["--only"])).is_err());
        assert!(parse_args(&strings(&["--cuda-home"])).is_err());
        assert!(parse_args(&strings(&["--frobnicate"])).is_err());
    }
}
