//! Declares `cfg(cuda_safe_loom)`: `RUSTFLAGS="--cfg cuda_safe_loom"` builds the waker table
//! and bell on loom, to model-check them (`docs/async.md`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cuda_safe_loom)");
    println!("cargo::rerun-if-changed=build.rs");
}
