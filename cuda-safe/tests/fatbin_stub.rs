//! `FatbinBuilder` against the stub nvFatbin of `stub/c` (`libnvfatbin_stub.c`, built into
//! the stub driver and loaded through `CUDA_SAFE_LIBNVFATBIN`): the entries reach nvFatbin as
//! given (kind, architecture digits, name, size with PTX's NUL, JIT options) after the options
//! it was created with, in the order added, and the fatbin it lays out loads through
//! `ObjectCode` (the loader's image check walks its CUBIN); each nvFatbin call's failure is
//! `Error::NvFatbin` with the code, nvFatbin's message and what the call was doing, and leaves
//! no handle behind; bad input is refused with no nvFatbin call; a missing library or symbol is
//! `Error::Load` naming what was tried (each in a child process: the library is opened once
//! per process).
//!
//! A `main` of its own (`harness = false`): the stub is built and the variables are set before
//! anything loads a library. Without a C compiler it prints that it skipped (and fails under
//! `CI`).

use cuda_safe_stub as stub;

use std::ffi::{CStr, c_char};
use std::path::Path;
use std::process::{Command, ExitCode};

use cuda_safe::nvfatbin_sys::{LIBNVFATBIN_PATH_ENV, LoadError, nvFatbinResult};
use cuda_safe::{
    CodeKind, CompiledCode, Device, Error, FatbinBuilder, FatbinHost, FatbinOptions, ObjectCode,
    Program, ProgramOptions, Toolchain,
};
use stub::{Installed, Stub};

/// Set in a child: which missing-library case it runs (`missing` or `no-symbols`).
const CHILD: &str = "CUDA_SAFE_FATBIN_STUB_CHILD";
/// What a child prints when its case held.
const CHILD_OK: &str = "FATBIN-STUB-CHILD-OK";

/// The stub nvFatbin's own controls.
struct Controls {
    live: unsafe extern "C" fn() -> i64,
    last: unsafe extern "C" fn() -> *const c_char,
    _library: libloading::Library,
}

impl Controls {
    fn open(path: &Path) -> Self {
        // SAFETY: the stub's only initialisers are the C runtime's; the same file is loaded.
        let library = unsafe { libloading::Library::new(path) }.expect("the stub loads");
        // SAFETY: the stub exports both with these signatures (libnvfatbin_stub.c).
        unsafe {
            Self {
                live: *library.get(b"nvfatbin_stub_live\0").expect("live"),
                last: *library.get(b"nvfatbin_stub_last\0").expect("last"),
                _library: library,
            }
        }
    }

    /// Live nvFatbin handles.
    fn live(&self) -> i64 {
        // SAFETY: no precondition.
        unsafe { (self.live)() }
    }

    /// The last handle's options and entries, as the stub noted them.
    fn last(&self) -> String {
        // SAFETY: a NUL-terminated buffer of the stub's, copied at once.
        unsafe { CStr::from_ptr((self.last)()) }
            .to_string_lossy()
            .into_owned()
    }
}

type Outcome = Result<(), String>;

/// Fails with `what` unless `holds`.
fn ensure(holds: bool, what: impl FnOnce() -> String) -> Outcome {
    if holds { Ok(()) } else { Err(what()) }
}

/// CUBIN, PTX and LTO-IR of one kernel, from the stub NVRTC.
fn compiled() -> [CompiledCode; 3] {
    let options = ProgramOptions::default().arch("sm_90");
    let program = Program::new("extern \"C\" __global__ void twice() {}", options).unwrap();
    [CodeKind::Cubin, CodeKind::Ptx, CodeKind::LtoIr]
        .map(|kind| program.compile(kind).unwrap().into_code())
}

/// The nvFatbin calls the stub logged since the last look.
fn fatbin_calls(stub: &Stub) -> Vec<String> {
    stub.take_log()
        .into_iter()
        .map(|call| call.name)
        .filter(|name| name.starts_with("nvFatbin") && name != "nvFatbinGetErrorString")
        .collect()
}

