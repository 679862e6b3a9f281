//! The bundle folder on disk: emptying it, writing executables, listing what it holds.

use std::fs;
use std::path::Path;

/// Empties the bundle folder, refusing to delete a folder that is not an earlier bundle.
pub(super) fn prepare_out(out: &Path) -> Result<(), String> {
    if out.exists() {
        let is_bundle = out.join("run.sh").is_file() || out.join("MANIFEST.txt").is_file();
        let is_empty = fs::read_dir(out)
            .map_err(|e| format!("reading {}: {e}", out.display()))?
            .next()
            .is_none();
        if !is_bundle && !is_empty {
            return Err(format!(
                "refusing to delete {}: it is not an earlier bundle (no run.sh nor MANIFEST.txt)",
                out.display()
            ));
        }
        fs::remove_dir_all(out).map_err(|e| format!("removing {}: {e}", out.display()))?;
    }
    fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))
}

/// Writes `bytes` to `path` and makes it executable.
pub(super) fn write_executable(path: &Path, bytes: &[u8]) -> Result<(), String> {
    fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    make_executable(path)
}

/// Sets mode 0755 on `path` (a no-op where there are no Unix permissions).
pub(super) fn make_executable(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("making {} executable: {e}", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Every file under `dir`, as a `/`-separated path relative to it and its size, sorted.
pub(super) fn list_files(dir: &Path) -> Result<Vec<(String, u64)>, String> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries =
            fs::read_dir(&current).map_err(|e| format!("reading {}: {e}", current.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("reading {}: {e}", current.display()))?;
            let path = entry.path();
            let meta = entry
                .metadata()
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            if meta.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap_or(&path);
                let name = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                files.push((name, meta.len()));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `bytes` as mebibytes with one decimal.
pub(super) fn mib(bytes: u64) -> String {
    // Sizes here are far below 2^52 bytes, so the conversion is exact enough.
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::script::RUN_SH;
    use crate::bundle::testing::scratch;

    #[test]
    fn out_folder_is_emptied_only_when_it_is_a_bundle() {
        let dir = scratch("prepare");
        let foreign = dir.join("foreign");
        fs::create_dir_all(&foreign).expect("mkdir");
        fs::write(foreign.join("precious.txt"), "keep").expect("write");
        assert!(prepare_out(&foreign).is_err_and(|e| e.contains("refusing")));
        assert!(foreign.join("precious.txt").is_file());

        let bundle = dir.join("bundle");
        fs::create_dir_all(bundle.join("cuda-12/tests")).expect("mkdir");
        write_executable(&bundle.join("run.sh"), RUN_SH.as_bytes()).expect("write");
        fs::write(bundle.join("cuda-12/tests/old"), "old").expect("write");
        prepare_out(&bundle).expect("an earlier bundle is emptied");
        assert_eq!(list_files(&bundle), Ok(vec![]));

        let fresh = dir.join("fresh");
        prepare_out(&fresh).expect("a missing folder is created");
        assert!(fresh.is_dir());
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn files_are_listed_relative_and_sorted() {
        let dir = scratch("list");
        fs::create_dir_all(dir.join("cuda-13/examples")).expect("mkdir");
        fs::write(dir.join("cuda-13/examples/driver_info"), "12345").expect("write");
        fs::write(dir.join("run.sh"), "ab").expect("write");
        assert_eq!(
            list_files(&dir),
            Ok(vec![
                ("cuda-13/examples/driver_info".to_owned(), 5),
                ("run.sh".to_owned(), 2)
            ])
        );
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
