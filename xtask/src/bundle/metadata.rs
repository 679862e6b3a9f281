//! The workspace's packages, as `cargo metadata` describes them.

use serde_json::Value;

use super::cargo::target_has_kind;

/// What the bundle needs to know of one workspace package.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Package {
    /// The package's name.
    pub(super) name: String,
    /// The names of its features.
    pub(super) features: Vec<String>,
    /// Whether it has example targets.
    pub(super) has_examples: bool,
    /// Whether it has bench targets.
    pub(super) has_benches: bool,
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
            let has_kind = |wanted: &str| {
                package["targets"].as_array().is_some_and(|targets| {
                    targets.iter().any(|target| target_has_kind(target, wanted))
                })
            };
            let features = package["features"]
                .as_object()
                .map(|features| features.keys().cloned().collect())
                .unwrap_or_default();
            Ok(Package {
                name: name.to_owned(),
                features,
                has_examples: has_kind("example"),
                has_benches: has_kind("bench"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::testing::package;

    #[test]
    fn metadata_is_read() {
        let json = r#"{"packages":[
            {"name":"cuda-sys","features":{"cuda-12":[],"cuda-13":[],"default":["cuda-12"]},
             "targets":[{"kind":["lib"],"name":"cuda_sys"},{"kind":["example"],"name":"driver_info"}]},
            {"name":"cuda-safe","features":{"cuda-12":[],"cuda-13":[],"default":["cuda-12"]},
             "targets":[{"kind":["lib"],"name":"cuda_safe"},{"kind":["bench"],"name":"launch"}]},
            {"name":"xtask","features":{},"targets":[{"kind":["bin"],"name":"xtask"}]}
        ],"workspace_members":[]}"#;
        let packages = parse_metadata(json).expect("valid metadata");
        assert_eq!(
            packages,
            vec![
                package("cuda-sys", true, false),
                package("cuda-safe", false, true),
                Package {
                    name: "xtask".to_owned(),
                    features: vec![],
                    has_examples: false,
                    has_benches: false,
                },
            ]
        );
        assert!(parse_metadata("{}").is_err());
        assert!(parse_metadata("not json").is_err());
    }
}
