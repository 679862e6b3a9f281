//! `cuda_safe::nvtx` against a fake tool: `fake_injection.c`, built with the C compiler into an
//! injection library and named by `NVTX_INJECTION64_PATH`, as Nsight Systems and Nsight
//! Compute name theirs. It logs every call it receives; the scenario's log must be exactly the
//! calls made: push/pop nesting, start/end ids (one ended on another thread), marks, colours,
//! categories, payloads, domains and their registered strings, names past the stack buffer.
//! Then NVTX stays off, with no error, when the variable is unset, names a missing library, or
//! names a tool that refuses to attach; a tool that leaves the domain slots empty gets the
//! default domain's calls only.
//!
//! A `main` of its own (`harness = false`): the tool is looked for once per process, on the
//! first NVTX call, so each case is a child process with the variable set before anything
//! runs. Without a C compiler it prints that it skipped (and fails under `CI`).

use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use cuda_safe::nvtx::{self, Domain, EventAttributes, Payload};

/// Set in a child: the case it runs (`tool`, `off`).
const CHILD: &str = "CUDA_SAFE_NVTX_CHILD";
/// Set in a child: the fake tool's path, to read its log from.
const FAKE: &str = "CUDA_SAFE_NVTX_FAKE";
/// The variable NVTX reads (64-bit processes).
const INJECTION: &str = "NVTX_INJECTION64_PATH";

/// What the fake tool logs for [`scenario`], line for line.
const EXPECTED: &str = "\
init version=3 core=16 core2=16 cuda=9 ends=1
push outer depth=0
push_ex inner color=ff00ff00 cat=7 payload=u64:42 depth=1
mark tick
mark_ex tock color=none cat=0 payload=f64:0.5
pop depth=1
pop depth=0
name_category 7 copies
start async -> 100
start_ex timed color=none cat=7 payload=i32:-3 -> 101
end 100
end 101
domain_create solver -> 1
domain solver register kernel -> 1
domain solver name_category 1 launch
domain solver push_ex reg:1(kernel) color=ff0000ff cat=1 payload=none depth=0
domain solver mark_ex in domain color=none cat=0 payload=none
domain solver pop depth=0
domain solver start_ex phase color=none cat=0 payload=u32:9 -> 102
domain solver end 102
domain solver push_ex plain color=none cat=0 payload=none depth=0
domain solver pop depth=0
domain_destroy solver
mark long:255
mark long:256
mark long:300
mark nul
";

