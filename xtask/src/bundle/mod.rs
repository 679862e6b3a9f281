//! `cargo xtask gpu-bundle [--out DIR] [--only FILTER]...`: build the GPU integration tests, the examples and the
//! benchmarks for both CUDA ABIs in the `bundle` profile (release code, symbols stripped), and
//! write a folder that runs them on a GPU machine that has no Rust toolchain:
//!
//! ```text
//! gpu-bundle/
//!   run.sh                                  runs everything, writes run.log and summary.txt
//!   MANIFEST.txt                            git commit, dirty count, every file and its size
//!   bench/{driver,disk_hit,graph,multi_gpu,nccl}_floor.c  the shared C floors (from ../shared/bench/)
//!   bench/*.c, bench/*.sh, bench/*.py       the repository's own C floors and benchmark scripts
//!   bench/diag/                             the diagnostic tools (bench/diag/README.md)
//!   cuda-12/{tests,examples,benches}/NAME   executables built with the default features (and
//!                                           `nccl` where a package has it: the NCCL tests and
//!                                           the allreduce examples)
//!   cuda-13/{tests,examples,benches}/NAME   built with --no-default-features --features cuda-13
//!   cuda-{12,13}/lib/libcuda_safe_interop.so  the DLPack interop proof's C ABI library
//!   interop/                                its Python driver and run_interop.sh (not run by run.sh)
//! ```
//!
//! `--only FILTER` (repeatable) keeps only the executables whose `abi/kind/name` contains one of
//! the filters, as `run.sh FILTER` matches them, and builds only those (by name, so a few items
//! take about two minutes instead of thirteen): a run that needs a few items carries a bundle
//! small enough to travel beside the repository. The interop library is built for each ABI
//! either way.

mod args;
mod bench;
mod cargo;
mod executables;
mod files;
mod interop;
mod manifest;
mod metadata;
mod plan;
mod script;
#[cfg(test)]
mod testing;

use std::collections::BTreeMap;

use cargo::run_cargo;
use files::{list_files, mib, prepare_out, write_executable};
use plan::ABIS;
use script::RUN_SH;

/// The cargo profile the bundle is built in (root `Cargo.toml`: release, stripped).
const PROFILE: &str = "bundle";

/// The most the bundle may weigh: the device tool carries at most 64 MiB, the repository's
/// files included.
const SIZE_LIMIT: u64 = 64 * 1024 * 1024;

/// Builds the bundle: `args` are the arguments after `gpu-bundle`.
pub fn run(args: &[String]) -> Result<(), String> {
    let root = crate::workspace_root();
    let args = args::parse_args(args)?;
    let out = match &args.out {
        Some(dir) => {
            std::path::absolute(dir).map_err(|e| format!("resolving {}: {e}", dir.display()))?
        }
        None => root.join("target").join("gpu-bundle"),
    };
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        eprintln!(
            "gpu-bundle: warning: not on x86-64 Linux; the GPU machine cannot run these binaries"
        );
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());

    let metadata = run_cargo(
        &root,
        &cargo,
        &["metadata", "--no-deps", "--format-version", "1"],
    )?;
    let packages = metadata::parse_metadata(&metadata.join("\n"))?;
    let plan = plan::plan_builds(&packages)?;

    prepare_out(&out)?;
    write_executable(&out.join("run.sh"), RUN_SH.as_bytes())?;
    let mut copied = BTreeMap::new();
    for abi in &ABIS {
        for &(kind, package) in &plan {
            executables::build_and_copy(
                &root,
                &cargo,
                abi,
                (kind, package),
                &out,
                &args,
                &mut copied,
            )?;
        }
        interop::build_interop(&root, &cargo, abi, &out)?;
    }
    interop::copy_interop_scripts(&root, &out)?;
    bench::copy_bench_sources(&root, &out)?;
    manifest::write_manifest(&root, &out)?;

    let total: u64 = list_files(&out)?.iter().map(|(_, size)| size).sum();
    println!(
        "gpu-bundle: {} executables, {} in {}",
        copied.len(),
        mib(total),
        out.display()
    );
    if total > SIZE_LIMIT {
        return Err(format!(
            "the bundle is {}, over the {} the device tool carries (with the repository's own \
             files); keep only the items a run needs with `--only FILTER`",
            mib(total),
            mib(SIZE_LIMIT)
        ));
    }
    println!(
        "gpu-bundle: run it with `bash {}/run.sh [FILTER]`",
        out.display()
    );
    Ok(())
}
