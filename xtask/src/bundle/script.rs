//! `run.sh`, the script that runs the bundle on the GPU machine.

/// The script that runs the bundle on the GPU machine (`bundle/run.sh`).
pub(super) const RUN_SH: &str = include_str!("run.sh");

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;
    use std::process::{Command, Output};

    use super::*;
    use crate::bundle::files::write_executable;
    use crate::bundle::plan::ABIS;
    use crate::bundle::testing::scratch;

    #[test]
    fn run_sh_has_the_agreed_shape() {
        assert!(RUN_SH.starts_with("#!/usr/bin/env bash\n"));
        // The first two commands: no `set -e`, and NVLink multicast off before anything runs.
        let commands: Vec<&str> = RUN_SH
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .take(2)
            .collect();
        assert_eq!(commands, ["set -u", "export NCCL_NVLS_ENABLE=0"]);
        assert!(!RUN_SH.contains("set -e"));
        assert!(RUN_SH.contains("export CUDA_SAFE_REQUIRE_GPU=1"));
        assert!(RUN_SH.contains("--tool memcheck --error-exitcode 99"));
        assert!(RUN_SH.contains("CUDA_GPU_TESTS_FILE=\"$file\""));
        assert!(RUN_SH.contains("bash bench/floors/build.sh \"$floor_dir\""));
        assert!(RUN_SH.contains(r#"echo "$passed passed, $failed failed, $skipped skipped"#));
        for abi in &ABIS {
            assert!(RUN_SH.contains(abi.name), "run.sh must run {}", abi.name);
        }
        for kind in ["tests", "examples", "benches"] {
            assert!(RUN_SH.contains(kind), "run.sh must run {kind}");
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

    /// A bundle of stand-ins: a test binary with three files (one fails), an example, a
    /// benchmark, a diagnostic (`--lab`'s) and a floor.
    fn fake_bundle(dir: &Path) {
        write_executable(&dir.join("run.sh"), RUN_SH.as_bytes()).expect("write");
        let abi = dir.join("cuda-12");
        for kind in ["tests", "examples", "benches"] {
            fs::create_dir_all(abi.join(kind)).expect("mkdir");
        }
        let test = "#!/bin/sh\necho \"file=$CUDA_GPU_TESTS_FILE args=$*\"\n\
                    [ \"$CUDA_GPU_TESTS_FILE\" != bad ] || exit 101\n";
        write_executable(&abi.join("tests/gpu"), test.as_bytes()).expect("write");
        fs::write(abi.join("tests/gpu.files"), "cache\ngraph\nbad\n").expect("write");
        write_executable(&abi.join("examples/ex"), b"#!/bin/sh\necho example\n").expect("write");
        write_executable(
            &abi.join("examples/two_gpus"),
            b"#!/bin/sh\necho skipped: needs two GPUs\nexit 77\n",
        )
        .expect("write");
        write_executable(&abi.join("benches/plain"), b"#!/bin/sh\necho FIG x 1 us\n")
            .expect("write");
        write_executable(&abi.join("benches/diag_thing"), b"#!/bin/sh\nexit 3\n").expect("write");
        fs::create_dir_all(dir.join("bench/floors")).expect("mkdir");
        fs::write(dir.join("bench/floors/a_floor.c"), "int main;").expect("write");
        let build = "out=$1; shift\nfor n in \"$@\"; do printf '#!/bin/sh\\necho %s\\n' \"$n\" \
                     >\"$out/$n\"; chmod +x \"$out/$n\"; echo \"built $n\"; done\n";
        fs::write(dir.join("bench/floors/build.sh"), build).expect("write");
    }

    /// Runs the fake bundle's `run.sh` with `args` and the environment `env`; `None` without
    /// bash.
    fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<(Output, String)> {
        let output = Command::new("bash")
            .arg("run.sh")
            .args(args)
            .envs(env.iter().copied())
            .env("OUT", dir.join("logs"))
            .current_dir(dir)
            .output();
        match output {
            Ok(output) => {
                let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
                Some((output, stdout))
            }
            Err(e) => {
                eprintln!("bash not found ({e}); run.sh not run");
                None
            }
        }
    }

    /// Whether the summary in `stdout` has the row of `label` with `status` (`PASS  1.23  x`).
    fn has_row(stdout: &str, status: &str, label: &str) -> bool {
        stdout.lines().any(|line| {
            line.strip_prefix(status)
                .and_then(|rest| rest.trim_start().split_once("  "))
                .is_some_and(|(seconds, rest)| seconds.parse::<f64>().is_ok() && rest == label)
        })
    }

    #[test]
    fn run_sh_runs_each_test_file_the_examples_and_benchmarks_but_no_diagnostics() {
        let dir = scratch("items");
        fake_bundle(&dir);
        let Some((output, stdout)) = run(&dir, &[], &[("RUN_FLOOR", "0")]) else {
            return;
        };
        assert!(!output.status.success(), "a test file failed: {stdout}");
        for (status, item) in [
            ("PASS", "cuda-12/tests/cache"),
            ("PASS", "cuda-12/tests/graph"),
            ("FAIL", "cuda-12/tests/bad"),
            ("PASS", "cuda-12/examples/ex"),
            ("SKIP", "cuda-12/examples/two_gpus"),
            ("PASS", "cuda-12/benches/plain"),
        ] {
            assert!(has_row(&stdout, status, item), "{status} {item}: {stdout}");
        }
        assert!(
            stdout.contains("file=graph args=--test-threads=1"),
            "{stdout}"
        );
        assert!(!stdout.contains("diag_thing"), "{stdout}");
        assert!(!stdout.contains("a_floor"), "{stdout}");
        assert!(stdout.contains("4 passed, 1 failed, 1 skipped"), "{stdout}");
        let summary = fs::read_to_string(dir.join("logs/summary.txt")).expect("summary.txt");
        assert!(
            summary.ends_with("4 passed, 1 failed, 1 skipped (exit 77: not for this machine)\n"),
            "{summary}"
        );
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn run_sh_filters_items_by_test_file_and_takes_test_arguments() {
        let dir = scratch("filter");
        fake_bundle(&dir);
        let env = [("TEST_ARGS", "capture:: --exact"), ("TEST_THREADS", "4")];
        let Some((output, stdout)) = run(&dir, &["tests/graph"], &env) else {
            return;
        };
        assert!(output.status.success(), "{stdout}");
        assert!(
            stdout.contains("file=graph args=--test-threads=4 capture:: --exact"),
            "{stdout}"
        );
        assert!(!stdout.contains("file=cache"), "{stdout}");
        assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");

        let Some((output, stdout)) = run(&dir, &["benches/"], &[("RUN_BENCHES", "0")]) else {
            return;
        };
        assert!(!output.status.success(), "nothing ran: {stdout}");
        assert!(
            stdout.contains("(1 benchmarks left out: RUN_BENCHES=0)"),
            "{stdout}"
        );
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    /// A floor is an item: it runs where gcc and `/usr/local/cuda` let `build.sh` build it, and
    /// fails as not built elsewhere.
    #[test]
    fn run_sh_runs_the_floors_as_items() {
        let dir = scratch("floors");
        fake_bundle(&dir);
        let Some((_, stdout)) = run(&dir, &["floors"], &[]) else {
            return;
        };
        assert!(
            has_row(&stdout, "PASS", "bench/floors/a_floor")
                || has_row(&stdout, "FAIL", "bench/floors/a_floor (not built)"),
            "{stdout}"
        );
        assert!(!stdout.contains("cuda-12/"), "{stdout}");
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