/// A builder with every kind of entry, from compiled code and from bytes.
fn every_kind(options: FatbinOptions) -> FatbinBuilder {
    let [cubin, ptx, ltoir] = compiled();
    let mut fatbin = FatbinBuilder::new(options).unwrap();
    fatbin
        .add_compiled(&cubin, "sm_90", "twice.cubin")
        .unwrap()
        .add_compiled(&ptx, "compute_90", "twice.ptx")
        .unwrap()
        .add_ltoir(ltoir.bytes(), "90a", "twice.ltoir")
        .unwrap()
        .add_reloc(b"\x7fELF host object".as_slice())
        .unwrap();
    fatbin
}

fn builds_and_loads(stub: &Stub, controls: &Controls) -> Outcome {
    let options = FatbinOptions::default()
        .address_bits(64)
        .compress(false)
        .host(FatbinHost::Linux)
        .ptx_options(vec!["-O3", "-maxrregcount=32"]);
    let fatbin = every_kind(options);
    stub.take_log();
    let built = fatbin.build().map_err(|e| format!("build: {e}"))?;
    let calls = fatbin_calls(stub);
    ensure(
        calls
            == [
                "nvFatbinCreate",
                "nvFatbinAddCubin",
                "nvFatbinAddPTX",
                "nvFatbinAddLTOIR",
                "nvFatbinAddReloc",
                "nvFatbinSize",
                "nvFatbinGet",
                "nvFatbinDestroy",
            ],
        || format!("calls {calls:?}"),
    )?;
    let [cubin, ptx, ltoir] = compiled();
    let expected = format!(
        "create -64 -compress=false -host=linux|cubin 90 twice.cubin {}|ptx 90 twice.ptx {} \
         [-O3 -maxrregcount=32]|ltoir 90a twice.ltoir {} []|reloc -  16",
        cubin.bytes().len(),
        ptx.bytes().len(),
        ltoir.bytes().len()
    );
    let last = controls.last();
    ensure(last == expected, || format!("nvFatbin saw {last:?}"))?;
    ensure(built.kind() == CodeKind::Fatbin, || "not a fatbin".into())?;
    ensure(built.toolchain() == Toolchain::NvFatbin, || {
        "toolchain".into()
    })?;
    ensure(built.options() == fatbin.flags(), || "options".into())?;
    ensure(built.log().is_empty() && !built.from_cache(), || {
        "log".into()
    })?;
    ensure(built.bytes().starts_with(&[0x50, 0xed, 0x55, 0xba]), || {
        "no fatbin magic".into()
    })?;
    // It loads (the image check walks the CUBIN in it) and its kernel is there.
    Device::new(0).unwrap().set_current().unwrap();
    let code = built.load().map_err(|e| format!("load: {e}"))?;
    ensure(code.kind() == Some(CodeKind::Fatbin), || {
        "loaded kind".into()
    })?;
    code.get_kernel("twice")
        .map_err(|e| format!("kernel: {e}"))?;
    ensure(stub.calls("cuLibraryLoadData") == 1, || "one load".into())?;
    // Bytes of the fatbin kind load the same way.
    let again = CompiledCode::new(CodeKind::Fatbin, built.bytes().to_vec(), Vec::new());
    for loaded in [
        ObjectCode::from_compiled(&again).map_err(|e| format!("from_compiled: {e}"))?,
        ObjectCode::from_fatbin(built.bytes()).map_err(|e| format!("from_fatbin: {e}"))?,
    ] {
        ensure(loaded.kind() == Some(CodeKind::Fatbin), || "kind".into())?;
    }
    ensure(controls.live() == 0, || "a handle left alive".into())
}

