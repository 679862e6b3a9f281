//! The benchmark runner, its scripts and the C floors, copied into `bench/` of the bundle; and,
//! with `--lab`, the lab's diagnostic tools into `lab/diag/`.

use std::fs;
use std::path::Path;

use super::files::make_executable;

/// The folders of the repository's `bench/` that travel with the bundle, beside its files (the
/// runner and its scripts): the C floors, this repository's own and the copies of the shared
/// ones (`bench/floors/README.md`).
const BENCH_FOLDERS: &[&str] = &["floors"];

/// The lab's diagnostic tools (C variants, round runners), relative to the workspace root;
/// copied to the same path in the bundle with `--lab`.
pub(super) const LAB_DIAG_DIR: &str = "lab/diag";

/// Copies the repository's `bench/` files and the folders of [`BENCH_FOLDERS`] into `bench/` of
/// the bundle, keeping the executable bit of scripts. Other folders stay behind.
pub(super) fn copy_bench_sources(root: &Path, out: &Path) -> Result<(), String> {
    let src_dir = root.join("bench");
    let Ok(entries) = fs::read_dir(&src_dir) else {
        return Ok(());
    };
    let dir = out.join("bench");
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", src_dir.display()))?;
        let kind = entry
            .file_type()
            .map_err(|e| format!("reading {}: {e}", entry.path().display()))?;
        let name = entry.file_name();
        let dest = dir.join(&name);
        if kind.is_file() {
            copy_file(&entry.path(), &dest)?;
        } else if kind.is_dir() && BENCH_FOLDERS.iter().any(|folder| name == *folder) {
            copy_tree(&entry.path(), &dest)?;
        }
    }
    Ok(())
}

/// Copies the lab's diagnostic tools ([`LAB_DIAG_DIR`]) to the same path in the bundle; an
/// error when the folder is missing.
pub(super) fn copy_lab_diag(root: &Path, out: &Path) -> Result<(), String> {
    let src_dir = root.join(LAB_DIAG_DIR);
    if !src_dir.is_dir() {
        return Err(format!(
            "--lab: {} is missing (the lab's diagnostic tools)",
            src_dir.display()
        ));
    }
    copy_tree(&src_dir, &out.join(LAB_DIAG_DIR))
}

/// Copies the files under `src_dir` into `dir`, folder by folder, making `*.sh` executable;
/// links are skipped.
fn copy_tree(src_dir: &Path, dir: &Path) -> Result<(), String> {
    let entries =
        fs::read_dir(src_dir).map_err(|e| format!("reading {}: {e}", src_dir.display()))?;
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
        } else if kind.is_file() {
            copy_file(&src, &dest)?;
        }
    }
    Ok(())
}

/// Copies one file, making it executable when it is a `*.sh` script.
fn copy_file(src: &Path, dest: &Path) -> Result<(), String> {
    fs::copy(src, dest).map_err(|e| format!("copying {}: {e}", src.display()))?;
    if src.extension().is_some_and(|ext| ext == "sh") {
        make_executable(dest)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::files::list_files;
    use crate::bundle::testing::scratch;

    #[test]
    fn bench_files_and_floors_are_copied_and_scripts_executable() {
        let dir = scratch("bench");
        let root = dir.join("ws");
        fs::create_dir_all(root.join("bench/floors")).expect("mkdir");
        fs::write(root.join("bench/floors/nvml_floor.c"), "int main;").expect("write");
        fs::write(root.join("bench/floors/build.sh"), "gcc").expect("write");
        fs::write(root.join("bench/run_it.sh"), "true").expect("write");
        fs::write(root.join("bench/compare.py"), "print()").expect("write");
        fs::create_dir_all(root.join("bench/diag")).expect("mkdir");
        fs::write(root.join("bench/diag/rounds.sh"), "rounds").expect("write");
        let out = dir.join("out");
        copy_bench_sources(&root, &out).expect("bench copied");
        assert_eq!(
            list_files(&out),
            Ok(vec![
                ("bench/compare.py".to_owned(), 7),
                ("bench/floors/build.sh".to_owned(), 3),
                ("bench/floors/nvml_floor.c".to_owned(), 9),
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
            assert_eq!(mode("floors/build.sh") & 0o111, 0o111);
            assert_eq!(mode("floors/nvml_floor.c") & 0o111, 0);
        }
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_missing_bench_folder_copies_nothing() {
        let dir = scratch("no-bench");
        let root = dir.join("ws");
        fs::create_dir_all(&root).expect("mkdir");
        let out = dir.join("out");
        copy_bench_sources(&root, &out).expect("a missing bench/ is skipped");
        assert!(!out.exists());
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn the_lab_diagnostics_are_copied_or_their_absence_is_an_error() {
        let dir = scratch("lab-diag");
        let root = dir.join("ws");
        fs::create_dir_all(&root).expect("mkdir");
        let out = dir.join("out");
        assert!(copy_lab_diag(&root, &out).is_err_and(|e| e.contains("lab/diag")));
        fs::create_dir_all(root.join("lab/diag")).expect("mkdir");
        fs::write(root.join("lab/diag/rounds.sh"), "rounds").expect("write");
        fs::write(root.join("lab/diag/variants.c"), "int v;").expect("write");
        copy_lab_diag(&root, &out).expect("copied");
        assert_eq!(
            list_files(&out),
            Ok(vec![
                ("lab/diag/rounds.sh".to_owned(), 6),
                ("lab/diag/variants.c".to_owned(), 6)
            ])
        );
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
