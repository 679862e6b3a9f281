//! What the bundle builds: the ABIs, and for each one cargo command whose targets are the GPU
//! tests, every package's examples and benchmarks, the interop library, and with `--lab` the
//! lab's diagnostics.

use std::path::Path;

use super::args::Args;
use super::metadata::{Package, Target};

/// The package whose test binary is the GPU integration tests.
pub(super) const TESTS_PACKAGE: &str = "cuda-gpu-tests";

/// The GPU integration tests' binary: its modules are the files of `tests/tests/`, and each
/// file is an item of its own (`abi/tests/FILE`).
pub(super) const GPU_TESTS: &str = "gpu";

/// The DLPack interop proof, whose `cdylib` is built for each ABI into `<abi>/lib/`.
pub(super) const INTEROP_PACKAGE: &str = "cuda-safe-interop";

/// The lab (`lab/`): diagnostics, never published; its benchmarks are bundled with `--lab`
/// only.
pub(super) const LAB_PACKAGE: &str = "cuda-safe-lab";

/// How a diagnostic benchmark's name starts, in any package: it takes arguments, so neither
/// `run.sh` nor `bench/run_benchmarks.sh` runs it, and the bundle builds it with `--lab` only.
pub(super) const DIAGNOSTIC_PREFIX: &str = "diag_";

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
/// (the `nccl` GPU tests and the `allreduce` examples), cuBLAS, cuBLASLt, cuRAND and cuFFT
/// (the `blas`, `rand` and `fft` GPU tests, the `blas` and `fft` benchmarks, the first of which
/// needs `half` too, and the `fft_spectrum` example), cuSOLVER (the `solver` GPU tests and
/// benchmark), cuSPARSE (the `sparse` GPU tests and benchmark, the `sparse_laplacian`
/// example), cuDNN (the `dnn` GPU tests and benchmark) and the cudarc bridge's GPU tests.
pub(super) const OPTIONAL_FEATURES: &[&str] = &[
    "nccl", "blas", "rand", "fft", "solver", "sparse", "dnn", "half", "cudarc",
];

/// The kinds of executable targets bundled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Test binaries.
    Test,
    /// Examples.
    Example,
    /// Benchmarks.
    Bench,
}

impl Kind {
    /// The kind's name in `cargo metadata` and in cargo's messages.
    pub(super) fn metadata_name(self) -> &'static str {
        match self {
            Kind::Test => "test",
            Kind::Example => "example",
            Kind::Bench => "bench",
        }
    }

    /// The flag that selects one target of this kind by name.
    fn one_target(self) -> &'static str {
        match self {
            Kind::Test => "--test",
            Kind::Example => "--example",
            Kind::Bench => "--bench",
        }
    }
}

/// One executable the bundle keeps: a target of a package and its folder under the ABI's.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Item<'a> {
    /// The package the target belongs to.
    pub(super) package: &'a Package,
    /// The target.
    pub(super) target: &'a Target,
    /// Its folder under `<abi>/`: `tests`, `examples` or `benches`.
    pub(super) dir: &'static str,
    /// For the GPU tests' binary, the test files kept (each an item of `run.sh`); empty for
    /// every other executable.
    pub(super) files: Vec<String>,
}

/// What one ABI's cargo command builds: its packages, its features and the executables kept.
#[derive(Debug)]
pub(super) struct Build<'a> {
    /// The ABI.
    pub(super) abi: &'a Abi,
    /// The packages cargo is given (`-p`): those of the items, and the interop proof's.
    pub(super) packages: Vec<&'a Package>,
    /// The executables kept.
    pub(super) items: Vec<Item<'a>>,
}

impl Build<'_> {
    /// The arguments of the one cargo command that builds everything of this ABI in `profile`:
    /// the ABI's features, the optional ones some package has, every package, their
    /// libraries (the interop proof's `cdylib`) and each kept target by name (never
    /// `--benches`, which also builds each library's unit tests as a benchmark).
    pub(super) fn cargo_args(&self, profile: &str) -> Vec<String> {
        let mut args: Vec<String> = ["build", "--profile", profile]
            .into_iter()
            .chain(self.abi.cargo_args.iter().copied())
            .map(str::to_owned)
            .collect();
        for feature in OPTIONAL_FEATURES {
            if self
                .packages
                .iter()
                .any(|package| package.has_feature(feature))
            {
                args.extend(["--features".to_owned(), (*feature).to_owned()]);
            }
        }
        for package in &self.packages {
            args.extend(["-p".to_owned(), package.name.clone()]);
        }
        args.push("--lib".to_owned());
        for item in &self.items {
            args.push(item.target.kind.one_target().to_owned());
            args.push(item.target.name.clone());
        }
        args.push("--message-format=json-render-diagnostics".to_owned());
        args
    }
}

