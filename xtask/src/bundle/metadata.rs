//! The workspace's packages, as `cargo metadata` describes them.

use std::path::PathBuf;

use serde_json::Value;

use super::cargo::target_has_kind;
use super::plan::Kind;

/// What the bundle needs to know of one workspace package.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Package {
    /// The package's name.
    pub(super) name: String,
    /// Its `Cargo.toml`, which cargo's messages name for each artifact.
    pub(super) manifest_path: PathBuf,
    /// The names of its features.
    pub(super) features: Vec<String>,
    /// Its test, example and bench targets.
    pub(super) targets: Vec<Target>,
}

/// One test, example or bench target of a package.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Target {
    /// The target's name.
    pub(super) name: String,
    /// Test, example or bench.
    pub(super) kind: Kind,
    /// The features it needs (`required-features`): without them cargo does not build it.
    pub(super) required_features: Vec<String>,
}

impl Package {
    /// Whether it declares `feature`.
    pub(super) fn has_feature(&self, feature: &str) -> bool {
        self.features.iter().any(|declared| declared == feature)
    }
}

/// Reads the workspace's packages from `cargo metadata --no-deps --format-version 1` output.
pub(super) fn parse_metadata(json: &str) -> Result<Vec<Package>, String> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| format!("reading cargo metadata: {e}"))?;
    let packages = value["packages"]
        .as_array()
        .ok_or("reading cargo metadata: no `packages` list")?;
    packages
        .iter()
        .map(|package| {
            let name = package["name"]
                .as_str()
                .ok_or("reading cargo metadata: a package without a name")?;
            let manifest_path = package["manifest_path"]
                .as_str()
                .ok_or_else(|| format!("reading cargo metadata: `{name}` has no manifest path"))?;
            let features = package["features"]
                .as_object()
                .map(|features| features.keys().cloned().collect())
                .unwrap_or_default();
            let targets = package["targets"]
                .as_array()
                .map(|targets| targets.iter().filter_map(parse_target).collect())
                .unwrap_or_default();
            Ok(Package {
                name: name.to_owned(),
                manifest_path: PathBuf::from(manifest_path),
                features,
                targets,
            })
        })
        .collect()
}

/// A test, example or bench target of `cargo metadata`'s (others are `None`).
fn parse_target(target: &Value) -> Option<Target> {
    let kind = [Kind::Test, Kind::Example, Kind::Bench]
        .into_iter()
        .find(|kind| target_has_kind(target, kind.metadata_name()))?;
    let required_features = target["required-features"]
        .as_array()
        .map(|features| {
            features
                .iter()
                .filter_map(|feature| feature.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Some(Target {
        name: target["name"].as_str()?.to_owned(),
        kind,
        required_features,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::testing::{package, strings};

    #[test]
    fn metadata_is_read() {
        let json = r#"{"packages":[
            {"name":"cuda-sys","manifest_path":"/ws/cuda-sys/Cargo.toml","features":{"cuda-12":[],"cuda-13":[],"default":["cuda-12"]},
             "targets":[{"kind":["lib"],"name":"cuda_sys"},{"kind":["example"],"name":"driver_info"}]},
            {"name":"cuda-safe","manifest_path":"/ws/cuda-safe/Cargo.toml","features":{"cuda-12":[],"cuda-13":[],"default":["cuda-12"]},
             "targets":[{"kind":["lib"],"name":"cuda_safe"},{"kind":["bench"],"name":"launch"}]},
            {"name":"gpu-tests","manifest_path":"/ws/gpu-tests/Cargo.toml","features":{"nccl":[]},
             "targets":[{"kind":["test"],"name":"nccl","required-features":["nccl"]},
                        {"kind":["test"],"name":"green"}]},
            {"name":"xtask","manifest_path":"/ws/xtask/Cargo.toml","features":{},"targets":[{"kind":["bin"],"name":"xtask"}]}
        ],"workspace_members":[]}"#;
        let packages = parse_metadata(json).expect("valid metadata");
        assert_eq!(
            packages,
            vec![
                package("cuda-sys", &[(Kind::Example, "driver_info")]),
                package("cuda-safe", &[(Kind::Bench, "launch")]),
                Package {
                    name: "gpu-tests".to_owned(),
                    manifest_path: PathBuf::from("/ws/gpu-tests/Cargo.toml"),
                    features: strings(&["nccl"]),
                    targets: vec![
                        Target {
                            name: "nccl".to_owned(),
                            kind: Kind::Test,
                            required_features: strings(&["nccl"]),
                        },
                        Target {
                            name: "green".to_owned(),
                            kind: Kind::Test,
                            required_features: vec![],
                        },
                    ],
                },
                Package {
                    name: "xtask".to_owned(),
                    manifest_path: PathBuf::from("/ws/xtask/Cargo.toml"),
                    features: vec![],
                    targets: vec![],
                },
            ]
        );
        assert!(parse_metadata("{}").is_err());
        assert!(parse_metadata(r#"{"packages":[{"name":"x"}]}"#).is_err());
        assert!(parse_metadata("not json").is_err());
    }
}
