//! The C floors and benchmark scripts copied into `bench/` of the bundle.

use std::fs;
use std::path::Path;

use super::files::make_executable;

/// Where the shared C floors live, relative to the workspace root (beside the checkout; never
/// committed here).
const SHARED_FLOORS_DIR: &str = "../shared/bench";

/// The shared C floors the benchmarks are measured against: the driver API (launch, memory,
/// compile, green contexts), a fresh process's on-disk cache hit, graphs and host callbacks,
/// two GPUs and two processes (peer copies, IPC pools, VMM), and NCCL's all-reduce across the
/// GPUs of one process.
const SHARED_FLOORS: &[&str] = &[
    "driver_floor.c",
    "disk_hit_floor.c",
    "graph_floor.c",
    "multi_gpu_floor.c",
    "nccl_floor.c",
];

/// Copies the shared C floors into `bench/` of the bundle (writable, whatever the sources'
/// modes), warning for each one that is missing.
pub(super) fn copy_shared_floors(root: &Path, out: &Path) -> Result<(), String> {
    let dir = out.join("bench");
    for name in SHARED_FLOORS {
        let src = root.join(SHARED_FLOORS_DIR).join(name);
        if !src.is_file() {
            eprintln!(
                "gpu-bundle: warning: {} not found; the bundle lacks that floor",
                src.display()
            );
            continue;
        }
        fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let dest = dir.join(name);
        let text = fs::read(&src).map_err(|e| format!("reading {}: {e}", src.display()))?;
        fs::write(&dest, text).map_err(|e| format!("writing {}: {e}", dest.display()))?;
    }
    Ok(())
}

/// Copies the repository's own `bench/` files (C floors, benchmark scripts) and its folders
/// (`bench/diag/`, the diagnostic tools) into `bench/` of the bundle, keeping the executable bit
/// of scripts.
pub(super) fn copy_bench_sources(root: &Path, out: &Path) -> Result<(), String> {
    copy_tree(&root.join("bench"), &out.join("bench"))
}

/// Copies the files under `src_dir` into `dir`, folder by folder, making `*.sh` executable; a
/// missing `src_dir` copies nothing, and links are skipped.
fn copy_tree(src_dir: &Path, dir: &Path) -> Result<(), String> {
    let Ok(entries) = fs::read_dir(src_dir) else {
        return Ok(());
    };
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", src_dir.display()))?;
        let src = entry.path();
        let dest = dir.join(entry.file_name());
        // Links are not followed (nor copied): a link to a folder above would never end.
        let kind = entry
            .file_type()
            .map_err(|e| format!("reading {}: {e}", src.display()))?;
        if kind.is_dir() {
            copy_tree(&src, &dest)?;
            continue;
        }
        if !kind.is_file() {
            continue;
        }
        fs::copy(&src, &dest).map_err(|e| format!("copying {}: {e}", src.display()))?;
        if src.extension().is_some_and(|ext| ext == "sh") {
            make_executable(&dest)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::files::list_files;
    use crate::bundle::testing::scratch;

    #[test]
    fn floors_and_bench_files_are_copied_and_scripts_executable() {
        let dir = scratch("bench");
        let root = dir.join("ws");
        fs::create_dir_all(root.join("bench/data")).expect("mkdir");
        fs::write(root.join("bench/nvml_floor.c"), "int main;").expect("write");
        fs::write(root.join("bench/run_it.sh"), "true").expect("write");
        fs::create_dir_all(root.join("bench/diag")).expect("mkdir");
        fs::write(root.join("bench/diag/rounds.sh"), "rounds").expect("write");
        fs::write(root.join("bench/diag/variants.c"), "int v;").expect("write");
        fs::create_dir_all(dir.join("shared/bench")).expect("mkdir");
        fs::write(dir.join("shared/bench/driver_floor.c"), "floor").expect("write");
        fs::write(dir.join("shared/bench/disk_hit_floor.c"), "disk").expect("write");
        fs::write(dir.join("shared/bench/graph_floor.c"), "graphs").expect("write");
        fs::write(dir.join("shared/bench/nccl_floor.c"), "nccl").expect("write");
        fs::write(dir.join("shared/bench/other_floor.c"), "not listed").expect("write");
        let out = dir.join("out");
        copy_shared_floors(&root, &out).expect("floors copied");
        copy_bench_sources(&root, &out).expect("bench copied");
        assert_eq!(
            list_files(&out),
            Ok(vec![
                ("bench/diag/rounds.sh".to_owned(), 6),
                ("bench/diag/variants.c".to_owned(), 6),
                ("bench/disk_hit_floor.c".to_owned(), 4),
                ("bench/driver_floor.c".to_owned(), 5),
                ("bench/graph_floor.c".to_owned(), 6),
                ("bench/nccl_floor.c".to_owned(), 4),
                ("bench/nvml_floor.c".to_owned(), 9),
                ("bench/run_it.sh".to_owned(), 4)
            ])
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |name: &str| {
                fs::metadata(out.join("bench").join(name))
                    .expect("stat")
                    .permissions()
                    .mode()
            };
            assert_eq!(mode("run_it.sh") & 0o111, 0o111);
            assert_eq!(mode("diag/rounds.sh") & 0o111, 0o111);
            assert_eq!(mode("diag/variants.c") & 0o111, 0);
            assert_eq!(mode("nvml_floor.c") & 0o111, 0);
        }
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn missing_sources_are_not_an_error() {
        let dir = scratch("no-bench");
        let root = dir.join("ws");
        fs::create_dir_all(&root).expect("mkdir");
        let out = dir.join("out");
        copy_shared_floors(&root, &out).expect("a missing floor only warns");
        copy_bench_sources(&root, &out).expect("a missing bench/ is skipped");
        assert!(!out.exists());
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
