//! The toolchain features against the stub nvJitLink and NVRTC of `stub/c`:
//! - an incremental link (`-r`) and LTO-IR output are refused, naming the nvJitLink they need
//!   and the one loaded, before any handle is made; on a new enough nvJitLink `-r` reaches
//!   `nvJitLinkCreate`, the CUBIN comes back, and (under the CUDA 13 ABI) the linked LTO-IR
//!   links again;
//! - precompiled headers: `PchStatus` after each compile that creates one, a heap too small
//!   and the retry after growing it, no status call for a compile that creates none;
//! - NVRTC's bundled headers refused on the stub's NVRTC 12.9, before any program; the
//!   toolkit's folder found through `CUDA_SAFE_CUDA_INCLUDE` and keyed by its files.
//!
//! A `main` of its own (`harness = false`): the stub is built and the library variables are set
//! before anything else runs. Prints one line per case; exits nonzero on any failure.

use cuda_safe_stub as stub;

use std::ffi::{CStr, c_char, c_uint};
use std::path::Path;
use std::process::ExitCode;

use cuda_safe::cache::InMemoryProgramCache;
use cuda_safe::{
    CodeKind, CudaHeaders, Error, LinkInput, LinkInputKind, Linker, LinkerBackend, LinkerOptions,
    Pch, PchStatus, Program, ProgramOptions, nvrtc_pch_heap_size, nvrtc_set_pch_heap_size,
};
use stub::{Installed, Stub};

type Outcome = Result<(), String>;

/// The stub nvJitLink's own controls.
struct JitLink {
    set_version: unsafe extern "C" fn(c_uint, c_uint),
    last_options: unsafe extern "C" fn() -> *const c_char,
    _library: libloading::Library,
}

impl JitLink {
    fn open(path: &Path) -> Self {
        // SAFETY: the stub's initialisers are the C runtime's only; this is the library the
        // variables name.
        let library = unsafe { libloading::Library::new(path) }.expect("the stub loads");
        // SAFETY: the stub exports both with these C signatures (libnvjitlink_stub.c); the
        // copies stay valid while `_library` lives.
        unsafe {
            Self {
                set_version: *library.get(b"stub_nvjitlink_set_version\0").unwrap(),
                last_options: *library.get(b"stub_nvjitlink_last_options\0").unwrap(),
                _library: library,
            }
        }
    }

    fn set_version(&self, major: u32, minor: u32) {
        // SAFETY: plain integers; the stub only stores them.
        unsafe { (self.set_version)(major, minor) }
    }

    fn last_options(&self) -> String {
        // SAFETY: the stub's static buffer, NUL-terminated; copied at once.
        unsafe { CStr::from_ptr((self.last_options)()) }
            .to_string_lossy()
            .into_owned()
    }
}

fn check(condition: bool, what: impl FnOnce() -> String) -> Outcome {
    if condition { Ok(()) } else { Err(what()) }
}

fn lto(incremental: bool) -> LinkerOptions {
    LinkerOptions::default()
        .arch("sm_90")
        .lto(true)
        .incremental(incremental)
        .backend(LinkerBackend::NvJitLink)
}

fn linker(options: LinkerOptions) -> Linker {
    let mut linker = Linker::new(options).expect("valid options");
    linker.add(LinkInput::from_bytes(LinkInputKind::LtoIr, "a.ltoir", b"IR".to_vec()).unwrap());
    linker
}

/// `error` is `Unsupported` and its text holds every one of `needles`.
fn unsupported(error: &Error, needles: &[&str]) -> Outcome {
    let text = error.to_string();
    check(error.is_not_supported(), || {
        format!("not Unsupported: {text}")
    })?;
    match needles.iter().find(|needle| !text.contains(**needle)) {
        Some(missing) => Err(format!("{missing:?} not in {text}")),
        None => Ok(()),
    }
}

fn old_nvjitlink_refuses_by_version(stub: &Stub, jit: &JitLink) -> Outcome {
    jit.set_version(13, 0);
    stub.reset();
    let error = linker(lto(true)).link(CodeKind::Cubin).unwrap_err();
    unsupported(
        &error,
        &["-r", "needs nvJitLink 13.2", "nvJitLink 13.0 is loaded"],
    )?;
    let error = linker(lto(false)).link(CodeKind::LtoIr).unwrap_err();
    unsupported(
        &error,
        &[
            "nvJitLinkGetLinkedLTOIR",
            "needs nvJitLink 13.3",
            "13.0 is loaded",
        ],
    )?;
    check(stub.calls("nvJitLinkCreate") == 0, || {
        "a handle was made for a refused link".into()
    })?;
    jit.set_version(13, 2);
    let error = linker(lto(true)).link(CodeKind::LtoIr).unwrap_err();
    unsupported(
        &error,
        &["needs nvJitLink 13.3", "nvJitLink 13.2 is loaded"],
    )
}