/// The test files of the GPU tests' binary in the workspace at `root`, sorted: each
/// `tests/tests/NAME.rs` but `main.rs`, and each `tests/tests/NAME/` with a `mod.rs` (the
/// `cuda-gpu-tests` crate checks that `main.rs` declares every one).
pub(super) fn test_files(root: &Path) -> Result<Vec<String>, String> {
    let dir = root.join("tests").join("tests");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("reading {}: {e}", dir.display()))?
            .path();
        let Some(stem) = path.file_stem().and_then(|stem| stem.to_str()) else {
            continue;
        };
        let is_file = path.extension().is_some_and(|ext| ext == "rs") && stem != "main";
        if is_file || path.join("mod.rs").is_file() {
            files.push(stem.to_owned());
        }
    }
    files.sort();
    Ok(files)
}

/// Chooses what `abi`'s command builds: the tests package's tests, every package's examples
/// and benches (the diagnostics, the lab's benches and `diag_*` ones, only with `--lab`), as
/// far as `selection` keeps them
/// and the build has the features they require, and the interop proof. Every package chosen
/// must have a feature for each ABI.
pub(super) fn plan_build<'a>(
    abi: &'a Abi,
    packages: &'a [Package],
    selection: &Args,
    test_files: &[String],
) -> Result<Build<'a>, String> {
    let find = |name: &str, why: &str| {
        packages
            .iter()
            .find(|package| package.name == name)
            .ok_or_else(|| {
                format!("package `{name}` is not in the workspace (`members` in Cargo.toml){why}")
            })
    };
    let tests = find(TESTS_PACKAGE, "")?;
    let interop = find(INTEROP_PACKAGE, "")?;
    let lab = if selection.lab {
        Some(find(
            LAB_PACKAGE,
            "; `--lab` builds its benchmarks (the diagnostics of `lab/`)",
        )?)
    } else {
        None
    };
    let mut items = Vec::new();
    for target in tests.targets.iter().filter(|t| t.kind == Kind::Test) {
        items.push(item(abi, tests, target, "tests", selection, test_files));
    }
    for (kind, dir) in [(Kind::Example, "examples"), (Kind::Bench, "benches")] {
        for package in packages
            .iter()
            .filter(|package| package.name != LAB_PACKAGE)
        {
            for target in package.targets.iter().filter(|t| t.kind == kind) {
                let diagnostic = kind == Kind::Bench && target.name.starts_with(DIAGNOSTIC_PREFIX);
                if selection.lab || !diagnostic {
                    items.push(item(abi, package, target, dir, selection, test_files));
                }
            }
        }
    }
    if let Some(lab) = lab {
        for target in lab.targets.iter().filter(|t| t.kind == Kind::Bench) {
            items.push(item(abi, lab, target, "benches", selection, test_files));
        }
    }
    let items: Vec<Item> = items
        .into_iter()
        .flatten()
        .filter(|item| has_required_features(abi, item))
        .collect();

    let mut chosen: Vec<&Package> = Vec::new();
    for package in items.iter().map(|item| item.package).chain([interop]) {
        if !chosen.iter().any(|known| known.name == package.name) {
            chosen.push(package);
        }
    }
    for package in &chosen {
        if let Some(missing) = ABIS.iter().find(|abi| !package.has_feature(abi.name)) {
            return Err(format!(
                "package `{}` has no `{}` feature; the bundle builds it for every ABI",
                package.name, missing.name
            ));
        }
    }
    Ok(Build {
        abi,
        packages: chosen,
        items,
    })
}

/// The item `target` of `package` becomes in `dir`, if `selection` keeps it: by its name, or
/// for the GPU tests' binary by any of its test files (then only those are kept).
fn item<'a>(
    abi: &Abi,
    package: &'a Package,
    target: &'a Target,
    dir: &'static str,
    selection: &Args,
    test_files: &[String],
) -> Option<Item<'a>> {
    let label = |name: &str| format!("{}/{dir}/{name}", abi.name);
    let whole = selection.keeps(&label(&target.name));
    let files: Vec<String> = if dir == "tests" && target.name == GPU_TESTS {
        test_files
            .iter()
            .filter(|file| whole || selection.keeps(&label(file)))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    (whole || !files.is_empty()).then_some(Item {
        package,
        target,
        dir,
        files,
    })
}

