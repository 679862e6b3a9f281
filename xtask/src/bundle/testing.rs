//! Helpers shared by the bundle's tests.

use std::fs;
use std::path::PathBuf;

use super::metadata::{Package, Target};
use super::plan::Kind;

/// The arguments as owned strings, as the task receives them.
pub(super) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// A package with both ABI features and `targets`, whose manifest is `/ws/NAME/Cargo.toml`.
pub(super) fn package(name: &str, targets: &[(Kind, &str)]) -> Package {
    Package {
        name: name.to_owned(),
        manifest_path: PathBuf::from(format!("/ws/{name}/Cargo.toml")),
        features: strings(&["cuda-12", "cuda-13", "default"]),
        targets: targets
            .iter()
            .map(|&(kind, name)| Target {
                name: name.to_owned(),
                kind,
                required_features: Vec::new(),
            })
            .collect(),
    }
}

/// A fresh empty folder under the system's temporary folder.
pub(super) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-bundle-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}
