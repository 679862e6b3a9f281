//! Building one ABI's executables in one cargo command and copying them into the bundle.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::PROFILE;
use super::cargo::{Artifact, parse_artifact, run_cargo};
use super::files::{make_executable, mib};
use super::plan::{Build, INTEROP_PACKAGE, Item};

/// Where the bundle puts the files of one build, and what it has put where so far (to catch
/// two executables with one name).
#[derive(Debug)]
pub(super) struct Copies {
    /// The bundle's folder.
    pub(super) out: PathBuf,
    /// Each bundle path written so far and its source.
    pub(super) copied: BTreeMap<PathBuf, PathBuf>,
}

/// Builds everything `build` chooses with one cargo command and copies each executable into
/// `<abi>/<dir>/`, the interop proof's library into `<abi>/lib/`, and the GPU tests' files to
/// run beside their binary (`<abi>/tests/gpu.files`, one name a line).
pub(super) fn build_and_copy(
    root: &Path,
    cargo: &str,
    build: &Build,
    copies: &mut Copies,
) -> Result<(), String> {
    let args = build.cargo_args(PROFILE);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let lines = run_cargo(root, cargo, &args)?;
    let artifacts: Vec<Artifact> = lines
        .iter()
        .filter_map(|line| parse_artifact(line))
        .collect();
    for item in &build.items {
        let artifact = artifacts
            .iter()
            .find(|artifact| is_item(artifact, item))
            .ok_or_else(|| {
                format!(
                    "cargo announced no {} `{}` of `{}`",
                    item.target.kind.metadata_name(),
                    item.target.name,
                    item.package.name
                )
            })?;
        let executable = artifact
            .executable
            .as_deref()
            .ok_or_else(|| format!("cargo announced `{}` without an executable", artifact.name))?;
        let dir = copies.out.join(build.abi.name).join(item.dir);
        copies.copy(executable, &dir, &artifact.name)?;
        if !item.files.is_empty() {
            let list = dir.join(format!("{}.files", artifact.name));
            let text: String = item.files.iter().map(|file| format!("{file}\n")).collect();
            fs::write(&list, text).map_err(|e| format!("writing {}: {e}", list.display()))?;
        }
    }
    let interop = build
        .packages
        .iter()
        .find(|package| package.name == INTEROP_PACKAGE)
        .ok_or_else(|| format!("the build lacks `{INTEROP_PACKAGE}`"))?;
    let library = artifacts
        .iter()
        .filter(|artifact| artifact.manifest_path == interop.manifest_path && artifact.is("cdylib"))
        .find_map(Artifact::shared_library)
        .ok_or_else(|| format!("cargo announced no shared library of `{INTEROP_PACKAGE}`"))?;
    let name = library
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| format!("{} has no file name", library.display()))?;
    copies.copy(library, &copies.out.join(build.abi.name).join("lib"), name)
}

/// Whether `artifact` is the executable of `item`: the same package (by manifest), name and
/// kind.
fn is_item(artifact: &Artifact, item: &Item) -> bool {
    artifact.manifest_path == item.package.manifest_path
        && artifact.name == item.target.name
        && artifact.is(item.target.kind.metadata_name())
}

impl Copies {
    /// Copies `src` to `dir/name`, executable, and prints its bundle path and size; the same
    /// source twice is copied once, two sources for one path are an error.
    fn copy(&mut self, src: &Path, dir: &Path, name: &str) -> Result<(), String> {
        let dest = dir.join(name);
        if let Some(earlier) = self.copied.get(&dest) {
            if earlier == src {
                return Ok(());
            }
            return Err(format!(
                "two files would be {}: {} and {}",
                dest.display(),
                earlier.display(),
                src.display()
            ));
        }
        fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let size = fs::copy(src, &dest)
            .map_err(|e| format!("copying {} to {}: {e}", src.display(), dest.display()))?;
        make_executable(&dest)?;
        let shown = dest.strip_prefix(&self.out).unwrap_or(&dest);
        println!("gpu-bundle: {} ({})", shown.display(), mib(size));
        self.copied.insert(dest, src.to_path_buf());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::files::list_files;
    use crate::bundle::plan::Kind;
    use crate::bundle::testing::{package, scratch};

    #[test]
    fn an_artifact_is_an_item_by_package_name_and_kind() {
        let safe = package(
            "cuda-safe",
            &[(Kind::Bench, "launch"), (Kind::Example, "launch")],
        );
        let item = |index: usize| Item {
            package: &safe,
            target: &safe.targets[index],
            dir: "benches",
            files: Vec::new(),
        };
        let artifact = |manifest: &str, kind: &str| Artifact {
            manifest_path: PathBuf::from(manifest),
            name: "launch".to_owned(),
            kinds: vec![kind.to_owned()],
            executable: Some(PathBuf::from("/ws/target/bundle/deps/launch-1")),
            filenames: Vec::new(),
        };
        assert!(is_item(
            &artifact("/ws/cuda-safe/Cargo.toml", "bench"),
            &item(0)
        ));
        assert!(!is_item(
            &artifact("/ws/cuda-safe/Cargo.toml", "bench"),
            &item(1)
        ));
        assert!(is_item(
            &artifact("/ws/cuda-safe/Cargo.toml", "example"),
            &item(1)
        ));
        assert!(!is_item(
            &artifact("/ws/cuda-lab/Cargo.toml", "bench"),
            &item(0)
        ));
    }

    #[test]
    fn copies_are_executable_and_clashes_are_refused() {
        let dir = scratch("copies");
        let src = dir.join("src");
        fs::create_dir_all(&src).expect("mkdir");
        fs::write(src.join("a"), "12345").expect("write");
        fs::write(src.join("b"), "12").expect("write");
        let mut copies = Copies {
            out: dir.join("out"),
            copied: BTreeMap::new(),
        };
        let benches = copies.out.join("cuda-12/benches");
        copies
            .copy(&src.join("a"), &benches, "launch")
            .expect("copied");
        copies
            .copy(&src.join("a"), &benches, "launch")
            .expect("the same again");
        assert!(
            copies
                .copy(&src.join("b"), &benches, "launch")
                .is_err_and(|e| e.contains("two files would be"))
        );
        assert_eq!(
            list_files(&copies.out),
            Ok(vec![("cuda-12/benches/launch".to_owned(), 5)])
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(benches.join("launch"))
                .expect("stat")
                .permissions();
            assert_eq!(mode.mode() & 0o111, 0o111);
        }
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