/// Whether the build of `abi` turns on every feature `item` requires: the ABI's, and the
/// optional ones its package has.
fn has_required_features(abi: &Abi, item: &Item) -> bool {
    item.target.required_features.iter().all(|feature| {
        feature == abi.name
            || (OPTIONAL_FEATURES.contains(&feature.as_str()) && item.package.has_feature(feature))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::testing::{package, scratch, strings};

    fn only(filters: &[&str]) -> Args {
        Args {
            only: strings(filters),
            ..Args::default()
        }
    }

    /// A workspace: the GPU tests (with `nccl`), cuda-safe's examples and benches (one needing
    /// `nccl`, one `half`), the interop proof and the lab.
    fn workspace() -> Vec<Package> {
        let mut tests = package(TESTS_PACKAGE, &[(Kind::Test, GPU_TESTS)]);
        tests.features.push("nccl".to_owned());
        let mut safe = package(
            "cuda-safe",
            &[
                (Kind::Example, "saxpy"),
                (Kind::Example, "allreduce"),
                (Kind::Example, "half_math"),
                (Kind::Bench, "launch"),
                (Kind::Bench, "launch_threads"),
                (Kind::Bench, "diag_launch_threads"),
            ],
        );
        safe.features.push("nccl".to_owned());
        safe.targets[1].required_features = strings(&["nccl"]);
        safe.targets[2].required_features = strings(&["half"]);
        vec![
            package("cuda-sys", &[]),
            tests,
            safe,
            package(INTEROP_PACKAGE, &[]),
            package(LAB_PACKAGE, &[(Kind::Bench, "diag_green")]),
        ]
    }

    fn files() -> Vec<String> {
        strings(&["cache", "graph", "green", "launch"])
    }

    /// The items as `dir/name`, the GPU tests' with their files.
    fn items(build: &Build) -> Vec<String> {
        build
            .items
            .iter()
            .map(|item| match item.files.as_slice() {
                [] => format!("{}/{}", item.dir, item.target.name),
                files => format!("{}/{}{files:?}", item.dir, item.target.name),
            })
            .collect()
    }

    fn packages(build: &Build) -> Vec<String> {
        build.packages.iter().map(|p| p.name.clone()).collect()
    }

    #[test]
    fn without_filters_everything_but_the_lab_is_built_in_one_command() {
        let packages_ = workspace();
        let build = plan_build(&ABIS[1], &packages_, &Args::default(), &files()).unwrap();
        assert_eq!(
            items(&build),
            [
                r#"tests/gpu["cache", "graph", "green", "launch"]"#,
                "examples/saxpy",
                "examples/allreduce",
                "benches/launch",
                "benches/launch_threads",
            ]
        );
        assert_eq!(
            packages(&build),
            [TESTS_PACKAGE, "cuda-safe", INTEROP_PACKAGE]
        );
        assert_eq!(
            build.cargo_args("bundle").join(" "),
            "build --profile bundle --no-default-features --features cuda-13 --features nccl \
             -p cuda-gpu-tests -p cuda-safe -p cuda-safe-interop --lib --test gpu \
             --example saxpy --example allreduce --bench launch --bench launch_threads \
             --message-format=json-render-diagnostics"
        );
    }

    #[test]
    fn filters_keep_test_files_and_targets_by_their_items() {
        let packages_ = workspace();
        let selection = only(&["tests/gr", "cuda-13/benches/launch_"]);
        let build = plan_build(&ABIS[0], &packages_, &selection, &files()).unwrap();
        assert_eq!(items(&build), [r#"tests/gpu["graph", "green"]"#]);
        let build = plan_build(&ABIS[1], &packages_, &selection, &files()).unwrap();
        assert_eq!(
            items(&build),
            [r#"tests/gpu["graph", "green"]"#, "benches/launch_threads"]
        );
        // `launch` is a test file, an example's prefix and two benches.
        let build = plan_build(&ABIS[0], &packages_, &only(&["launch"]), &files()).unwrap();
        assert_eq!(
            items(&build),
            [
                r#"tests/gpu["launch"]"#,
                "benches/launch",
                "benches/launch_threads"
            ]
        );
        // The binary by its own name keeps every file.
        let build = plan_build(&ABIS[0], &packages_, &only(&["tests/gpu"]), &files()).unwrap();
        assert_eq!(
            items(&build),
            [r#"tests/gpu["cache", "graph", "green", "launch"]"#]
        );
        // Nothing kept: the interop proof alone.
        let build = plan_build(&ABIS[0], &packages_, &only(&["nothing"]), &files()).unwrap();
        assert!(build.items.is_empty());
        assert_eq!(packages(&build), [INTEROP_PACKAGE]);
        assert_eq!(
            build.cargo_args("bundle").join(" "),
            "build --profile bundle -p cuda-safe-interop --lib \
             --message-format=json-render-diagnostics"
        );
    }

    #[test]
    fn lab_adds_the_lab_benches_and_needs_the_lab_package() {
        let packages_ = workspace();
        let lab = Args {
            lab: true,
            ..Args::default()
        };
        let build = plan_build(&ABIS[0], &packages_, &lab, &files()).unwrap();
        assert_eq!(
            items(&build)[3..],
            [
                "benches/launch",
                "benches/launch_threads",
                "benches/diag_launch_threads",
                "benches/diag_green"
            ]
        );
        assert!(packages(&build).contains(&LAB_PACKAGE.to_owned()));
        let lab_only = Args {
            only: strings(&["diag_"]),
            lab: true,
            ..Args::default()
        };
        let build = plan_build(&ABIS[0], &packages_, &lab_only, &files()).unwrap();
        assert_eq!(
            items(&build),
            ["benches/diag_launch_threads", "benches/diag_green"]
        );
        // Without `--lab`, a diagnostic is never built, even when a filter names it.
        let build = plan_build(&ABIS[0], &packages_, &only(&["diag_"]), &files()).unwrap();
        assert!(build.items.is_empty());

        let without_lab: Vec<Package> = workspace()
            .into_iter()
            .filter(|package| package.name != LAB_PACKAGE)
            .collect();
        assert!(
            plan_build(&ABIS[0], &without_lab, &lab, &files())
                .is_err_and(|e| e.contains("`cuda-safe-lab`") && e.contains("--lab"))
        );
        assert!(plan_build(&ABIS[0], &without_lab, &Args::default(), &files()).is_ok());
    }

    #[test]
    fn a_target_whose_features_the_build_lacks_is_left_out() {
        let mut packages_ = workspace();
        packages_[2].features.retain(|feature| feature != "nccl");
        let build = plan_build(&ABIS[0], &packages_, &only(&["examples/"]), &files()).unwrap();
        assert_eq!(items(&build), ["examples/saxpy"]);
        assert_eq!(
            build.cargo_args("bundle").join(" "),
            "build --profile bundle -p cuda-safe -p cuda-safe-interop --lib --example saxpy \
             --message-format=json-render-diagnostics"
        );
    }

    #[test]
    fn plan_needs_the_tests_and_interop_packages_and_the_abi_features() {
        let no_tests: Vec<Package> = workspace()
            .into_iter()
            .filter(|package| package.name != TESTS_PACKAGE)
            .collect();
        assert!(
            plan_build(&ABIS[0], &no_tests, &Args::default(), &files())
                .is_err_and(|e| e.contains(TESTS_PACKAGE))
        );
        let mut no_feature = workspace();
        no_feature[2].features = strings(&["cuda-12", "nccl"]);
        assert!(
            plan_build(&ABIS[0], &no_feature, &Args::default(), &files())
                .is_err_and(|e| e.contains("`cuda-safe`") && e.contains("`cuda-13`"))
        );
    }

    #[test]
    fn test_files_are_the_modules_of_tests_tests() {
        let dir = scratch("test-files");
        let tests = dir.join("tests/tests");
        std::fs::create_dir_all(tests.join("graph")).expect("mkdir");
        std::fs::create_dir_all(tests.join("data")).expect("mkdir");
        for file in ["main.rs", "cache.rs", "vmm.rs", "graph/mod.rs", "notes.txt"] {
            std::fs::write(tests.join(file), "").expect("write");
        }
        assert_eq!(test_files(&dir), Ok(strings(&["cache", "graph", "vmm"])));
        assert!(test_files(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
