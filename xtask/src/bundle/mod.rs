//! `cargo xtask gpu-bundle [--out DIR] [--only FILTER]... [--lab]`: build the GPU integration
//! tests, the examples and the benchmarks for both CUDA ABIs in the `bundle` profile (release
//! code, symbols stripped), one cargo command per ABI, and write a folder that runs them on a GPU
//! machine that has no Rust toolchain:
//!
//! ```text
//! gpu-bundle/
//!   run.sh                                  runs everything, writes run.log and summary.txt
//!   MANIFEST.txt                            git commit, dirty count, every file and its size
//!   bench/run_benchmarks.sh, compare.py     the benchmark runner (floors and crate, in rounds)
//!   bench/floors/                           the C floors and build.sh (bench/floors/README.md)
//!   cuda-12/tests/gpu                       the GPU tests, one binary (its modules are the
//!   cuda-12/tests/gpu.files                 files of tests/tests/, listed here one a line:
//!                                           run.sh runs each file as an item of its own)
//!   cuda-12/{examples,benches}/NAME         built with the default features (and `nccl` where
//!                                           a package has it: the NCCL tests and the
//!                                           allreduce examples)
//!   cuda-13/...                             the same, --no-default-features --features cuda-13
//!   cuda-{12,13}/lib/libcuda_safe_interop.so  the DLPack interop proof's C ABI library
//!   interop/                                its Python driver and run_interop.sh (not run by run.sh)
//!   cuda-{12,13}/benches/diag_*, lab/diag/  with --lab only: the diagnostics (the lab
//!                                           package's benchmarks and any `diag_*` bench) and
//!                                           the lab's tools; run.sh runs none of them
//! ```
//!
//! The folder is also packed into `gpu-bundle.tar.gz` beside it (its size is what the limit
//! checks): a GPU run carries the archive and unpacks it before `run.sh`.
//!
//! `--only FILTER` (repeatable) keeps only the items whose `abi/kind/name` contains one of the
//! filters, as `run.sh FILTER` matches them (a test file is an item, `cuda-12/tests/graph`),
//! and builds only those (by name): a run that needs a few items carries a smaller bundle and
//! waits less for it. The interop library is built for each ABI either way.

mod archive;
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
use executables::Copies;
use files::{list_files, mib, prepare_out, write_executable};
use plan::ABIS;
use script::RUN_SH;

/// The cargo profile the bundle is built in (root `Cargo.toml`: release, stripped).
const PROFILE: &str = "bundle";

/// The most the packed bundle may weigh: the device tool carries 64 MiB in all, the
/// repository's own files included (10 MiB of tracked files on 2026-12-01), and both may grow.
const SIZE_LIMIT: u64 = 48 * 1024 * 1024;

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
    let test_files = plan::test_files(&root)?;
    let builds = ABIS
        .iter()
        .map(|abi| plan::plan_build(abi, &packages, &args, &test_files))
        .collect::<Result<Vec<_>, _>>()?;

    prepare_out(&out)?;
    write_executable(&out.join("run.sh"), RUN_SH.as_bytes())?;
    let mut copies = Copies {
        out: out.clone(),
        copied: BTreeMap::new(),
    };
    for build in &builds {
        executables::build_and_copy(&root, &cargo, build, &mut copies)?;
    }
    interop::copy_interop_scripts(&root, &out)?;
    bench::copy_bench_sources(&root, &out)?;
    if args.lab {
        bench::copy_lab_diag(&root, &out)?;
    }
    manifest::write_manifest(&root, &out)?;

    let listed = list_files(&out)?;
    let total: u64 = listed.iter().map(|(_, size)| size).sum();
    for abi in &ABIS {
        let prefix = format!("{}/", abi.name);
        let size: u64 = listed
            .iter()
            .filter(|(path, _)| path.starts_with(&prefix))
            .map(|(_, size)| size)
            .sum();
        println!("gpu-bundle: {}/ {}", abi.name, mib(size));
    }
    println!(
        "gpu-bundle: {} executables and libraries, {} in {}",
        copies.copied.len(),
        mib(total),
        out.display()
    );
    let (archive, packed) = archive::pack(&out)?;
    println!(
        "gpu-bundle: packed into {} ({})",
        archive.display(),
        mib(packed)
    );
    if packed > SIZE_LIMIT {
        return Err(format!(
            "the packed bundle is {}, over the {} it may weigh beside the repository's own \
             files (the device tool carries 64 MiB in all); keep only the items a run needs \
             with `--only FILTER`",
            mib(packed),
            mib(SIZE_LIMIT)
        ));
    }
    let carried = archive.strip_prefix(&root).unwrap_or(&archive);
    println!(
        "gpu-bundle: carry `{}` to the GPU machine and run it with \
         `tar -xzf {} -C /tmp && bash /tmp/{}/run.sh [FILTER]`, or run `bash {}/run.sh [FILTER]` \
         where the folder is",
        carried.display(),
        carried.display(),
        out.file_name().unwrap_or_default().to_string_lossy(),
        out.display()
    );
    Ok(())
}
