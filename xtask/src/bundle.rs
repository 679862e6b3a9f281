//! `cargo xtask gpu-bundle [--out DIR]`: build the GPU integration tests, the examples and the
//! benchmarks for both CUDA ABIs in the `bundle` profile (release code, symbols stripped), and
//! write a folder that runs them on a GPU machine that has no Rust toolchain:
//!
//! ```text
//! gpu-bundle/
//!   run.sh                                  runs everything, writes run.log and summary.txt
//!   MANIFEST.txt                            git commit, dirty count, every file and its size
//!   bench/driver_floor.c                    the C driver-API floor (from ../shared/bench/)
//!   bench/*.c                               the repository's own C floors (nvml_floor.c, ...)
//!   cuda-12/{tests,examples,benches}/NAME   executables built with the default features
//!   cuda-13/{tests,examples,benches}/NAME   built with --no-default-features --features cuda-13
//!   cuda-{12,13}/lib/libcuda_safe_interop.so  the DLPack interop proof's C ABI library
//!   interop/                                its Python driver and run_interop.sh (not run by run.sh)
//! ```

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The package whose test binaries are the GPU integration tests.
const TESTS_PACKAGE: &str = "cuda-gpu-tests";

/// The cargo profile the bundle is built in (root `Cargo.toml`: release, stripped).
const PROFILE: &str = "bundle";

/// The most the bundle may weigh: the device tool carries at most 64 MiB of ignored files.
const SIZE_LIMIT: u64 = 64 * 1024 * 1024;

/// The `cdylib` of the DLPack interop proof, built for each ABI into `<abi>/lib/`.
const INTEROP_PACKAGE: &str = "cuda-safe-interop";

/// The interop proof's scripts (`*.py`, `*.sh`), relative to the workspace root; copied to
/// `interop/` of the bundle.
const INTEROP_SCRIPTS: &str = "interop/python";

/// The C program that measures the driver-API floor, relative to the workspace root.
const DRIVER_FLOOR_SRC: &str = "../shared/bench/driver_floor.c";

/// The usage line of this task, quoted in argument errors.
const USAGE: &str = "usage: cargo xtask gpu-bundle [--out DIR]";

/// One ABI the bundle is built for: its folder, the feature naming it, and cargo's arguments.
#[derive(Debug)]
struct Abi {
    /// The bundle's folder for it, also the feature's name.
    name: &'static str,
    /// The feature arguments given to cargo.
    cargo_args: &'static [&'static str],
}

/// The ABIs built, in the order `run.sh` runs them.
const ABIS: [Abi; 2] = [
    Abi {
        name: "cuda-12",
        cargo_args: &[],
    },
    Abi {
        name: "cuda-13",
        cargo_args: &["--no-default-features", "--features", "cuda-13"],
    },
];

/// The kinds of executables bundled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Test binaries (`cargo test --no-run`).
    Test,
    /// Examples (`cargo build --examples`).
    Example,
    /// Benchmarks (`cargo build --benches`).
    Bench,
}

impl Kind {
    /// The bundle's folder for this kind.
    fn dir(self) -> &'static str {
        match self {
            Kind::Test => "tests",
            Kind::Example => "examples",
            Kind::Bench => "benches",
        }
    }

    /// The cargo subcommand and target selection that builds this kind.
    fn cargo_args(self) -> &'static [&'static str] {
        match self {
            Kind::Test => &["test", "--no-run"],
            Kind::Example => &["build", "--examples"],
            Kind::Bench => &["build", "--benches"],
        }
    }
}

/// An executable cargo built, as read from one `compiler-artifact` message.
#[derive(Debug, PartialEq, Eq)]
struct Artifact {
    /// The target's name (the file name without cargo's hash).
    name: String,
    /// The built file.
    executable: PathBuf,
}

/// What the bundle needs to know of one workspace package.
#[derive(Debug, PartialEq, Eq)]
struct Package {
    /// The package's name.
    name: String,
    /// The names of its features.
    features: Vec<String>,
    /// Whether it has example targets.
    has_examples: bool,
    /// Whether it has bench targets.
    has_benches: bool,
}