fn main() -> ExitCode {
    if let Some(case) = std::env::var_os(CHILD) {
        child(case.to_str().unwrap());
        return ExitCode::SUCCESS;
    }
    if !cfg!(all(unix, target_pointer_width = "64")) {
        println!("nvtx: the fake tool is built for 64-bit Unix; skipped");
        return ExitCode::SUCCESS;
    }
    let scratch = tempfile::Builder::new()
        .prefix("cuda-safe-nvtx-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a temporary directory under the target directory");
    let fake = scratch.path().join("libfake-nvtx.so");
    if let Err(reason) = compile(&fake) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, so the fake tool must build: {reason}"
        );
        println!("nvtx: skipped: {reason}");
        return ExitCode::SUCCESS;
    }

    let log = run("tool", &[(INJECTION, fake.as_os_str())], &fake);
    assert_eq!(log, EXPECTED, "the tool received exactly the calls made");
    println!("nvtx: the fake tool received every call, in order");

    let core_only = run(
        "tool",
        &[
            (INJECTION, fake.as_os_str()),
            ("FAKE_NVTX_CORE_ONLY", "1".as_ref()),
        ],
        &fake,
    );
    let without_domains: String = EXPECTED
        .lines()
        .filter(|line| !line.starts_with("domain"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(
        core_only, without_domains,
        "a tool without domain slots gets the default domain's calls only"
    );
    println!("nvtx: a tool that leaves the domain slots empty is not called for domains");

    run("off", &[], &fake);
    let missing = scratch.path().join("no-such-tool.so");
    run("off", &[(INJECTION, missing.as_os_str())], &fake);
    let empty = std::ffi::OsStr::new("");
    run("off", &[(INJECTION, empty)], &fake);
    let refused = run(
        "off",
        &[
            (INJECTION, fake.as_os_str()),
            ("FAKE_NVTX_REFUSE", "1".as_ref()),
        ],
        &fake,
    );
    assert_eq!(refused, "init refused\n", "a refusing tool gets no calls");
    println!("nvtx: off, with no error, when unset, empty, missing or refused");
    ExitCode::SUCCESS
}

/// Runs `case` in a child with `vars` set (and the injection variable removed otherwise);
/// the fake tool's log it printed (empty when the tool was not loaded).
fn run(case: &str, vars: &[(&str, &std::ffi::OsStr)], fake: &Path) -> String {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .env(CHILD, case)
        .env(FAKE, fake)
        .env_remove(INJECTION)
        .env_remove("FAKE_NVTX_REFUSE")
        .env_remove("FAKE_NVTX_CORE_ONLY");
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = command.output().expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the {case} child ({vars:?}) failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    match stdout.split_once("--- log ---\n") {
        Some((_, log)) => log.to_owned(),
        None => String::new(),
    }
}

/// A child: the case's calls, then the fake tool's log when it is loaded.
fn child(case: &str) {
    match case {
        "tool" => {
            assert!(nvtx::is_enabled(), "the fake tool attached");
            scenario();
        }
        "off" => {
            assert!(!nvtx::is_enabled(), "no tool attached");
            // Every call returns, with nothing to return to.
            scenario();
            assert!(!nvtx::is_enabled());
        }
        other => panic!("unknown case {other}"),
    }
    let fake = PathBuf::from(std::env::var_os(FAKE).unwrap());
    let loaded = std::env::var_os(INJECTION).is_some_and(|path| Path::new(&path) == fake);
    if loaded && fake.exists() {
        // SAFETY: the fake tool, already loaded by the NVTX client when it attached (or
        // loaded here: it has no initialisers); `fake_nvtx_log` returns its NUL-terminated
        // log, valid until its next call.
        unsafe {
            let library = libloading::Library::new(&fake).expect("the fake tool loads");
            let log: libloading::Symbol<unsafe extern "C" fn() -> *const c_char> =
                library.get(b"fake_nvtx_log").expect("its log");
            let text = CStr::from_ptr(log()).to_string_lossy();
            print!("--- log ---\n{text}");
        }
    }
}

/// The calls whose log is [`EXPECTED`].
fn scenario() {
    let enabled = nvtx::is_enabled();
    {
        let _outer = nvtx::range("outer");
        let attributes = EventAttributes::new("inner")
            .color(0xff00ff00)
            .category(7)
            .payload(Payload::U64(42));
        let inner = nvtx::range_with(&attributes);
        nvtx::mark("tick");
        nvtx::mark_with(&EventAttributes::new("tock").payload(Payload::F64(0.5)));
        inner.pop();
    }
    nvtx::name_category(7, "copies");
    let started = nvtx::range_start("async");
    assert_eq!(started.id(), enabled.then_some(100));
    let timed = nvtx::range_start_with(
        &EventAttributes::new("timed")
            .category(7)
            .payload(Payload::I32(-3)),
    );
    std::thread::spawn(move || started.end()).join().unwrap();
    drop(timed);
    {
        let domain = Domain::new("solver");
        let kernel = domain.register_string("kernel");
        domain.name_category(1, "launch");
        {
            let _range =
                domain.range_with(&EventAttributes::new(kernel).category(1).color(0xff0000ff));
            domain.mark("in domain");
        }
        let phase =
            domain.range_start_with(&EventAttributes::new("phase").payload(Payload::U32(9)));
        // None without a tool, or with one that takes no domains.
        assert!(phase.id().is_none_or(|id| id == 102));
        phase.end();
        let plain = domain.range("plain");
        drop(plain);
    }
    nvtx::mark(&"y".repeat(255));
    nvtx::mark(&"z".repeat(256));
    nvtx::mark(&"x".repeat(300));
    nvtx::mark("nul\0after");
}

/// Compiles the fake tool into `output`; the error says why not (no compiler).
fn compile(output: &Path) -> Result<(), String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nvtx/fake_injection.c");
    let compiler = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let result = Command::new(&compiler)
        .args([
            "-shared", "-fPIC", "-pthread", "-std=c11", "-O1", "-Wall", "-Wextra", "-o",
        ])
        .arg(output)
        .arg(&source)
        .output();
    match result {
        Err(error) => Err(format!(
            "no C compiler: running {} failed ({error}); install gcc (or set CC)",
            compiler.to_string_lossy()
        )),
        Ok(done) if !done.status.success() => panic!(
            "the fake NVTX tool does not compile ({}):\n{}",
            done.status,
            String::from_utf8_lossy(&done.stderr)
        ),
        Ok(done) => {
            let warnings = String::from_utf8_lossy(&done.stderr);
            assert!(
                warnings.trim().is_empty(),
                "the fake NVTX tool compiles with warnings:\n{warnings}"
            );
            Ok(())
        }
    }
}
