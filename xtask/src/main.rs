//! `cargo xtask`: the project's tasks that are not plain cargo commands.
//!
//! - `cargo xtask bindgen [--from-wheels | --cuda-home DIR] [--only CRATE]... [--check]`:
//!   regenerate the raw bindings and the scaffolding of `cuda-sys`, `nvrtc-sys`, `nvml-sys`,
//!   `nvjitlink-sys`, `nvfatbin-sys`, `nccl-sys`, `cublas-sys`, `cublaslt-sys`, `curand-sys`,
//!   `cudnn-sys`, `cufft-sys`, `cusparse-sys` and `cusolver-sys` (or only the named crates'),
//!   or check the committed ones for drift.
//! - `cargo xtask gpu-bundle [--out DIR] [--only FILTER]... [--lab]`: build the GPU tests,
//!   examples and benchmarks in release mode, with the C floors' sources, and write a folder
//!   that runs them (or the ones a filter keeps) on a GPU machine without Rust; `--lab` adds the
//!   lab's diagnostics.
//! - `cargo xtask public-api [--check]`: the public-API listings and their CHANGELOG check.
//! - `cargo xtask crate-plan --check`: the crate graph against the plan in
//!   `docs/architecture.md` (the core on no annex, each annex on what its line names).
//! - `cargo xtask doc-cfg --check`: every feature-gated public item of a publishable crate
//!   carries its docs.rs badge (`doc(cfg)`).
//! - `cargo xtask file-length --check`: no hand-written file over 600 lines.
//! - `cargo xtask doc-truth --check`: the product's text claims no publishing that has not
//!   happened and cites no lab.

#[cfg(feature = "bindgen")]
mod bindgen;
mod bundle;
mod crate_plan;
mod doc_cfg;
mod doc_truth;
mod file_length;
#[cfg(feature = "bindgen")]
mod headers;
#[cfg(feature = "bindgen")]
mod library_headers;
#[cfg(feature = "bindgen")]
mod nccl_header;
mod public_api;

use std::process::ExitCode;

const USAGE: &str = "\
usage:
  cargo xtask bindgen [--from-wheels] [--check]   generate from the pinned PyPI header wheels (default)
  cargo xtask bindgen --cuda-home DIR [--check]   generate the file of DIR's CUDA major version
                                                  (nccl.h and the cuBLAS and cuRAND headers always
                                                  come from their pinned wheels)
  cargo xtask bindgen ... --only CRATE            only this crate's files (nccl-sys, cuda-sys, ...)
  cargo xtask gpu-bundle [--out DIR] [--only FILTER]... [--lab]
                                                  build the GPU bundle (default target/gpu-bundle)
  cargo xtask public-api [--check]                the crates' public-API listings
  cargo xtask crate-plan --check                  the crate graph against docs/architecture.md
  cargo xtask doc-cfg --check                     every feature-gated public item has its docs.rs badge
  cargo xtask doc-truth --check                   no claim of publishing before it, no lab cited
  cargo xtask file-length --check                 no hand-written file over 600 lines";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        #[cfg(feature = "bindgen")]
        Some("bindgen") => bindgen::run(&args[1..]),
        #[cfg(not(feature = "bindgen"))]
        Some("bindgen") => Err(
            "this xtask was built without its `bindgen` feature; `cargo xtask bindgen` (the \
             alias in .cargo/config.toml) turns it on"
                .into(),
        ),
        Some("public-api") => public_api::run(&args[1..]),
        Some("crate-plan") => crate_plan::run(&args[1..]),
        Some("doc-cfg") => doc_cfg::run(&args[1..]),
        Some("doc-truth") => doc_truth::run(&args[1..]),
        Some("file-length") => file_length::run(&args[1..]),
        Some("gpu-bundle") => bundle::run(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("unknown or missing task\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of `xtask/`). `cargo run` tells the running task where its
/// manifest is; the path compiled in is only the fallback, because cargo reuses one binary for
/// two checkouts that share a target folder (a `git worktree`), and the compiled-in path then
/// names the other checkout.
fn workspace_root() -> std::path::PathBuf {
    root_of(std::env::var_os("CARGO_MANIFEST_DIR"))
}

/// The parent of `manifest_dir`, or of the manifest folder compiled in when it is `None`.
fn root_of(manifest_dir: Option<std::ffi::OsString>) -> std::path::PathBuf {
    let manifest_dir = manifest_dir.map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    );
    manifest_dir
        .parent()
        .map_or_else(|| manifest_dir.clone(), std::path::Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::root_of;
    use std::path::Path;

    #[test]
    fn the_root_follows_the_running_checkout_not_the_compiled_one() {
        assert_eq!(
            root_of(Some("/other/checkout/xtask".into())),
            Path::new("/other/checkout")
        );
        assert_eq!(
            root_of(None),
            Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
        );
    }
}