/// Builds the bundle: `args` are the arguments after `gpu-bundle`.
pub fn run(args: &[String]) -> Result<(), String> {
    let root = crate::workspace_root();
    let out = match parse_args(args)? {
        Some(dir) => {
            std::path::absolute(&dir).map_err(|e| format!("resolving {}: {e}", dir.display()))?
        }
        None => root.join("target").join("gpu-bundle"),
    };
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        eprintln!(
            "gpu-bundle: warning: not on x86-64 Linux; the GPU machine cannot run these binaries"
        );
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());

    let metadata = run_cargo(
        &root,
        &cargo,
        &["metadata", "--no-deps", "--format-version", "1"],
    )?;
    let packages = parse_metadata(&metadata.join("\n"))?;
    let plan = plan_builds(&packages)?;

    prepare_out(&out)?;
    write_executable(&out.join("run.sh"), RUN_SH.as_bytes())?;
    let mut copied = BTreeMap::new();
    for abi in &ABIS {
        for &(kind, package) in &plan {
            build_and_copy(&root, &cargo, abi, kind, package, &out, &mut copied)?;
        }
        build_interop(&root, &cargo, abi, &out)?;
    }
    copy_interop_scripts(&root, &out)?;
    copy_driver_floor(&root, &out)?;
    copy_bench_sources(&root, &out)?;
    write_manifest(&root, &out)?;

    let total: u64 = list_files(&out)?.iter().map(|(_, size)| size).sum();
    println!(
        "gpu-bundle: {} executables, {} in {}",
        copied.len(),
        mib(total),
        out.display()
    );
    if total > SIZE_LIMIT {
        return Err(format!(
            "the bundle is {}, over the {} the device tool carries; drop items or shrink them",
            mib(total),
            mib(SIZE_LIMIT)
        ));
    }
    println!(
        "gpu-bundle: run it with `bash {}/run.sh [FILTER]`",
        out.display()
    );
    Ok(())
}

/// Parses the task's arguments: `Some(dir)` for `--out DIR` (or `--out=DIR`), else `None`.
fn parse_args(args: &[String]) -> Result<Option<PathBuf>, String> {
    let mut out = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let dir = if arg == "--out" {
            args.next()
                .ok_or_else(|| format!("--out needs a folder\n{USAGE}"))?
                .as_str()
        } else if let Some(dir) = arg.strip_prefix("--out=") {
            dir
        } else {
            return Err(format!("unknown argument `{arg}`\n{USAGE}"));
        };
        if dir.is_empty() {
            return Err(format!("--out needs a folder\n{USAGE}"));
        }
        out = Some(PathBuf::from(dir));
    }
    Ok(out)
}

