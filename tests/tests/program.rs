//! NVRTC programs on the GPU machine: every option compiles for every target, errors carry the
//! log and the flags, name expressions lower, in-memory headers are found, warnings come back,
//! and a cache hit compiles nothing.

use std::path::PathBuf;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::cache::{InMemoryProgramCache, ProgramCache};
use cuda_safe::nvrtc_sys::nvrtcResult;
use cuda_safe::{CodeKind, CppStandard, Device, Error, Program, ProgramOptions};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

const TEMPLATED: &str = r#"
template <class T>
__global__ void scale(T* x, T a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"#;

/// What NVRTC compiles to (every [`CodeKind`] but the fatbin, which `FatbinBuilder` builds).
const NVRTC_TARGETS: [CodeKind; 3] = [CodeKind::Ptx, CodeKind::Cubin, CodeKind::LtoIr];

/// Device 0's architecture digits (`"90"`).
fn device_arch() -> String {
    Device::new(0).unwrap().arch().unwrap()
}

/// A fresh directory for `test`'s header files, removed when dropped.
struct HeaderDir(PathBuf);

impl HeaderDir {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("cuda-safe-program-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("on_path.h"), "#define ON_PATH 2.0f\n").unwrap();
        std::fs::write(dir.join("pre.h"), "#define PRE_INCLUDED 1\n").unwrap();
        Self(dir)
    }

    fn path(&self) -> String {
        self.0.to_str().unwrap().to_owned()
    }

    fn pre_h(&self) -> String {
        self.0.join("pre.h").to_str().unwrap().to_owned()
    }
}

impl Drop for HeaderDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Each option set alone, by name.
fn each_option(dir: &HeaderDir) -> Vec<(&'static str, ProgramOptions)> {
    let base = ProgramOptions::default;
    vec![
        ("defaults", base()),
        ("name", base().name("saxpy.cu")),
        ("std", base().std(CppStandard::Cpp17)),
        ("define", base().define("FLAG")),
        ("define_as", base().define_as("SCALE", "2.0f")),
        ("undefine", base().undefine("FLAG")),
        ("include_path", base().include_path(dir.path())),
        ("pre_include", base().pre_include(dir.pre_h())),
        ("header", base().header("unused.h", "#define UNUSED 1\n")),
        (
            "relocatable_device_code",
            base().relocatable_device_code(true),
        ),
        ("debug", base().debug(true)),
        ("lineinfo", base().lineinfo(true)),
        ("fast_math", base().fast_math(true)),
        ("ftz", base().ftz(true)),
        ("prec_div", base().prec_div(false)),
        ("prec_sqrt", base().prec_sqrt(false)),
        ("fma", base().fma(false)),
        ("max_registers", base().max_registers(32)),
        (
            "extra_options",
            base().option("--extra-device-vectorization"),
        ),
    ]
}

/// Every option at once.
fn all_options(dir: &HeaderDir) -> ProgramOptions {
    ProgramOptions::default()
        .name("all.cu")
        .std(CppStandard::Cpp17)
        .relocatable_device_code(true)
        .debug(true)
        .lineinfo(true)
        .fast_math(true)
        .ftz(true)
        .prec_div(false)
        .prec_sqrt(false)
        .fma(true)
        .max_registers(64)
        .caller_digest(b"headers of the test".to_vec())
        .define("FLAG")
        .define_as("SCALE", "2.0f")
        .undefine("OTHER")
        .include_path(dir.path())
        .pre_include(dir.pre_h())
        .header("unused.h", "#define UNUSED 1\n")
        .option("--extra-device-vectorization")
}

/// Checks that `code` is what `target` should be for `arch`.
#[track_caller]
fn check_output(what: &str, target: CodeKind, code: &[u8], arch: &str) {
    assert!(!code.is_empty(), "{what}: empty {target}");
    match target {
        CodeKind::Ptx => {
            assert_eq!(code.last(), Some(&0), "{what}: PTX keeps its NUL");
            let text = std::str::from_utf8(&code[..code.len() - 1]).unwrap();
            assert!(text.contains(".version "), "{what}: {text}");
            assert!(
                text.contains(&format!(".target sm_{arch}")),
                "{what}: {text}"
            );
        }
        CodeKind::Cubin => assert!(code.starts_with(b"\x7fELF"), "{what}: not an ELF"),
        CodeKind::LtoIr => {
            assert!(!code.starts_with(b"\x7fELF"), "{what}: LTO-IR is no ELF");
            assert!(!contains(code, b".target sm_"), "{what}: LTO-IR is not PTX");
        }
        other => panic!("{what}: NVRTC compiles to no {other}"),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

fn every_option_compiles_alone_for_every_target() {
    let arch = device_arch();
    let dir = HeaderDir::new("alone");
    for target in NVRTC_TARGETS {
        for (what, options) in each_option(&dir) {
            let flags = options.to_flags(target).unwrap();
            let program = Program::new(SAXPY, options).unwrap();
            let compiled = program
                .compile(target)
                .unwrap_or_else(|error| panic!("{what} ({target}): {error}"));
            assert_eq!(compiled.kind(), target);
            assert_eq!(compiled.options(), flags, "{what} ({target})");
            check_output(what, target, compiled.bytes(), &arch);
        }
    }
}

fn all_options_together_compile_for_every_target() {
    let arch = device_arch();
    let dir = HeaderDir::new("together");
    let source = format!(
        "#include \"on_path.h\"\n#if !PRE_INCLUDED\n#error no pre-include\n#endif\n{SAXPY}"
    );
    let options = all_options(&dir);
    let program = Program::new(&source, options.clone()).unwrap();
    for target in NVRTC_TARGETS {
        let compiled = program
            .compile(target)
            .unwrap_or_else(|error| panic!("{target}: {error}"));
        assert_eq!(compiled.options(), options.to_flags(target).unwrap());
        check_output("all options", target, compiled.bytes(), &arch);
    }
}

fn every_cpp_standard_compiles() {
    let standards = [
        CppStandard::Cpp03,
        CppStandard::Cpp11,
        CppStandard::Cpp14,
        CppStandard::Cpp17,
        CppStandard::Cpp20,
    ];
    for std in standards {
        let options = ProgramOptions::default().std(std);
        let compiled = Program::new(SAXPY, options)
            .unwrap()
            .compile(CodeKind::Cubin)
            .unwrap_or_else(|error| panic!("{std:?}: {error}"));
        assert!(compiled.options().contains(&std.flag().to_owned()));
    }
    // C++23 arrived in a later NVRTC 13 minor release: an older one refuses the flag itself.
    let options = ProgramOptions::default().std(CppStandard::Cpp23);
    match Program::new(SAXPY, options)
        .unwrap()
        .compile(CodeKind::Cubin)
    {
        Ok(compiled) => assert!(compiled.options().contains(&"--std=c++23".to_owned())),
        Err(Error::Nvrtc { code, .. }) => {
            println!(
                "NVRTC {:?} has no C++23",
                cuda_safe::nvrtc_version().unwrap()
            );
            assert_eq!(code, nvrtcResult::NVRTC_ERROR_INVALID_OPTION);
        }
        Err(other) => panic!("C++23: {other}"),
    }
}

fn a_compile_error_returns_the_log_and_the_options() {
    let source = "extern \"C\" __global__ void k(float* x) {\n    x[0] = not_declared;\n}\n";
    let options = ProgramOptions::default()
        .name("broken.cu")
        .define_as("N", "4");
    let program = Program::new(source, options).unwrap();
    for target in NVRTC_TARGETS {
        let error = program.compile(target).unwrap_err();
        let text = error.to_string();
        let Error::Nvrtc { api, code, log, .. } = error else {
            panic!("not an NVRTC error: {text}");
        };
        assert_eq!(api, "nvrtcCompileProgram");
        assert_eq!(code, nvrtcResult::NVRTC_ERROR_COMPILATION);
        let log = log.expect("a compile error has a log");
        assert!(log.contains("broken.cu(2)"), "{log}");
        assert!(log.contains("error"), "{log}");
        assert!(log.contains("not_declared"), "{log}");
        let options_line = log.lines().last().unwrap();
        assert!(options_line.starts_with("options: "), "{log}");
        assert!(options_line.contains("\"-DN=4\""), "{log}");
        assert!(options_line.contains("--gpu-architecture="), "{log}");
        assert!(
            text.contains("broken.cu(2)"),
            "Display shows the log: {text}"
        );
    }
    // NVRTC and the program stay usable after a failure.
    let fixed = Program::new(SAXPY, ProgramOptions::default()).unwrap();
    fixed.compile(CodeKind::Cubin).unwrap();
}

fn name_expressions_give_lowered_names() {
    let mut program = Program::new(TEMPLATED, ProgramOptions::default()).unwrap();
    program.add_name_expression("scale<float>").unwrap();
    program.add_name_expression("scale<double>").unwrap();
    for target in NVRTC_TARGETS {
        let compiled = program.compile(target).unwrap();
        let float = compiled.lowered_name("scale<float>").unwrap().to_owned();
        let double = compiled.lowered_name("scale<double>").unwrap().to_owned();
        assert!(float.starts_with("_Z"), "{float}");
        assert!(double.starts_with("_Z"), "{double}");
        assert_ne!(float, double);
        assert_eq!(compiled.lowered_name("scale<int>"), None);
        assert_eq!(compiled.code().lowered_names().len(), 2);
        if target != CodeKind::LtoIr {
            // The instantiations exist under their lowered names.
            assert!(contains(compiled.bytes(), float.as_bytes()), "{target}");
            assert!(contains(compiled.bytes(), double.as_bytes()), "{target}");
        }
    }
}

fn an_invalid_name_expression_is_an_error() {
    let mut program = Program::new(TEMPLATED, ProgramOptions::default()).unwrap();
    program
        .add_name_expression("no_such_kernel<float>")
        .unwrap();
    let error = program.compile(CodeKind::Cubin).unwrap_err();
    assert!(matches!(error, Error::Nvrtc { .. }), "{error}");
}

fn in_memory_headers_are_included() {
    let source =
        "#include \"my.h\"\nextern \"C\" __global__ void KERNEL_NAME(float* x) { x[0] = 1.0f; }\n";
    let options = ProgramOptions::default()
        .header(
            "my.h",
            "#pragma once\n#include \"nested/inner.h\"\n#define KERNEL_NAME INNER_NAME\n",
        )
        .header(
            "nested/inner.h",
            "#define INNER_NAME kernel_named_by_a_header\n",
        );
    let compiled = Program::new(source, options)
        .unwrap()
        .compile(CodeKind::Ptx)
        .unwrap();
    let ptx = String::from_utf8_lossy(compiled.bytes());
    assert!(ptx.contains(".entry kernel_named_by_a_header("), "{ptx}");

    let without = Program::new(source, ProgramOptions::default()).unwrap();
    let error = without.compile(CodeKind::Ptx).unwrap_err();
    assert!(error.to_string().contains("my.h"), "{error}");
}

fn warnings_come_back_on_success() {
    let source = "extern \"C\" __global__ void k() { int unused_variable = 1; }\n";
    let compiled = Program::new(source, ProgramOptions::default())
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap();
    assert!(compiled.log().contains("warning"), "{:?}", compiled.log());
    assert!(
        compiled.log().contains("unused_variable"),
        "{:?}",
        compiled.log()
    );
    assert!(!compiled.log().contains('\0'));
}

fn nvrtc_version_and_architectures() {
    let (major, minor) = cuda_safe::nvrtc_version().unwrap();
    assert!(major >= 12, "NVRTC {major}.{minor}");
    assert_eq!(cuda_safe::nvrtc_version().unwrap(), (major, minor));
    let archs = cuda_safe::nvrtc_supported_archs().unwrap();
    assert!(archs.windows(2).all(|pair| pair[0] < pair[1]), "{archs:?}");
    let device: u32 = device_arch().parse().unwrap();
    assert!(archs.contains(&device), "{device} not in {archs:?}");
}

fn the_default_architecture_is_the_devices() {
    let arch = device_arch();
    let program = Program::new(SAXPY, ProgramOptions::default()).unwrap();
    assert_eq!(
        program.flags(CodeKind::Cubin).unwrap(),
        [format!("--gpu-architecture=sm_{arch}")]
    );
    assert_eq!(
        program.flags(CodeKind::Ptx).unwrap(),
        [format!("--gpu-architecture=compute_{arch}")]
    );
}

fn compile_cached_hits_on_the_second_call() {
    let cache = InMemoryProgramCache::new(64 << 20);
    let mut program = Program::new(TEMPLATED, ProgramOptions::default()).unwrap();
    program.add_name_expression("scale<float>").unwrap();
    for target in NVRTC_TARGETS {
        let before = cache.stats().unwrap();
        let cold = program.compile_cached(target, &cache).unwrap();
        let hit = program.compile_cached(target, &cache).unwrap();
        let after = cache.stats().unwrap();
        assert_eq!(after.misses - before.misses, 1, "{target}");
        assert_eq!(after.insertions - before.insertions, 1, "{target}");
        assert_eq!(after.hits - before.hits, 1, "{target}");
        assert_eq!(hit.code(), cold.code());
        assert_eq!(hit.options(), cold.options());
        assert_eq!(hit.log(), "");
        assert_eq!(
            hit.lowered_name("scale<float>"),
            cold.lowered_name("scale<float>")
        );
        assert_eq!(
            cache.get(&program.cache_key(target).unwrap()).unwrap(),
            Some(cold.code().clone())
        );
    }
}

fn failed_compiles_are_not_cached() {
    let cache = InMemoryProgramCache::new(64 << 20);
    let program = Program::new("this is not C++", ProgramOptions::default()).unwrap();
    for _ in 0..2 {
        let error = program.compile_cached(CodeKind::Cubin, &cache).unwrap_err();
        assert!(matches!(error, Error::Nvrtc { .. }), "{error}");
    }
    let stats = cache.stats().unwrap();
    assert_eq!((stats.entries, stats.insertions, stats.misses), (0, 0, 2));
}

fn include_paths_need_a_caller_digest_to_be_cached() {
    let dir = HeaderDir::new("digest");
    let cache = InMemoryProgramCache::new(64 << 20);
    let source = format!("#include \"on_path.h\"\n{SAXPY}");
    let options = ProgramOptions::default().include_path(dir.path());
    let undigested = Program::new(&source, options.clone()).unwrap();
    let error = undigested
        .compile_cached(CodeKind::Cubin, &cache)
        .unwrap_err();
    assert!(error.to_string().contains("caller digest"), "{error}");
    // Compiling without the cache needs no digest.
    undigested.compile(CodeKind::Cubin).unwrap();

    let digested = options.caller_digest(b"sha-256 of on_path.h".to_vec());
    let program = Program::new(&source, digested).unwrap();
    program.compile_cached(CodeKind::Cubin, &cache).unwrap();
    program.compile_cached(CodeKind::Cubin, &cache).unwrap();
    assert_eq!(cache.stats().unwrap().hits, 1);
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    every_option_compiles_alone_for_every_target,
    all_options_together_compile_for_every_target,
    every_cpp_standard_compiles,
    a_compile_error_returns_the_log_and_the_options,
    name_expressions_give_lowered_names,
    an_invalid_name_expression_is_an_error,
    in_memory_headers_are_included,
    warnings_come_back_on_success,
    nvrtc_version_and_architectures,
    the_default_architecture_is_the_devices,
    compile_cached_hits_on_the_second_call,
    failed_compiles_are_not_cached,
    include_paths_need_a_caller_digest_to_be_cached,
];