fn every_call_failure_is_typed_and_leaks_nothing(stub: &Stub, controls: &Controls) -> Outcome {
    const INTERNAL: i32 = 1;
    const INVALID_ARCH: i32 = 9;
    let fatbin = every_kind(FatbinOptions::default());
    let cases = [
        ("nvFatbinCreate", INTERNAL, Some("given the options []")),
        (
            "nvFatbinAddCubin",
            INVALID_ARCH,
            Some("adding the CUBIN \"twice.cubin\" for sm_90"),
        ),
        (
            "nvFatbinAddPTX",
            INTERNAL,
            Some("adding the PTX \"twice.ptx\" for compute_90"),
        ),
        (
            "nvFatbinAddLTOIR",
            INTERNAL,
            Some("adding the LTO-IR \"twice.ltoir\" for sm_90a"),
        ),
        (
            "nvFatbinAddReloc",
            INTERNAL,
            Some("adding the host object's relocatable PTX"),
        ),
        ("nvFatbinSize", INTERNAL, None),
        ("nvFatbinGet", INTERNAL, None),
    ];
    for (api, code, detail) in cases {
        stub.fail(api, code, 1);
        let error = match fatbin.build() {
            Ok(_) => return Err(format!("{api}: built despite the fault")),
            Err(error) => error,
        };
        let Error::NvFatbin {
            api: failed,
            code: got,
            message,
            detail: said,
        } = &error
        else {
            return Err(format!("{api}: {error:?}"));
        };
        ensure(
            *failed == api && *got == nvFatbinResult(code as u32),
            || format!("{api}: {error}"),
        )?;
        ensure(message.starts_with("stub: "), || {
            format!("message {message}")
        })?;
        ensure(said.as_deref() == detail, || {
            format!("{api}: detail {said:?}")
        })?;
        let text = error.to_string();
        let name = if code == INVALID_ARCH {
            "NVFATBIN_ERROR_INVALID_ARCH"
        } else {
            "NVFATBIN_ERROR_INTERNAL"
        };
        ensure(
            text.starts_with(&format!("{api} failed: {name} (stub: ")),
            || text.clone(),
        )?;
        ensure(controls.live() == 0, || {
            format!("{api}: a handle left alive")
        })?;
    }
    // An option nvFatbin does not know: it refuses it and hands out a handle, destroyed here.
    let mut unknown =
        FatbinBuilder::new(FatbinOptions::default().extra(vec!["-no-such-option"])).unwrap();
    unknown.add_ptx(".version 8.0\n", "90", "k.ptx").unwrap();
    let error = unknown.build().unwrap_err();
    let text = error.to_string();
    ensure(
        text == "nvFatbinCreate failed: NVFATBIN_ERROR_UNRECOGNIZED_OPTION (stub: unknown \
                 option), given the options [\"-no-such-option\"]",
        || text.clone(),
    )?;
    ensure(controls.live() == 0, || {
        "the refused handle was kept".into()
    })?;
    // A failed destroy is logged, and the fatbin is still returned.
    stub::take_error_logs();
    stub.fail("nvFatbinDestroy", INTERNAL, 1);
    fatbin
        .build()
        .map_err(|e| format!("build with a failed destroy: {e}"))?;
    let logs = stub::take_error_logs();
    ensure(
        logs.iter()
            .any(|line| line.contains("nvFatbin handle") && line.contains("nvFatbinDestroy")),
        || format!("logs {logs:?}"),
    )?;
    ensure(controls.live() == 1, || "the undestroyed handle".into())
}

fn bad_input_never_reaches_nvfatbin(stub: &Stub) -> Outcome {
    stub.take_log();
    let empty = FatbinBuilder::new(FatbinOptions::default()).unwrap();
    let refused = [
        empty.build().map(|_| ()),
        FatbinBuilder::new(FatbinOptions::default())
            .unwrap()
            .add_cubin(vec![0x7f, b'E', b'L', b'F'], "sm_90", "short.cubin")
            .map(|_| ()),
        FatbinBuilder::new(FatbinOptions::default())
            .unwrap()
            .add_ptx("a\0b", "sm_90", "nul.ptx")
            .map(|_| ()),
        FatbinBuilder::new(FatbinOptions::default())
            .unwrap()
            .add_ptx(".version 8.0\n", "sm90", "arch.ptx")
            .map(|_| ()),
        FatbinBuilder::new(FatbinOptions::default().address_bits(16)).map(|_| ()),
    ];
    for (index, result) in refused.into_iter().enumerate() {
        ensure(matches!(result, Err(Error::InvalidArgument(_))), || {
            format!("case {index}: {result:?}")
        })?;
    }
    let calls = fatbin_calls(stub);
    ensure(calls.is_empty(), || {
        format!("nvFatbin was called: {calls:?}")
    })
}

