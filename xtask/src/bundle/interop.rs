//! The DLPack interop proof's scripts (its library is built with the rest of each ABI:
//! `executables`).

use std::fs;
use std::path::Path;

use super::files::make_executable;

/// The interop proof's scripts (`*.py`, `*.sh`), relative to the workspace root; copied to
/// `interop/` of the bundle.
const INTEROP_SCRIPTS: &str = "interop/python";

/// Copies the interop proof's Python and shell scripts into `interop/` of the bundle, keeping
/// shell scripts executable.
pub(super) fn copy_interop_scripts(root: &Path, out: &Path) -> Result<(), String> {
    let src_dir = root.join(INTEROP_SCRIPTS);
    let entries =
        fs::read_dir(&src_dir).map_err(|e| format!("reading {}: {e}", src_dir.display()))?;
    let dir = out.join("interop");
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", src_dir.display()))?;
        let src = entry.path();
        let script = src
            .extension()
            .is_some_and(|ext| ext == "py" || ext == "sh");
        if !src.is_file() || !script {
            continue;
        }
        let dest = dir.join(entry.file_name());
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
    fn interop_scripts_are_copied_and_executable() {
        let dir = scratch("interop");
        let src = dir.join("src");
        fs::create_dir_all(src.join(INTEROP_SCRIPTS)).expect("mkdir");
        fs::write(src.join(INTEROP_SCRIPTS).join("run.py"), "print()").expect("write");
        fs::write(src.join(INTEROP_SCRIPTS).join("run_it.sh"), "true").expect("write");
        fs::write(src.join(INTEROP_SCRIPTS).join("notes.txt"), "skip").expect("write");
        let out = dir.join("out");
        copy_interop_scripts(&src, &out).expect("copied");
        assert_eq!(
            list_files(&out),
            Ok(vec![
                ("interop/run.py".to_owned(), 7),
                ("interop/run_it.sh".to_owned(), 4)
            ])
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(out.join("interop/run_it.sh"))
                .expect("stat")
                .permissions();
            assert_eq!(mode.mode() & 0o111, 0o111);
        }
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
