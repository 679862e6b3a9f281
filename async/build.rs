//! Declares `cfg(cuda_safe_loom)` (the loom model of the completion module) and sets
//! `cfg(workspace_docs)` when the crate is built inside its workspace, next to the
//! workspace's `README.md` and `docs/`: the doctests then include their Rust blocks
//! (`src/lib.rs`). A published crate has neither file, so it builds and tests without them.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(workspace_docs)");
    // `--cfg cuda_safe_loom` builds the completion module's waker table and bell on loom, to
    // model-check them (`docs/async.md`).
    println!("cargo::rustc-check-cfg=cfg(cuda_safe_loom)");
    println!("cargo::rerun-if-changed=build.rs");
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let workspace = Path::new(&crate_dir).join("..");
    if workspace.join("README.md").is_file() && workspace.join("docs").is_dir() {
        println!("cargo::rustc-cfg=workspace_docs");
    }
}