fn incremental_link_passes_r(stub: &Stub, jit: &JitLink) -> Outcome {
    jit.set_version(13, 2);
    stub.reset();
    let linked = linker(lto(true))
        .link(CodeKind::Cubin)
        .map_err(|e| e.to_string())?;
    let options = jit.last_options();
    check(options == "-arch=sm_90 -lto -r", || {
        format!("options {options:?}")
    })?;
    check(linked.bytes().get(16) == Some(&1), || {
        "the stub's incremental CUBIN is no ET_REL ELF".into()
    })?;
    check(stub.calls("nvJitLinkDestroy") == 1, || {
        "the handle leaked".into()
    })?;
    let driver = Linker::new(
        LinkerOptions::default()
            .backend(LinkerBackend::Driver)
            .incremental(true)
            .arch("sm_90"),
    )
    .unwrap();
    let mut driver = driver;
    driver
        .add(LinkInput::from_bytes(LinkInputKind::Ptx, "a.ptx", b".version 8.5".to_vec()).unwrap());
    let error = driver.link(CodeKind::Cubin).unwrap_err();
    unsupported(&error, &["`incremental`", "needs nvJitLink"])
}

fn ltoir_output_links_again(stub: &Stub, jit: &JitLink) -> Outcome {
    jit.set_version(13, 3);
    stub.reset();
    let partial = linker(lto(true)).link(CodeKind::LtoIr);
    if cuda_safe::nvjitlink_sys::ABI_MAJOR < 13 {
        let error = partial.unwrap_err();
        return unsupported(&error, &["cuda-13 feature"]);
    }
    let partial = partial.map_err(|e| e.to_string())?;
    check(partial.kind() == CodeKind::LtoIr, || {
        format!("a {} image", partial.kind())
    })?;
    check(partial.bytes().starts_with(b"LINKED IR"), || {
        format!("bytes {:?}", partial.bytes())
    })?;
    let mut last = Linker::new(lto(false)).unwrap();
    last.add_compiled(partial.code(), "partial.ltoir")
        .map_err(|e| e.to_string())?;
    let linked = last.link(CodeKind::Cubin).map_err(|e| e.to_string())?;
    check(linked.bytes().get(16) == Some(&2), || {
        "no ET_EXEC CUBIN".into()
    })?;
    check(stub.calls("nvJitLinkGetLinkedLTOIR") == 1, || {
        "the LTO-IR was not read once".into()
    })
}

fn pch_program(pch: Option<Pch>) -> Program {
    let mut options = ProgramOptions::default().arch("sm_90");
    options.pch = pch;
    Program::new("extern \"C\" __global__ void twice() {}", options).unwrap()
}

fn pch_status_and_heap_retry(stub: &Stub, _: &JitLink) -> Outcome {
    stub.reset();
    let create = pch_program(Some(Pch::Create("k.pch".into())));
    let first = create.compile(CodeKind::Cubin).map_err(|e| e.to_string())?;
    check(first.pch_status() == Some(PchStatus::Created), || {
        format!("{:?}", first.pch_status())
    })?;
    nvrtc_set_pch_heap_size(4096).map_err(|e| e.to_string())?;
    let small = create.compile(CodeKind::Cubin).map_err(|e| e.to_string())?;
    let Some(PchStatus::HeapExhausted { required }) = small.pch_status() else {
        return Err(format!("a small heap gave {:?}", small.pch_status()));
    };
    check(required == 1 << 20, || format!("required {required}"))?;
    nvrtc_set_pch_heap_size(required).map_err(|e| e.to_string())?;
    check(nvrtc_pch_heap_size().ok() == Some(required), || {
        "the heap size".into()
    })?;
    let retried = create.compile(CodeKind::Cubin).map_err(|e| e.to_string())?;
    check(retried.pch_status() == Some(PchStatus::Created), || {
        format!("the retry gave {:?}", retried.pch_status())
    })?;
    let automatic = pch_program(Some(Pch::Automatic)).compile(CodeKind::Cubin);
    check(
        automatic.as_ref().ok().and_then(|c| c.pch_status()) == Some(PchStatus::Created),
        || format!("automatic PCH: {automatic:?}"),
    )?;
    let before = stub.calls("nvrtcGetPCHCreateStatus");
    for pch in [None, Some(Pch::Use("k.pch".into()))] {
        let compiled = pch_program(pch)
            .compile(CodeKind::Cubin)
            .map_err(|e| e.to_string())?;
        check(compiled.pch_status().is_none(), || {
            "a status without creating".into()
        })?;
    }
    check(stub.calls("nvrtcGetPCHCreateStatus") == before, || {
        "the status was asked of a compile that creates no PCH".into()
    })?;
    let error = nvrtc_set_pch_heap_size(0).unwrap_err();
    check(matches!(error, Error::InvalidArgument(_)), || {
        error.to_string()
    })
}

