//! Building one kind of executables of one package and copying them into the bundle.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::PROFILE;
use super::args::Args;
use super::cargo::{parse_artifact, run_cargo};
use super::files::{make_executable, mib};
use super::metadata::Package;
use super::plan::{Abi, Kind, OPTIONAL_FEATURES, optional_feature_args};

/// The cargo arguments that choose what of `kind` in `package` to build for `abi`: every
/// target of the kind when `selection` keeps everything, else only the targets it keeps by
/// name (and whose required features the build turns on: the ABI's and the optional ones the
/// package has), so that `--only` does not build what it would leave out. `None` when nothing
/// is kept.
pub(super) fn target_args(
    abi: &Abi,
    kind: Kind,
    package: &Package,
    selection: &Args,
) -> Option<Vec<String>> {
    if selection.only.is_empty() {
        return Some(
            kind.every_target()
                .iter()
                .map(|&arg| arg.to_owned())
                .collect(),
        );
    }
    let enabled = |feature: &String| {
        feature == abi.name
            || (OPTIONAL_FEATURES.contains(&feature.as_str()) && package.features.contains(feature))
    };
    let args: Vec<String> = package
        .targets
        .iter()
        .filter(|target| target.kind == kind)
        .filter(|target| selection.keeps(&format!("{}/{}/{}", abi.name, kind.dir(), target.name)))
        .filter(|target| target.required_features.iter().all(enabled))
        .flat_map(|target| [kind.one_target().to_owned(), target.name.clone()])
        .collect();
    (!args.is_empty()).then_some(args)
}

/// Builds `kind` of `package` for `abi` and copies each executable `selection` keeps into the
/// bundle; `copied` maps each bundle path written so far to its source, to catch clashing names.
pub(super) fn build_and_copy(
    root: &Path,
    cargo: &str,
    abi: &Abi,
    (kind, package): (Kind, &Package),
    out: &Path,
    selection: &Args,
    copied: &mut BTreeMap<PathBuf, PathBuf>,
) -> Result<(), String> {
    let Some(targets) = target_args(abi, kind, package, selection) else {
        return Ok(());
    };
    let mut args: Vec<&str> = kind.command().to_vec();
    args.extend(targets.iter().map(String::as_str));
    args.extend(["--profile", PROFILE, "-p", &package.name]);
    args.extend(abi.cargo_args);
    args.extend(optional_feature_args(package));
    args.push("--message-format=json-render-diagnostics");
    let lines = run_cargo(root, cargo, &args)?;

    let dir = out.join(abi.name).join(kind.dir());
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for artifact in lines.iter().filter_map(|line| parse_artifact(line, kind)) {
        if !selection.keeps(&format!("{}/{}/{}", abi.name, kind.dir(), artifact.name)) {
            continue;
        }
        let dest = dir.join(&artifact.name);
        if let Some(earlier) = copied.get(&dest) {
            if *earlier == artifact.executable {
                continue;
            }
            return Err(format!(
                "two executables would be {}: {} and {}",
                dest.display(),
                earlier.display(),
                artifact.executable.display()
            ));
        }
        let size = fs::copy(&artifact.executable, &dest).map_err(|e| {
            format!(
                "copying {} to {}: {e}",
                artifact.executable.display(),
                dest.display()
            )
        })?;
        make_executable(&dest)?;
        println!(
            "gpu-bundle: {}/{}/{} ({})",
            abi.name,
            kind.dir(),
            artifact.name,
            mib(size)
        );
        copied.insert(dest, artifact.executable);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::metadata::Target;
    use crate::bundle::plan::ABIS;
    use crate::bundle::testing::{package, strings};

    fn only(filters: &[&str]) -> Args {
        Args {
            only: strings(filters),
            ..Args::default()
        }
    }

    fn tests_package() -> Package {
        let mut tests = package("gpu-tests", &[(Kind::Test, "green"), (Kind::Test, "graph")]);
        tests.features.push("nccl".to_owned());
        tests.targets.push(Target {
            name: "nccl".to_owned(),
            kind: Kind::Test,
            required_features: strings(&["nccl"]),
        });
        tests.targets.push(Target {
            name: "half_math".to_owned(),
            kind: Kind::Test,
            required_features: strings(&["half"]),
        });
        tests
    }

    #[test]
    fn without_filters_every_target_of_the_kind_is_built() {
        let safe = package("cuda-safe", &[(Kind::Example, "saxpy")]);
        let everything = Args::default();
        assert_eq!(
            target_args(&ABIS[0], Kind::Example, &safe, &everything),
            Some(strings(&["--examples"]))
        );
        assert_eq!(
            target_args(&ABIS[1], Kind::Test, &tests_package(), &everything),
            Some(vec![])
        );
    }

    #[test]
    fn filters_build_only_the_targets_they_keep() {
        let safe = package(
            "cuda-safe",
            &[
                (Kind::Example, "green_isolation"),
                (Kind::Example, "saxpy"),
                (Kind::Bench, "launch_threads"),
                (Kind::Bench, "green_contention"),
            ],
        );
        let selection = only(&["green", "cuda-13/benches/launch"]);
        assert_eq!(
            target_args(&ABIS[0], Kind::Example, &safe, &selection),
            Some(strings(&["--example", "green_isolation"]))
        );
        assert_eq!(
            target_args(&ABIS[0], Kind::Bench, &safe, &selection),
            Some(strings(&["--bench", "green_contention"]))
        );
        assert_eq!(
            target_args(&ABIS[1], Kind::Bench, &safe, &selection),
            Some(strings(&[
                "--bench",
                "launch_threads",
                "--bench",
                "green_contention"
            ]))
        );
        assert_eq!(
            target_args(&ABIS[0], Kind::Test, &tests_package(), &selection),
            Some(strings(&["--test", "green"]))
        );
        assert_eq!(
            target_args(&ABIS[0], Kind::Example, &safe, &only(&["nothing"])),
            None
        );
    }

    #[test]
    fn a_target_whose_features_the_build_lacks_is_left_out() {
        let selection = only(&["tests/"]);
        assert_eq!(
            target_args(&ABIS[0], Kind::Test, &tests_package(), &selection),
            Some(strings(&[
                "--test", "green", "--test", "graph", "--test", "nccl"
            ]))
        );
        let mut no_nccl = tests_package();
        no_nccl.features.retain(|feature| feature != "nccl");
        assert_eq!(
            target_args(&ABIS[0], Kind::Test, &no_nccl, &only(&["nccl"])),
            None
        );
    }
}
