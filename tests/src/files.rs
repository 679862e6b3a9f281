//! The test files of the `gpu` binary and how they run: each in a process of its own.

use std::process::{Command, ExitCode};

use libtest_mimic::{Arguments, Trial};

use crate::{GpuTest, GpuVerdict};

/// The variable that names the one test file a process runs: set by [`run_gpu_files`] for
/// the processes it starts, one a file, and by the bundle's `run.sh` for each of its items.
pub const FILE_ENV: &str = "CUDA_GPU_TESTS_FILE";

/// The exit code of a run in which a test failed, as libtest's.
const TESTS_FAILED: u8 = 101;

/// The exit code when the command line names no known test file, or cannot be followed.
const BAD_REQUEST: u8 = 2;

/// One test file's tests, as [`gpu_file!`](crate::gpu_file!) lists them.
#[derive(Debug, Clone, Copy)]
pub struct GpuFile {
    /// The file's module path, `module_path!()` where [`gpu_file!`](crate::gpu_file!) was
    /// written (`gpu::graph`).
    pub module: &'static str,
    /// Its tests, each named as in the file (`capture::...` in a folder).
    pub tests: &'static [GpuTest],
}

impl GpuFile {
    /// The file's name: its module path without the crate's name (`graph`).
    pub fn name(&self) -> &'static str {
        self.module
            .split_once("::")
            .map_or(self.module, |(_, name)| name)
    }

    /// Its tests as trials, as `verdict` decides, each named `file::test`.
    fn trials(&self, verdict: &GpuVerdict) -> Vec<Trial> {
        self.tests
            .iter()
            .map(|&(name, test)| verdict.trial(format!("{}::{name}", self.name()), test))
            .collect()
    }
}

/// A test file's tests, the functions named: the file's [`GpuFile`], named after the module
/// it is written in.
///
/// ```text
/// /// This file's tests.
/// pub(crate) const FILE: GpuFile = gpu_file![a_kernel_launches, a_buffer_round_trips];
/// ```
///
/// Each name is a `fn()` of the file, which fails its test by panicking; in a file split into
/// modules (`tests/tests/graph/`), a path to one, which is also the test's name in its file
/// (`capture::capture_in_global_mode_records_launches`). A test function left out of the list
/// is dead code, and so is a file left out of `main`'s list: the lints reject both.
#[macro_export]
macro_rules! gpu_file {
    ($($test:path),+ $(,)?) => {
        $crate::GpuFile {
            module: module_path!(),
            tests: &[$((stringify!($test), $test as fn())),+],
        }
    };
}

/// Runs the test files' GPU tests under libtest-mimic with this process's arguments and gives
/// the exit code: the body of the `gpu` binary's `main` (see the crate's documentation).
///
/// With [`FILE_ENV`] set, only that file's tests, in this process. Otherwise, where a GPU is
/// usable and the tests the command line chooses come from more than one file, each of those
/// files runs in a process of its own (this binary, with the same arguments and [`FILE_ENV`]
/// naming the file), one after another; the exit code is 101 when one of them failed. Where no
/// GPU is usable, or one file is chosen, or `--list`, everything runs here.
pub fn run_gpu_files(files: &[GpuFile]) -> ExitCode {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|threads| threads.parse().ok())
            .filter(|&threads: &usize| threads > 0);
    }
    let files = match std::env::var(FILE_ENV) {
        Ok(name) => match files.iter().find(|file| file.name() == name) {
            Some(file) => vec![*file],
            None => {
                let names: Vec<&str> = files.iter().map(GpuFile::name).collect();
                eprintln!(
                    "{FILE_ENV}={name}: no such test file; the files are {}",
                    names.join(", ")
                );
                return ExitCode::from(BAD_REQUEST);
            }
        },
        Err(_) => files.to_vec(),
    };
    let verdict = GpuVerdict::here();
    if !args.list
        && let Some(line) = verdict.line()
    {
        eprintln!("{line}");
    }
    if verdict == GpuVerdict::Run && !args.list {
        let chosen = chosen_files(&args, &verdict, &files);
        if chosen.len() > 1 {
            return run_apart(&chosen);
        }
    }
    let trials = files
        .iter()
        .flat_map(|file| file.trials(&verdict))
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}

/// The names of the files of which `args` chooses at least one test, in order.
fn chosen_files(args: &Arguments, verdict: &GpuVerdict, files: &[GpuFile]) -> Vec<&'static str> {
    files
        .iter()
        .filter(|file| {
            file.trials(verdict)
                .iter()
                .any(|trial| !args.is_filtered_out(trial))
        })
        .map(GpuFile::name)
        .collect()
}

