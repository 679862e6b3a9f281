//! Running cargo and reading the executables and libraries its JSON messages announce.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::plan::Kind;

/// An executable cargo built, as read from one `compiler-artifact` message.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Artifact {
    /// The target's name (the file name without cargo's hash).
    pub(super) name: String,
    /// The built file.
    pub(super) executable: PathBuf,
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

/// Reads one line of cargo's JSON output: the executable it announces, if it is one of `kind`.
pub(super) fn parse_artifact(line: &str, kind: Kind) -> Option<Artifact> {
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

/// Reads one line of cargo's JSON output: the shared library a `cdylib` target produced.
pub(super) fn parse_cdylib(line: &str) -> Option<PathBuf> {
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
}
