//! Running cargo and reading the executables and libraries its JSON messages announce.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// A target cargo built, as read from one `compiler-artifact` message.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Artifact {
    /// The `Cargo.toml` of the target's package.
    pub(super) manifest_path: PathBuf,
    /// The target's name (the file name without cargo's hash).
    pub(super) name: String,
    /// The target's kinds (`test`, `example`, `bench`, `lib`, `cdylib`, ...).
    pub(super) kinds: Vec<String>,
    /// The built executable, for an executable target.
    pub(super) executable: Option<PathBuf>,
    /// The files built.
    pub(super) filenames: Vec<PathBuf>,
}

impl Artifact {
    /// Whether its target is of `kind`.
    pub(super) fn is(&self, kind: &str) -> bool {
        self.kinds.iter().any(|known| known == kind)
    }

    /// The shared library among its files (a `cdylib`'s `.so`, `.dylib` or `.dll`).
    pub(super) fn shared_library(&self) -> Option<&Path> {
        self.filenames
            .iter()
            .find(|file| {
                file.extension()
                    .is_some_and(|ext| ext == "so" || ext == "dylib" || ext == "dll")
            })
            .map(PathBuf::as_path)
    }
}

/// Runs cargo in the workspace root with `args`; cargo's stderr goes to the user, its stdout
/// comes back as lines.
pub(super) fn run_cargo(root: &Path, cargo: &str, args: &[&str]) -> Result<Vec<String>, String> {
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

/// Reads one line of cargo's JSON output: the target it announces built, if it is one.
pub(super) fn parse_artifact(line: &str) -> Option<Artifact> {
    let message: Value = serde_json::from_str(line).ok()?;
    if message["reason"].as_str() != Some("compiler-artifact") {
        return None;
    }
    let target = &message["target"];
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    Some(Artifact {
        manifest_path: PathBuf::from(message["manifest_path"].as_str()?),
        name: target["name"].as_str()?.to_owned(),
        kinds: strings(&target["kind"]),
        executable: message["executable"].as_str().map(PathBuf::from),
        filenames: strings(&message["filenames"])
            .into_iter()
            .map(PathBuf::from)
            .collect(),
    })
}

/// Whether a cargo target object lists `wanted` among its kinds.
pub(super) fn target_has_kind(target: &Value, wanted: &str) -> bool {
    target["kind"]
        .as_array()
        .is_some_and(|kinds| kinds.iter().any(|kind| kind.as_str() == Some(wanted)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test target's artifact, as `cargo test --no-run --message-format=json` prints it.
    const TEST_LINE: &str = include_str!("testdata/test_artifact.json");

    /// A library built as a dependency: no executable.
    const LIB_LINE: &str = include_str!("testdata/lib_artifact.json");

    /// An example.
    const EXAMPLE_LINE: &str = include_str!("testdata/example_artifact.json");

    /// A `harness = false` benchmark.
    const BENCH_LINE: &str = include_str!("testdata/bench_artifact.json");

    /// The interop proof's library, as `cargo build --message-format=json` announces it.
    const CDYLIB_LINE: &str = include_str!("testdata/cdylib_artifact.json");

    #[test]
    fn cdylib_artifacts_name_their_shared_library() {
        let cdylib = parse_artifact(CDYLIB_LINE).expect("an artifact");
        assert!(cdylib.is("cdylib") && cdylib.executable.is_none());
        assert_eq!(
            cdylib.shared_library(),
            Some(Path::new("/ws/target/bundle/libcuda_safe_interop.so"))
        );
        assert_eq!(
            cdylib.manifest_path,
            PathBuf::from("/ws/interop/Cargo.toml")
        );
        let lib = parse_artifact(LIB_LINE).expect("an artifact");
        assert!(lib.is("lib") && lib.shared_library().is_none() && lib.executable.is_none());
    }

    #[test]
    fn test_artifact_is_named_after_its_target() {
        let artifact = parse_artifact(TEST_LINE).expect("a test binary");
        assert_eq!(artifact.name, "gpu");
        assert!(artifact.is("test") && !artifact.is("bench"));
        assert_eq!(
            artifact.manifest_path,
            PathBuf::from("/ws/tests/Cargo.toml")
        );
        assert_eq!(
            artifact.executable,
            Some(PathBuf::from("/ws/target/bundle/deps/gpu-0123abcd"))
        );
    }

    #[test]
    fn example_and_bench_artifacts_are_told_apart() {
        let example = parse_artifact(EXAMPLE_LINE).expect("an example");
        assert_eq!(example.name, "driver_info");
        assert!(example.is("example") && !example.is("test") && !example.is("bench"));
        let bench = parse_artifact(BENCH_LINE).expect("a bench");
        assert_eq!(bench.name, "launch");
        assert!(bench.is("bench") && !bench.is("example"));
        assert_eq!(
            bench.executable,
            Some(PathBuf::from("/ws/target/bundle/deps/launch-77"))
        );
    }

    #[test]
    fn other_messages_are_ignored() {
        assert_eq!(
            parse_artifact(r#"{"reason":"build-finished","success":true}"#),
            None
        );
        assert_eq!(parse_artifact("not json"), None);
        assert_eq!(parse_artifact(""), None);
    }
}