/// Reads the workspace's packages from `cargo metadata --no-deps --format-version 1` output.
fn parse_metadata(json: &str) -> Result<Vec<Package>, String> {
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

/// Whether a cargo target object lists `wanted` among its kinds.
fn target_has_kind(target: &Value, wanted: &str) -> bool {
    target["kind"]
        .as_array()
        .is_some_and(|kinds| kinds.iter().any(|kind| kind.as_str() == Some(wanted)))
}

/// Chooses what to build: the tests package's tests, every package's examples and benches.
/// Every package chosen must have a feature for each ABI.
fn plan_builds(packages: &[Package]) -> Result<Vec<(Kind, &Package)>, String> {
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
            .filter(|package| package.has_examples)
            .map(|package| (Kind::Example, package)),
    );
    plan.extend(
        packages
            .iter()
            .filter(|package| package.has_benches)
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

/// Runs cargo in the workspace root with `args`; cargo's stderr goes to the user, its stdout
/// comes back as lines.
fn run_cargo(root: &Path, cargo: &str, args: &[&str]) -> Result<Vec<String>, String> {
    let shown = format!("cargo {}", args.join(" "));
    eprintln!("gpu-bundle: {shown}");
    let mut child = Command::new(cargo)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting `{shown}`: {e}"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| format!("reading the output of `{shown}`: no pipe"))?;
    let lines: Result<Vec<String>, _> = BufReader::new(stdout).lines().collect();
    let status = child
        .wait()
        .map_err(|e| format!("waiting for `{shown}`: {e}"))?;
    let lines = lines.map_err(|e| format!("reading the output of `{shown}`: {e}"))?;
    if !status.success() {
        return Err(format!("`{shown}` failed ({status})"));
    }
    Ok(lines)
}

/// Reads one line of cargo's JSON output: the executable it announces, if it is one of `kind`.
fn parse_artifact(line: &str, kind: Kind) -> Option<Artifact> {
    let message: Value = serde_json::from_str(line).ok()?;
    if message["reason"].as_str() != Some("compiler-artifact") {
        return None;
    }
    let executable = message["executable"].as_str()?;
    let target = &message["target"];
    let wanted = match kind {
        Kind::Test => message["profile"]["test"].as_bool() == Some(true),
        Kind::Example => target_has_kind(target, "example"),
        Kind::Bench => target_has_kind(target, "bench"),
    };
    if !wanted {
        return None;
    }
    Some(Artifact {
        name: target["name"].as_str()?.to_owned(),
        executable: PathBuf::from(executable),
    })
}

/// Builds `kind` of `package` for `abi` and copies each executable into the bundle;
/// `copied` maps each bundle path written so far to its source, to catch clashing names.
fn build_and_copy(
    root: &Path,
    cargo: &str,
    abi: &Abi,
    kind: Kind,
    package: &Package,
    out: &Path,
    copied: &mut BTreeMap<PathBuf, PathBuf>,
) -> Result<(), String> {
    let mut args: Vec<&str> = kind.cargo_args().to_vec();
    args.extend(["--profile", PROFILE, "-p", &package.name]);
    args.extend(abi.cargo_args);
    args.push("--message-format=json-render-diagnostics");
    let lines = run_cargo(root, cargo, &args)?;

    let dir = out.join(abi.name).join(kind.dir());
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for artifact in lines.iter().filter_map(|line| parse_artifact(line, kind)) {
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

/// Builds the interop proof's `cdylib` for `abi` and copies it into `<abi>/lib/`.
fn build_interop(root: &Path, cargo: &str, abi: &Abi, out: &Path) -> Result<(), String> {
    let mut args = vec![
        "build",
        "--lib",
        "--profile",
        PROFILE,
        "-p",
        INTEROP_PACKAGE,
    ];
    args.extend(abi.cargo_args);
    args.push("--message-format=json-render-diagnostics");
    let lines = run_cargo(root, cargo, &args)?;
    let library = lines
        .iter()
        .find_map(|line| parse_cdylib(line))
        .ok_or_else(|| format!("cargo announced no shared library of `{INTEROP_PACKAGE}`"))?;
    let name = library
        .file_name()
        .ok_or_else(|| format!("{} has no file name", library.display()))?;
    let dir = out.join(abi.name).join("lib");
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let dest = dir.join(name);
    let size = fs::copy(&library, &dest)
        .map_err(|e| format!("copying {} to {}: {e}", library.display(), dest.display()))?;
    println!(
        "gpu-bundle: {}/lib/{} ({})",
        abi.name,
        name.to_string_lossy(),
        mib(size)
    );
    Ok(())
}

/// Reads one line of cargo's JSON output: the shared library a `cdylib` target produced.
fn parse_cdylib(line: &str) -> Option<PathBuf> {
    let message: Value = serde_json::from_str(line).ok()?;
    if message["reason"].as_str() != Some("compiler-artifact")
        || !target_has_kind(&message["target"], "cdylib")
    {
        return None;
    }
    message["filenames"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|file| file.ends_with(".so") || file.ends_with(".dylib") || file.ends_with(".dll"))
        .map(PathBuf::from)
}

/// Copies the interop proof's Python and shell scripts into `interop/` of the bundle, keeping
/// shell scripts executable.
fn copy_interop_scripts(root: &Path, out: &Path) -> Result<(), String> {
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

/// Empties the bundle folder, refusing to delete a folder that is not an earlier bundle.
fn prepare_out(out: &Path) -> Result<(), String> {
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
fn write_executable(path: &Path, bytes: &[u8]) -> Result<(), String> {
    fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
    make_executable(path)
}

/// Sets mode 0755 on `path` (a no-op where there are no Unix permissions).
fn make_executable(path: &Path) -> Result<(), String> {
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

/// Copies the C driver-API floor into `bench/` of the bundle (writable, whatever the source's
/// mode), or warns when it is missing.
fn copy_driver_floor(root: &Path, out: &Path) -> Result<(), String> {
    let src = root.join(DRIVER_FLOOR_SRC);
    if !src.is_file() {
        eprintln!(
            "gpu-bundle: warning: {} not found; the bundle has no driver floor",
            src.display()
        );
        return Ok(());
    }
    let dir = out.join("bench");
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let dest = dir.join("driver_floor.c");
    let text = fs::read(&src).map_err(|e| format!("reading {}: {e}", src.display()))?;
    fs::write(&dest, text).map_err(|e| format!("writing {}: {e}", dest.display()))
}

/// Copies the repository's own `bench/` files (C floors, benchmark scripts) into `bench/` of
/// the bundle, keeping the executable bit of scripts.
fn copy_bench_sources(root: &Path, out: &Path) -> Result<(), String> {
    let src_dir = root.join("bench");
    let Ok(entries) = fs::read_dir(&src_dir) else {
        return Ok(());
    };
    let dir = out.join("bench");
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", src_dir.display()))?;
        let src = entry.path();
        if !src.is_file() {
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

/// Writes `MANIFEST.txt`: the git commit, the dirty count, and every other file with its size.
fn write_manifest(root: &Path, out: &Path) -> Result<(), String> {
    let commit = git(root, &["rev-parse", "--short", "HEAD"]).map(|s| s.trim().to_owned());
    let dirty = git(root, &["status", "--porcelain"])
        .map(|s| s.lines().filter(|line| !line.trim().is_empty()).count());
    let text = manifest_text(commit.as_deref(), dirty, &list_files(out)?);
    let path = out.join("MANIFEST.txt");
    fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Runs git in `root`: its stdout, or `None` when git is missing or fails.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The manifest's text: commit, dirty count (`unknown` without git), then `path size` lines.
fn manifest_text(commit: Option<&str>, dirty: Option<usize>, files: &[(String, u64)]) -> String {
    let mut text = String::from("# written by `cargo xtask gpu-bundle`: path and size in bytes\n");
    text.push_str(&format!("commit: {}\n", commit.unwrap_or("unknown")));
    text.push_str(&format!(
        "dirty: {}\n",
        dirty.map_or_else(|| "unknown".to_owned(), |n| n.to_string())
    ));
    for (path, size) in files {
        text.push_str(&format!("{path} {size}\n"));
    }
    text
}

/// Every file under `dir`, as a `/`-separated path relative to it and its size, sorted.
fn list_files(dir: &Path) -> Result<Vec<(String, u64)>, String> {
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
fn mib(bytes: u64) -> String {
    // Sizes here are far below 2^52 bytes, so the conversion is exact enough.
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The script that runs the bundle on the GPU machine (`bundle/run.sh`).
const RUN_SH: &str = include_str!("bundle/run.sh");

#[cfg(test)]
mod tests {
    use super::*;

    /// A test target's artifact, as `cargo test --no-run --message-format=json` prints it.
    const TEST_LINE: &str = r#"{"reason":"compiler-artifact","package_id":"path+file:///ws/tests#cuda-gpu-tests@0.1.0","manifest_path":"/ws/tests/Cargo.toml","target":{"kind":["test"],"crate_types":["bin"],"name":"raw_layer","src_path":"/ws/tests/tests/raw_layer.rs","edition":"2024","doc":false,"doctest":false,"test":true},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":true},"features":["cuda-13"],"filenames":["/ws/target/bundle/deps/raw_layer-0123abcd"],"executable":"/ws/target/bundle/deps/raw_layer-0123abcd","fresh":false}"#;

    /// A library built as a dependency: no executable.
    const LIB_LINE: &str = r#"{"reason":"compiler-artifact","package_id":"path+file:///ws/cuda-loader#0.1.0","manifest_path":"/ws/cuda-loader/Cargo.toml","target":{"kind":["lib"],"crate_types":["lib"],"name":"cuda_loader","src_path":"/ws/cuda-loader/src/lib.rs","edition":"2024","doc":true,"doctest":true,"test":true},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":[],"filenames":["/ws/target/bundle/deps/libcuda_loader-1.rlib"],"executable":null,"fresh":true}"#;

    /// An example.
    const EXAMPLE_LINE: &str = r#"{"reason":"compiler-artifact","package_id":"path+file:///ws/cuda-sys#0.1.0","manifest_path":"/ws/cuda-sys/Cargo.toml","target":{"kind":["example"],"crate_types":["bin"],"name":"driver_info","src_path":"/ws/cuda-sys/examples/driver_info.rs","edition":"2024","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":["cuda-12","default"],"filenames":["/ws/target/bundle/examples/driver_info"],"executable":"/ws/target/bundle/examples/driver_info","fresh":false}"#;

    /// A `harness = false` benchmark.
    const BENCH_LINE: &str = r#"{"reason":"compiler-artifact","package_id":"path+file:///ws/cuda-safe#0.1.0","manifest_path":"/ws/cuda-safe/Cargo.toml","target":{"kind":["bench"],"crate_types":["bin"],"name":"launch","src_path":"/ws/cuda-safe/benches/launch.rs","edition":"2024","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":[],"filenames":["/ws/target/bundle/deps/launch-77"],"executable":"/ws/target/bundle/deps/launch-77","fresh":false}"#;

    /// The interop proof's library, as `cargo build --message-format=json` announces it.
    const CDYLIB_LINE: &str = r#"{"reason":"compiler-artifact","package_id":"path+file:///ws/interop#cuda-safe-interop@0.1.0","manifest_path":"/ws/interop/Cargo.toml","target":{"kind":["cdylib"],"crate_types":["cdylib"],"name":"cuda_safe_interop","src_path":"/ws/interop/src/lib.rs","edition":"2024","doc":true,"doctest":false,"test":true},"profile":{"opt_level":"3","debuginfo":0,"debug_assertions":false,"overflow_checks":false,"test":false},"features":["cuda-13"],"filenames":["/ws/target/bundle/libcuda_safe_interop.so"],"executable":null,"fresh":false}"#;

    #[test]
    fn cdylib_artifacts_name_their_shared_library() {
        assert_eq!(
            parse_cdylib(CDYLIB_LINE),
            Some(PathBuf::from("/ws/target/bundle/libcuda_safe_interop.so"))
        );
        assert_eq!(parse_cdylib(LIB_LINE), None);
        assert_eq!(parse_cdylib(TEST_LINE), None);
        assert_eq!(parse_cdylib("not json"), None);
        assert_eq!(parse_artifact(CDYLIB_LINE, Kind::Test), None);
    }

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

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn test_artifact_is_named_after_its_target() {
        let artifact = parse_artifact(TEST_LINE, Kind::Test).expect("a test binary");
        assert_eq!(artifact.name, "raw_layer");
        assert_eq!(
            artifact.executable,
            PathBuf::from("/ws/target/bundle/deps/raw_layer-0123abcd")
        );
        assert_eq!(parse_artifact(TEST_LINE, Kind::Example), None);
        assert_eq!(parse_artifact(TEST_LINE, Kind::Bench), None);
    }

    #[test]
    fn example_and_bench_artifacts_are_told_apart() {
        let example = parse_artifact(EXAMPLE_LINE, Kind::Example).expect("an example");
        assert_eq!(example.name, "driver_info");
        assert_eq!(parse_artifact(EXAMPLE_LINE, Kind::Test), None);
        assert_eq!(parse_artifact(EXAMPLE_LINE, Kind::Bench), None);
        let bench = parse_artifact(BENCH_LINE, Kind::Bench).expect("a bench");
        assert_eq!(bench.name, "launch");
        assert_eq!(
            bench.executable,
            PathBuf::from("/ws/target/bundle/deps/launch-77")
        );
        assert_eq!(parse_artifact(BENCH_LINE, Kind::Example), None);
    }

    #[test]
    fn other_messages_are_ignored() {
        for kind in [Kind::Test, Kind::Example, Kind::Bench] {
            assert_eq!(parse_artifact(LIB_LINE, kind), None);
            assert_eq!(
                parse_artifact(r#"{"reason":"build-finished","success":true}"#, kind),
                None
            );
            assert_eq!(parse_artifact("not json", kind), None);
            assert_eq!(parse_artifact("", kind), None);
        }
    }

    #[test]
    fn arguments() {
        assert_eq!(parse_args(&[]), Ok(None));
        assert_eq!(
            parse_args(&strings(&["--out", "some/dir"])),
            Ok(Some(PathBuf::from("some/dir")))
        );
        assert_eq!(
            parse_args(&strings(&["--out=/abs"])),
            Ok(Some(PathBuf::from("/abs")))
        );
        assert!(parse_args(&strings(&["--out"])).is_err_and(|e| e.contains("--out needs")));
        assert!(parse_args(&strings(&["--out="])).is_err());
        assert!(parse_args(&strings(&["--check"])).is_err_and(|e| e.contains("`--check`")));
        assert!(parse_args(&strings(&["--out", "a", "extra"])).is_err());
    }

    /// A package with both ABI features.
    fn package(name: &str, has_examples: bool, has_benches: bool) -> Package {
        Package {
            name: name.to_owned(),
            features: strings(&["cuda-12", "cuda-13", "default"]),
            has_examples,
            has_benches,
        }
    }

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

    #[test]
    fn plan_covers_tests_examples_and_benches() {
        let packages = vec![
            package("cuda-sys", true, false),
            package(TESTS_PACKAGE, false, false),
            package("cuda-safe", true, true),
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
    fn plan_needs_the_tests_package_and_the_abi_features() {
        let no_tests = vec![package("cuda-sys", true, false)];
        assert!(plan_builds(&no_tests).is_err_and(|e| e.contains(TESTS_PACKAGE)));

        let mut no_feature = package("nvml-sys", true, false);
        no_feature.features = strings(&["cuda-12"]);
        let packages = vec![package(TESTS_PACKAGE, false, false), no_feature];
        assert!(
            plan_builds(&packages)
                .is_err_and(|e| e.contains("`nvml-sys`") && e.contains("`cuda-13`"))
        );
    }

    #[test]
    fn manifest_lists_commit_dirty_count_and_files() {
        let files = vec![
            ("cuda-12/tests/raw_layer".to_owned(), 1234),
            ("run.sh".to_owned(), 56),
        ];
        let text = manifest_text(Some("a41f09a"), Some(3), &files);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "commit: a41f09a",
                "dirty: 3",
                "cuda-12/tests/raw_layer 1234",
                "run.sh 56"
            ]
        );
        let text = manifest_text(None, None, &[]);
        assert!(text.contains("commit: unknown\ndirty: unknown\n"));
    }

    /// A fresh empty folder under the system's temporary folder.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-bundle-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create scratch dir");
        dir
    }

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

    #[test]
    fn run_sh_has_the_agreed_shape() {
        assert!(RUN_SH.starts_with("#!/usr/bin/env bash\n"));
        assert!(RUN_SH.contains("\nset -u\n"));
        assert!(!RUN_SH.contains("set -e"));
        assert!(RUN_SH.contains("export CUDA_SAFE_REQUIRE_GPU=1"));
        assert!(RUN_SH.contains("--tool memcheck --error-exitcode 99"));
        assert!(RUN_SH.contains("gcc -O2 -o \"$nvml_floor_bin\" bench/nvml_floor.c"));
        assert!(RUN_SH.contains(r#"echo "$passed passed, $failed failed""#));
        for abi in &ABIS {
            assert!(RUN_SH.contains(abi.name), "run.sh must run {}", abi.name);
        }
        for kind in [Kind::Test, Kind::Example, Kind::Bench] {
            assert!(
                RUN_SH.contains(kind.dir()),
                "run.sh must run {}",
                kind.dir()
            );
        }
    }

    /// `bash -n` accepts the script, where bash exists.
    #[test]
    fn run_sh_parses() {
        let dir = scratch("syntax");
        let path = dir.join("run.sh");
        write_executable(&path, RUN_SH.as_bytes()).expect("write");
        match Command::new("bash").arg("-n").arg(&path).output() {
            Ok(output) => assert!(
                output.status.success(),
                "bash -n run.sh: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
            Err(e) => eprintln!("bash not found ({e}); run.sh not syntax-checked"),
        }
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
