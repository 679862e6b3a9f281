//! What the bundle builds: the ABIs, the kinds of executables, and which package gives which.

use super::metadata::Package;

/// The package whose test binaries are the GPU integration tests.
pub(super) const TESTS_PACKAGE: &str = "cuda-gpu-tests";

/// One ABI the bundle is built for: its folder, the feature naming it, and cargo's arguments.
#[derive(Debug)]
pub(super) struct Abi {
    /// The bundle's folder for it, also the feature's name.
    pub(super) name: &'static str,
    /// The feature arguments given to cargo.
    pub(super) cargo_args: &'static [&'static str],
}

/// The ABIs built, in the order `run.sh` runs them.
pub(super) const ABIS: [Abi; 2] = [
    Abi {
        name: "cuda-12",
        cargo_args: &[],
    },
    Abi {
        name: "cuda-13",
        cargo_args: &["--no-default-features", "--features", "cuda-13"],
    },
];

/// Optional features the bundle turns on in every package that has them: NCCL's collectives
/// (the `nccl` GPU tests and the `allreduce` examples).
pub(super) const OPTIONAL_FEATURES: &[&str] = &["nccl"];

/// The `--features` arguments of [`OPTIONAL_FEATURES`] that `package` declares.
pub(super) fn optional_feature_args(package: &Package) -> Vec<&'static str> {
    OPTIONAL_FEATURES
        .iter()
        .filter(|wanted| package.features.iter().any(|feature| feature == *wanted))
        .flat_map(|feature| ["--features", feature])
        .collect()
}

/// The kinds of executables bundled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Test binaries (`cargo test --no-run`).
    Test,
    /// Examples (`cargo build --examples`).
    Example,
    /// Benchmarks (`cargo build --benches`).
    Bench,
}

impl Kind {
    /// The bundle's folder for this kind.
    pub(super) fn dir(self) -> &'static str {
        match self {
            Kind::Test => "tests",
            Kind::Example => "examples",
            Kind::Bench => "benches",
        }
    }

    /// The cargo subcommand that builds this kind.
    pub(super) fn command(self) -> &'static [&'static str] {
        match self {
            Kind::Test => &["test", "--no-run"],
            Kind::Example | Kind::Bench => &["build"],
        }
    }

    /// The target selection that builds every target of this kind (a package's tests are all
    /// that `cargo test --no-run` builds).
    pub(super) fn every_target(self) -> &'static [&'static str] {
        match self {
            Kind::Test => &[],
            Kind::Example => &["--examples"],
            Kind::Bench => &["--benches"],
        }
    }

    /// The flag that selects one target of this kind by name.
    pub(super) fn one_target(self) -> &'static str {
        match self {
            Kind::Test => "--test",
            Kind::Example => "--example",
            Kind::Bench => "--bench",
        }
    }

    /// The kind's name in `cargo metadata`.
    pub(super) fn metadata_name(self) -> &'static str {
        match self {
            Kind::Test => "test",
            Kind::Example => "example",
            Kind::Bench => "bench",
        }
    }
}

/// Chooses what to build: the tests package's tests, every package's examples and benches.
/// Every package chosen must have a feature for each ABI.
pub(super) fn plan_builds(packages: &[Package]) -> Result<Vec<(Kind, &Package)>, String> {
    let tests = packages
        .iter()
        .find(|package| package.name == TESTS_PACKAGE)
        .ok_or_else(|| {
            format!("package `{TESTS_PACKAGE}` is not in the workspace (`members` in Cargo.toml)")
        })?;
    let mut plan = vec![(Kind::Test, tests)];
    plan.extend(
        packages
            .iter()
            .filter(|package| package.has(Kind::Example))
            .map(|package| (Kind::Example, package)),
    );
    plan.extend(
        packages
            .iter()
            .filter(|package| package.has(Kind::Bench))
            .map(|package| (Kind::Bench, package)),
    );
    for (kind, package) in &plan {
        if let Some(abi) = ABIS
            .iter()
            .find(|abi| !package.features.iter().any(|feature| feature == abi.name))
        {
            return Err(format!(
                "package `{}` has {} but no `{}` feature; the bundle builds each for every ABI",
                package.name,
                kind.dir(),
                abi.name
            ));
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::testing::{package, strings};

    #[test]
    fn plan_covers_tests_examples_and_benches() {
        let packages = vec![
            package("cuda-sys", &[(Kind::Example, "driver_info")]),
            package(TESTS_PACKAGE, &[]),
            package(
                "cuda-safe",
                &[(Kind::Example, "saxpy"), (Kind::Bench, "launch")],
            ),
        ];
        let plan: Vec<(Kind, &str)> = plan_builds(&packages)
            .expect("a plan")
            .into_iter()
            .map(|(kind, package)| (kind, package.name.as_str()))
            .collect();
        assert_eq!(
            plan,
            vec![
                (Kind::Test, TESTS_PACKAGE),
                (Kind::Example, "cuda-sys"),
                (Kind::Example, "cuda-safe"),
                (Kind::Bench, "cuda-safe"),
            ]
        );
    }

    #[test]
    fn optional_features_are_asked_for_where_declared() {
        let mut with = package(TESTS_PACKAGE, &[]);
        with.features.push("nccl".to_owned());
        assert_eq!(optional_feature_args(&with), ["--features", "nccl"]);
        let without = package("cuda-sys", &[(Kind::Example, "driver_info")]);
        assert!(optional_feature_args(&without).is_empty());
    }

    #[test]
    fn plan_needs_the_tests_package_and_the_abi_features() {
        let no_tests = vec![package("cuda-sys", &[(Kind::Example, "driver_info")])];
        assert!(plan_builds(&no_tests).is_err_and(|e| e.contains(TESTS_PACKAGE)));

        let mut no_feature = package("nvml-sys", &[(Kind::Example, "gpu_info")]);
        no_feature.features = strings(&["cuda-12"]);
        let packages = vec![package(TESTS_PACKAGE, &[]), no_feature];
        assert!(
            plan_builds(&packages)
                .is_err_and(|e| e.contains("`nvml-sys`") && e.contains("`cuda-13`"))
        );
    }
}