/// A child's case: the library `CUDA_SAFE_LIBNVFATBIN` names is missing (`missing`) or has
/// none of nvFatbin's functions (`no-symbols`).
fn child(case: &str) -> ExitCode {
    let cubin = {
        let mut header = vec![0u8; 64];
        header[..8].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0x33]);
        header[18] = 190;
        header
    };
    let mut fatbin = FatbinBuilder::new(FatbinOptions::default()).unwrap();
    fatbin.add_cubin(cubin, "sm_90", "k.cubin").unwrap();
    let error = fatbin.build().unwrap_err();
    let path = std::env::var(LIBNVFATBIN_PATH_ENV).unwrap();
    match (case, &error) {
        ("missing", Error::Load(LoadError::LibraryNotFound { .. })) => {
            let text = error.to_string();
            assert!(text.contains("nvFatbin (libnvfatbin)"), "{text}");
            assert!(text.contains(&path), "the path tried is named: {text}");
        }
        ("no-symbols", Error::Load(LoadError::SymbolMissing { symbol, .. })) => {
            assert_eq!(*symbol, "nvFatbinCreate");
            assert!(error.is_symbol_missing() && error.is_not_supported());
        }
        _ => panic!("{case}: {error:?}"),
    }
    println!("{CHILD_OK} {case}: {error}");
    ExitCode::SUCCESS
}

/// Runs this binary as a child for `case` with `CUDA_SAFE_LIBNVFATBIN` set to `library`.
fn run_child(case: &str, library: &str) -> Outcome {
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, case)
        .env(LIBNVFATBIN_PATH_ENV, library)
        .output()
        .map_err(|e| format!("the child did not start: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    ensure(
        output.status.success() && stdout.contains(&format!("{CHILD_OK} {case}")),
        || {
            format!(
                "{case}: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            )
        },
    )
}

fn main() -> ExitCode {
    if let Ok(case) = std::env::var(CHILD) {
        return child(&case);
    }
    let mut controls = None;
    let installed = stub::install_with(&[LIBNVFATBIN_PATH_ENV], |path| {
        let loaded = cuda_safe::nvfatbin_sys::nvfatbin().expect("the stub nvFatbin loads");
        assert_eq!(loaded.library().path(), path, "the stub is what loaded");
        controls = Some(Controls::open(path));
    });
    let stub = match installed {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("fatbin_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    let controls = controls.expect("the stub's nvFatbin controls");
    stub::install_logger();
    let missing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-dir/libnvfatbin.so.13");
    let missing = missing.to_string_lossy().into_owned();
    let cases: [(&str, &dyn Fn() -> Outcome); 5] = [
        ("builds and loads", &|| builds_and_loads(stub, &controls)),
        ("every call's failure", &|| {
            every_call_failure_is_typed_and_leaks_nothing(stub, &controls)
        }),
        ("bad input", &|| bad_input_never_reaches_nvfatbin(stub)),
        ("a missing library", &|| run_child("missing", &missing)),
        ("a library without the symbols", &|| {
            run_child("no-symbols", "libc.so.6")
        }),
    ];
    let mut failed = 0;
    for (name, case) in cases {
        stub.reset();
        let outcome = case().and_then(|()| {
            let (misuses, last) = stub.misuse();
            ensure(misuses == 0, || {
                format!("the crate misused the stub: {last}")
            })
        });
        match outcome {
            Ok(()) => println!("ok   {name}"),
            Err(problem) => {
                failed += 1;
                println!("FAIL {name}: {problem}");
            }
        }
    }
    println!("fatbin_stub: {failed} failure(s)");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