fn bundled_headers_need_nvrtc_13_3(stub: &Stub, _: &JitLink) -> Outcome {
    stub.reset();
    let dir = tempfile::tempdir().unwrap();
    let options = ProgramOptions::default()
        .arch("sm_90")
        .cuda_headers(CudaHeaders::Bundled(Some(
            dir.path().join("h").display().to_string(),
        )));
    let program = Program::new("__global__ void k() {}", options).unwrap();
    let error = program.compile(CodeKind::Cubin).unwrap_err();
    unsupported(
        &error,
        &[
            "--use-bundled-headers",
            "needs NVRTC 13.3",
            "NVRTC 12.9 is loaded",
        ],
    )?;
    check(stub.calls("nvrtcCreateProgram") == 0, || {
        "a program was made".into()
    })?;
    check(!dir.path().join("h").exists(), || {
        "the folder was made".into()
    })
}

fn toolkit_headers_are_found_and_keyed(stub: &Stub, _: &JitLink) -> Outcome {
    stub.reset();
    let include = std::env::var("CUDA_SAFE_CUDA_INCLUDE").expect("set in main");
    let options = ProgramOptions::default()
        .arch("sm_90")
        .cuda_headers(CudaHeaders::Toolkit);
    let program = Program::new("#include <cuda_fp16.h>\n__global__ void k() {}", options).unwrap();
    let flags = program.flags(CodeKind::Cubin).map_err(|e| e.to_string())?;
    let wanted = format!("--include-path={include}");
    check(flags.contains(&wanted), || {
        format!("{wanted} not in {flags:?}")
    })?;
    let cache = InMemoryProgramCache::new(1 << 20);
    let cold = program
        .compile_cached(CodeKind::Cubin, &cache)
        .map_err(|e| e.to_string())?;
    let hit = program
        .compile_cached(CodeKind::Cubin, &cache)
        .map_err(|e| e.to_string())?;
    check(!cold.from_cache() && hit.from_cache(), || {
        "no cache hit".into()
    })?;
    check(stub.calls("nvrtcCompileProgram") == 1, || {
        "compiled twice".into()
    })
}

fn main() -> ExitCode {
    let include = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(include.path().join("cuda_fp16.h"), "#pragma once\n").unwrap();
    // SAFETY: first in `main`, before any other thread exists.
    unsafe { std::env::set_var("CUDA_SAFE_CUDA_INCLUDE", include.path()) };
    let mut jit = None;
    let variables = [cuda_safe::nvjitlink_sys::LIBNVJITLINK_PATH_ENV];
    let stub = match stub::install_with(&variables, |path| {
        let loaded = cuda_safe::nvjitlink_sys::nvjitlink().map(|n| n.library().path().to_owned());
        assert_eq!(loaded.expect("the stub nvJitLink loads"), path);
        jit = Some(JitLink::open(path));
    }) {
        Installed::Ready(stub) => stub,
        Installed::Skipped(reason) => {
            println!("toolchain_stub: skipped: {reason}");
            return ExitCode::SUCCESS;
        }
    };
    let jit = jit.expect("the load ran");
    type Case = fn(&Stub, &JitLink) -> Outcome;
    let cases: [(&str, Case); 6] = [
        (
            "an old nvJitLink refuses by version",
            old_nvjitlink_refuses_by_version,
        ),
        ("an incremental link passes -r", incremental_link_passes_r),
        ("LTO-IR output links again", ltoir_output_links_again),
        ("PCH status and the heap retry", pch_status_and_heap_retry),
        (
            "bundled headers need NVRTC 13.3",
            bundled_headers_need_nvrtc_13_3,
        ),
        (
            "toolkit headers are found and keyed",
            toolkit_headers_are_found_and_keyed,
        ),
    ];
    let mut failed = 0;
    for (name, case) in cases {
        match case(stub, &jit) {
            Ok(()) => println!("ok   {name}"),
            Err(problem) => {
                failed += 1;
                println!("FAIL {name}: {problem}");
            }
        }
    }
    let (misuses, last) = stub.misuse();
    if misuses != 0 {
        println!("FAIL the crate misused a library: {last}");
        failed += 1;
    }
    println!("toolchain_stub: {failed} failure(s)");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
