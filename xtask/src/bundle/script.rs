//! `run.sh`, the script that runs the bundle on the GPU machine.

/// The script that runs the bundle on the GPU machine (`bundle/run.sh`).
pub(super) const RUN_SH: &str = include_str!("run.sh");

#[cfg(test)]
mod tests {
    use std::fs;
    use std::process::Command;

    use super::*;
    use crate::bundle::files::write_executable;
    use crate::bundle::plan::{ABIS, Kind};
    use crate::bundle::testing::scratch;

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

    /// With `RUN_BENCHES=1` the benchmarks run, but not the diagnostics (`diag_*`), which take
    /// arguments.
    #[test]
    fn run_sh_runs_benchmarks_but_not_diagnostics() {
        let dir = scratch("diag");
        write_executable(&dir.join("run.sh"), RUN_SH.as_bytes()).expect("write");
        let benches = dir.join("cuda-12/benches");
        fs::create_dir_all(&benches).expect("mkdir");
        write_executable(&benches.join("plain"), b"#!/bin/sh\necho FIG x 1 us\n").expect("write");
        write_executable(&benches.join("diag_thing"), b"#!/bin/sh\nexit 3\n").expect("write");
        let output = match Command::new("bash")
            .arg("run.sh")
            .env("RUN_BENCHES", "1")
            .env("OUT", dir.join("logs"))
            .current_dir(&dir)
            .output()
        {
            Ok(output) => output,
            Err(e) => {
                eprintln!("bash not found ({e}); run.sh not run");
                return;
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "run.sh failed: {stdout}");
        assert!(stdout.contains("PASS      "), "{stdout}");
        assert!(stdout.contains("cuda-12/benches/plain"), "{stdout}");
        assert!(!stdout.contains("diag_thing"), "{stdout}");
        assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
        fs::remove_dir_all(&dir).expect("cleanup");
    }
}