/// Runs each file named in a process of its own (this binary, this process's arguments,
/// [`FILE_ENV`] naming the file), one after another, and says which failed.
fn run_apart(names: &[&str]) -> ExitCode {
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(error) => {
            eprintln!("cannot find this test binary to start it once per file: {error}");
            return ExitCode::from(BAD_REQUEST);
        }
    };
    let mut failed = Vec::new();
    for name in names {
        eprintln!("\n{FILE_ENV}={name}: the tests of `{name}`, in a process of their own");
        let status = Command::new(&program)
            .args(std::env::args_os().skip(1))
            .env(FILE_ENV, name)
            .status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => failed.push(format!("{name} ({status})")),
            Err(error) => failed.push(format!("{name} (not started: {error})")),
        }
    }
    eprintln!(
        "\ntest files: {} passed, {} failed{}",
        names.len() - failed.len(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(": {}", failed.join(", "))
        }
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(TESTS_FAILED)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    fn one() {}

    fn two() {}

    const FIRST: GpuFile = GpuFile {
        module: "gpu::first",
        tests: &[("one", one), ("two", two)],
    };

    const SECOND: GpuFile = GpuFile {
        module: "gpu::second",
        tests: &[("nested::one", one)],
    };

    fn args(line: &[&str]) -> Arguments {
        Arguments::from_iter(std::iter::once("gpu").chain(line.iter().copied()))
    }

    #[test]
    fn a_file_is_named_after_its_module_and_its_tests_after_both() {
        const HERE: GpuFile = gpu_file![one, two];
        assert_eq!(HERE.module, "cuda_gpu_tests::files::tests");
        assert_eq!(HERE.name(), "files::tests");
        assert_eq!(FIRST.name(), "first");
        let names: Vec<String> = SECOND
            .trials(&GpuVerdict::Run)
            .iter()
            .map(|trial| trial.name().to_owned())
            .collect();
        assert_eq!(names, ["second::nested::one"]);
    }

    #[test]
    fn the_files_chosen_are_those_with_a_test_the_command_line_keeps() {
        let files = [FIRST, SECOND];
        let run = GpuVerdict::Run;
        assert_eq!(chosen_files(&args(&[]), &run, &files), ["first", "second"]);
        assert_eq!(chosen_files(&args(&["first::"]), &run, &files), ["first"]);
        assert_eq!(
            chosen_files(&args(&["::one"]), &run, &files),
            ["first", "second"]
        );
        assert_eq!(
            chosen_files(&args(&["--exact", "second::nested::one"]), &run, &files),
            ["second"]
        );
        assert_eq!(
            chosen_files(&args(&["--skip", "second"]), &run, &files),
            ["first"]
        );
        assert!(chosen_files(&args(&["nothing"]), &run, &files).is_empty());
        // No test is ignored where a GPU is usable, so `--ignored` keeps none.
        assert!(chosen_files(&args(&["--ignored"]), &run, &files).is_empty());
        let ignore = GpuVerdict::Ignore("no driver".to_owned());
        assert_eq!(
            chosen_files(&args(&["--ignored"]), &ignore, &files),
            ["first", "second"]
        );
    }

    /// Every file in `tests/tests/` (`NAME.rs` but `main.rs`, or `NAME/mod.rs`) is a module of
    /// the binary: a file `main.rs` does not declare would compile nowhere and run nothing.
    #[test]
    fn every_test_file_is_a_module_of_the_binary() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let main = std::fs::read_to_string(dir.join("main.rs")).expect("tests/main.rs");
        let declared: BTreeSet<String> = main
            .lines()
            .filter_map(|line| line.trim().strip_prefix("mod "))
            .filter_map(|rest| rest.strip_suffix(';'))
            .map(str::to_owned)
            .collect();
        let mut found = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).expect("tests/") {
            let path = entry.expect("an entry").path();
            let stem = path.file_stem().and_then(|stem| stem.to_str());
            let Some(stem) = stem else { continue };
            let is_file = path.extension().is_some_and(|ext| ext == "rs") && stem != "main";
            if is_file || path.join("mod.rs").is_file() {
                found.insert(stem.to_owned());
            }
        }
        assert_eq!(
            declared, found,
            "`mod` lines of tests/main.rs against the files"
        );
    }
}
