//! The toolchain rows on a GPU: incremental links and LTO-IR output (nvJitLink 13.2 and 13.3:
//! run on a new enough nvJitLink, the typed refusal checked otherwise), precompiled headers
//! (created, an exhausted heap and the retry, used, automatic), CUDA headers from NVRTC's bundled copy
//! (13.3) or the toolkit, and line and debug information in compiled and linked CUBINs, read
//! from their ELF section names.

use std::path::{Path, PathBuf};

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::cache::{InMemoryProgramCache, ProgramCache};
use cuda_safe::{
    CodeKind, CompiledCode, CompiledProgram, CudaHeaders, Device, Error, LaunchConfig, Linker,
    LinkerOptions, ObjectCode, Pch, PchStatus, Program, ProgramOptions, launch, nvjitlink_version,
    nvrtc_pch_heap_size, nvrtc_set_pch_heap_size, nvrtc_version,
};

/// The unit that defines the device function.
const MIX: &str = r#"
__device__ unsigned mix(unsigned x) {
    x ^= x >> 16; x *= 0x7feb352dU;
    x ^= x >> 15; x *= 0x846ca68bU;
    return x ^ (x >> 16);
}
"#;

/// The unit whose kernel calls it (unresolved until `MIX` joins).
const KERNEL: &str = r#"
__device__ unsigned mix(unsigned x);
extern "C" __global__ void hash(unsigned* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = mix(x[i] + i);
}
"#;

const N: u32 = 4096;

fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// Runs `hash` of `code` over 0..N and checks every word against the CPU.
fn run_hash(code: &ObjectCode) {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let input: Vec<u32> = (0..N).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut x = device
        .default_memory_resource()
        .unwrap()
        .allocate_from_host(&input, &stream)
        .unwrap();
    let kernel = code.get_kernel("hash").unwrap();
    let config = LaunchConfig::for_num_elements(N as usize, 256).unwrap();
    // SAFETY: hash(unsigned*, unsigned) updates the first N words of its buffer, which holds N.
    unsafe { launch(&stream, &config, &kernel, (&mut x, N)).unwrap() };
    let out = x.to_vec::<u32>().unwrap();
    for (i, (&got, &was)) in out.iter().zip(&input).enumerate() {
        assert_eq!(got, mix(was.wrapping_add(i as u32)), "word {i}");
    }
}

fn compile(source: &str, options: ProgramOptions, target: CodeKind) -> CompiledCode {
    Program::new(source, options)
        .unwrap()
        .compile(target)
        .unwrap()
        .into_code()
}

fn rdc() -> ProgramOptions {
    ProgramOptions::default().relocatable_device_code(true)
}

/// `error` is `Unsupported` and names every one of `needles`.
#[track_caller]
fn assert_refused(error: &Error, needles: &[&str]) {
    assert!(error.is_not_supported(), "not Unsupported: {error}");
    let text = error.to_string();
    for needle in needles {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
}

/// ELF's section names and its `e_type`, read from a 64-bit little-endian image.
struct Elf {
    kind: u16,
    sections: Vec<String>,
}

impl Elf {
    fn read(bytes: &[u8]) -> Self {
        assert!(
            bytes.starts_with(b"\x7fELF\x02\x01"),
            "not an ELF64 LE image"
        );
        let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| {
            usize::try_from(u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())).unwrap()
        };
        let (table, entry, count, names) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
        let header = |index: u16| table + usize::from(index) * usize::from(entry);
        let strings = u64_at(header(names) + 0x18);
        let sections = (0..count)
            .map(|index| {
                let start = strings + u32_at(header(index)) as usize;
                let end = bytes[start..].iter().position(|&b| b == 0).unwrap() + start;
                String::from_utf8_lossy(&bytes[start..end]).into_owned()
            })
            .collect();
        Self {
            kind: u16_at(0x10),
            sections,
        }
    }

    fn has(&self, name: &str) -> bool {
        self.sections.iter().any(|section| section == name)
    }
}

/// ELF's `ET_REL` and `ET_EXEC`.
const RELOCATABLE: u16 = 1;
const EXECUTABLE: u16 = 2;

fn an_incremental_link_resolves_in_a_second_link() {
    let options = LinkerOptions::default().lto(true).incremental(true);
    let mut partial = Linker::new(options).unwrap();
    partial
        .add_compiled(&compile(KERNEL, rdc(), CodeKind::LtoIr), "kernel.ltoir")
        .unwrap();
    let (major, minor) = nvjitlink_version().unwrap();
    println!("nvJitLink {major}.{minor}");
    let linked = partial.link(CodeKind::Cubin);
    if (major, minor) < (13, 2) {
        let error = linked.unwrap_err();
        assert_refused(
            &error,
            &[
                "-r",
                "needs nvJitLink 13.2",
                &format!("nvJitLink {major}.{minor} is loaded"),
            ],
        );
        return;
    }
    let linked = linked.unwrap();
    assert!(linked.options().iter().any(|flag| flag == "-r"));
    assert_eq!(
        Elf::read(linked.bytes()).kind,
        RELOCATABLE,
        "-r gives a relocatable CUBIN"
    );
    let mut last = Linker::new(LinkerOptions::default()).unwrap();
    last.add_compiled(linked.code(), "partial.cubin").unwrap();
    last.add_compiled(&compile(MIX, rdc(), CodeKind::Cubin), "mix.cubin")
        .unwrap();
    let image = last.link(CodeKind::Cubin).unwrap();
    assert_eq!(Elf::read(image.bytes()).kind, EXECUTABLE);
    run_hash(&image.load().unwrap());
}

fn ltoir_output_links_again() {
    let options = LinkerOptions::default().lto(true).incremental(true);
    let mut partial = Linker::new(options).unwrap();
    partial
        .add_compiled(&compile(KERNEL, rdc(), CodeKind::LtoIr), "kernel.ltoir")
        .unwrap();
    let (major, minor) = nvjitlink_version().unwrap();
    let linked = partial.link(CodeKind::LtoIr);
    if (major, minor) < (13, 3) {
        let error = linked.unwrap_err();
        assert_refused(
            &error,
            &[
                "LTO-IR",
                "needs nvJitLink 13.3",
                &format!("nvJitLink {major}.{minor} is loaded"),
            ],
        );
        return;
    }
    if cuda_safe::nvjitlink_sys::ABI_MAJOR < 13 {
        assert_refused(&linked.unwrap_err(), &["cuda-13 feature"]);
        return;
    }
    let ir: CompiledProgram = linked.unwrap();
    assert_eq!(ir.kind(), CodeKind::LtoIr);
    assert!(!ir.bytes().is_empty());
    let mut last = Linker::new(LinkerOptions::default().lto(true)).unwrap();
    last.add_compiled(ir.code(), "partial.ltoir").unwrap();
    last.add_compiled(&compile(MIX, rdc(), CodeKind::LtoIr), "mix.ltoir")
        .unwrap();
    run_hash(&last.link(CodeKind::Cubin).unwrap().load().unwrap());
}

/// A folder of this test's own under the temporary folder, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("cuda-safe-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn text(&self) -> String {
        self.0.to_str().unwrap().to_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A header worth precompiling: templates instantiated for several types.
const COMMON_H: &str = r#"#pragma once
template <class T, int N> struct Poly {
    T c[N];
    __device__ T at(T x) const { T r = 0; for (int i = N - 1; i >= 0; --i) r = r * x + c[i]; return r; }
};
template <class T> __device__ T twice(T x) { return x + x; }
template struct Poly<float, 4>; template struct Poly<double, 8>; template struct Poly<int, 3>;
"#;

const PCH_KERNEL: &str = r#"#include "common.h"
extern "C" __global__ void poly(float* x) {
    Poly<float, 4> p = {{1.0f, 2.0f, 3.0f, 4.0f}};
    x[threadIdx.x] = twice(p.at(x[threadIdx.x]));
}
"#;

/// `common.h` in a folder of its own, found through an include path.
fn header_dir() -> Scratch {
    let dir = Scratch::new("pch-header");
    std::fs::write(dir.path().join("common.h"), COMMON_H).unwrap();
    dir
}

fn pch_options(pch: Pch, headers: &Scratch, dir: &Scratch) -> ProgramOptions {
    ProgramOptions::default()
        .include_path(headers.text())
        .pch(pch)
        .pch_dir(dir.text())
}

/// Runs `poly` over 32 floats and checks them.
fn run_poly(compiled: &CompiledProgram) {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let input: Vec<f32> = (0..32).map(|i| i as f32 / 8.0).collect();
    let mut x = device
        .default_memory_resource()
        .unwrap()
        .allocate_from_host(&input, &stream)
        .unwrap();
    let kernel = compiled.load().unwrap().get_kernel("poly").unwrap();
    // SAFETY: poly(float*) updates one float per thread: 32 threads, 32 floats.
    unsafe { launch(&stream, &LaunchConfig::new(1, 32), &kernel, (&mut x,)).unwrap() };
    for (got, was) in x.to_vec::<f32>().unwrap().iter().zip(&input) {
        let want = 2.0 * (((4.0 * was + 3.0) * was + 2.0) * was + 1.0);
        assert!(
            (got - want).abs() <= 1e-4 * want.abs().max(1.0),
            "{got} != {want}"
        );
    }
}

fn precompiled_headers_are_created_used_and_retried() {
    let (major, minor) = nvrtc_version().unwrap();
    let (headers, dir) = (header_dir(), Scratch::new("pch"));
    let create = Program::new(
        PCH_KERNEL,
        pch_options(Pch::Create("common.pch".into()), &headers, &dir),
    )
    .unwrap();
    if (major, minor) < (12, 8) {
        let error = create.compile(CodeKind::Cubin).unwrap_err();
        assert_refused(
            &error,
            &[
                "needs NVRTC 12.8",
                &format!("NVRTC {major}.{minor} is loaded"),
            ],
        );
        return;
    }
    let heap = nvrtc_pch_heap_size().unwrap();
    println!("NVRTC {major}.{minor}, PCH heap {heap} bytes");
    // A heap of one page holds no PCH of this header: the compile succeeds, the PCH does not.
    nvrtc_set_pch_heap_size(4096).unwrap();
    let small = create.compile(CodeKind::Cubin).unwrap();
    run_poly(&small);
    let Some(PchStatus::HeapExhausted { required }) = small.pch_status() else {
        panic!("a one-page heap gave {:?}", small.pch_status());
    };
    assert!(required > 4096, "{required}");
    nvrtc_set_pch_heap_size(required).unwrap();
    assert!(nvrtc_pch_heap_size().unwrap() >= required);
    let created = create.compile(CodeKind::Cubin).unwrap();
    assert_eq!(
        created.pch_status(),
        Some(PchStatus::Created),
        "{}",
        created.log()
    );
    let file = dir.path().join("common.pch");
    let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    assert!(size > 0, "no PCH at {}", file.display());

    let used = Program::new(
        PCH_KERNEL,
        pch_options(Pch::Use("common.pch".into()), &headers, &dir),
    )
    .unwrap()
    .compile(CodeKind::Cubin)
    .unwrap();
    assert_eq!(used.pch_status(), None, "a used PCH creates none");
    run_poly(&used);
    let plain = ProgramOptions::default().include_path(headers.text());
    let without = Program::new(PCH_KERNEL, plain)
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap();
    println!(
        "PCH of {size} bytes; the CUBIN with it is {} the one without",
        if used.bytes() == without.bytes() {
            "identical to"
        } else {
            "not identical to"
        }
    );

    let automatic_dir = Scratch::new("pch-auto");
    let automatic = Program::new(
        PCH_KERNEL,
        pch_options(Pch::Automatic, &headers, &automatic_dir),
    )
    .unwrap()
    .compile(CodeKind::Cubin)
    .unwrap();
    run_poly(&automatic);
    let status = automatic.pch_status().expect("automatic PCH has a status");
    let files = std::fs::read_dir(automatic_dir.path()).unwrap().count();
    println!("automatic PCH: {status:?}, {files} file(s)");
    if status == PchStatus::Created {
        assert!(files > 0, "automatic PCH created no file");
    }
    if heap > 0 {
        nvrtc_set_pch_heap_size(heap).unwrap();
    }
}

/// A kernel that needs CUDA's own `cuda_fp16.h`.
const HALF_KERNEL: &str = r#"#include <cuda_fp16.h>
extern "C" __global__ void halves(float* x) {
    __half h = __float2half(x[threadIdx.x]);
    x[threadIdx.x] = __half2float(__hmul(h, __float2half(0.5f)));
}
"#;

fn run_halves(compiled: &CompiledProgram) {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let mut x = device
        .default_memory_resource()
        .unwrap()
        .allocate_from_host(&[4.0f32; 32], &stream)
        .unwrap();
    let kernel = compiled.load().unwrap().get_kernel("halves").unwrap();
    // SAFETY: halves(float*) updates one float per thread: 32 threads, 32 floats.
    unsafe { launch(&stream, &LaunchConfig::new(1, 32), &kernel, (&mut x,)).unwrap() };
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0f32; 32]);
}

fn cuda_headers_come_from_nvrtc_or_the_toolkit() {
    let (major, minor) = nvrtc_version().unwrap();
    let dir = Scratch::new("bundled");
    let install = dir.path().join("headers").to_str().unwrap().to_owned();
    let bundled = ProgramOptions::default().cuda_headers(CudaHeaders::Bundled(Some(install)));
    let compiled = Program::new(HALF_KERNEL, bundled)
        .unwrap()
        .compile(CodeKind::Cubin);
    if (major, minor) < (13, 3) {
        let error = compiled.unwrap_err();
        assert_refused(
            &error,
            &[
                "needs NVRTC 13.3",
                &format!("NVRTC {major}.{minor} is loaded"),
            ],
        );
    } else {
        run_halves(&compiled.unwrap());
        assert!(
            dir.path().join("headers/cuda_fp16.h").is_file(),
            "no bundled cuda_fp16.h"
        );
    }

    let toolkit = ProgramOptions::default().cuda_headers(CudaHeaders::Toolkit);
    let program = Program::new(HALF_KERNEL, toolkit).unwrap();
    match program.flags(CodeKind::Cubin) {
        Ok(flags) => println!("toolkit headers: {flags:?}"),
        Err(error) => {
            assert_refused(&error, &["cuda_fp16.h", "/usr/local/cuda/include"]);
            return;
        }
    }
    let cache = InMemoryProgramCache::new(16 << 20);
    let cold = program.compile_cached(CodeKind::Cubin, &cache).unwrap();
    run_halves(&cold);
    assert!(
        program
            .compile_cached(CodeKind::Cubin, &cache)
            .unwrap()
            .from_cache()
    );
    assert_eq!(cache.stats().unwrap().hits, 1);
}

const LINES: &str = r#"
extern "C" __global__ void lines(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float y = x[i];
        x[i] = y * y + 1.0f;
    }
}
"#;

fn sections(options: ProgramOptions) -> (Elf, Vec<String>) {
    let compiled = Program::new(LINES, options)
        .unwrap()
        .compile(CodeKind::Cubin)
        .unwrap();
    (Elf::read(compiled.bytes()), compiled.options().to_vec())
}

fn lineinfo_and_debug_reach_nvrtc_and_the_cubin() {
    let (plain, _) = sections(ProgramOptions::default());
    let (lined, flags) = sections(ProgramOptions::default().lineinfo(true));
    let (debug, debug_flags) = sections(ProgramOptions::default().debug(true));
    println!(
        "plain: {:?}\nlineinfo: {:?}\ndebug: {:?}",
        plain.sections, lined.sections, debug.sections
    );
    assert!(
        flags.iter().any(|f| f == "--generate-line-info"),
        "{flags:?}"
    );
    assert!(
        debug_flags.iter().any(|f| f == "--device-debug"),
        "{debug_flags:?}"
    );
    assert!(
        !plain.has(".debug_line") && !plain.has(".debug_info"),
        "{:?}",
        plain.sections
    );
    assert!(lined.has(".debug_line"), "{:?}", lined.sections);
    assert!(
        debug.has(".debug_info") && debug.has(".debug_line"),
        "{:?}",
        debug.sections
    );
}

/// The hash kernel linked from two LTO-IR units compiled with `options`, linked with `linker`.
fn linked(options: ProgramOptions, linker: LinkerOptions) -> Elf {
    let mut link = Linker::new(linker.lto(true)).unwrap();
    let units = [(MIX, "mix.ltoir"), (KERNEL, "kernel.ltoir")];
    for (source, name) in units {
        let code = compile(
            source,
            options.clone().relocatable_device_code(true),
            CodeKind::LtoIr,
        );
        link.add_compiled(&code, name).unwrap();
    }
    let image = link.link(CodeKind::Cubin).unwrap();
    run_hash(&image.load().unwrap());
    Elf::read(image.bytes())
}

fn a_linked_program_keeps_line_info() {
    let plain = linked(ProgramOptions::default(), LinkerOptions::default());
    let lined = linked(
        ProgramOptions::default().lineinfo(true),
        LinkerOptions::default().lineinfo(true),
    );
    println!(
        "linked: {:?}\nlinked with -lineinfo: {:?}",
        plain.sections, lined.sections
    );
    assert!(!plain.has(".debug_line"), "{:?}", plain.sections);
    assert!(lined.has(".debug_line"), "{:?}", lined.sections);
}

fn a_linked_program_keeps_debug_info() {
    let debug = linked(
        ProgramOptions::default().debug(true),
        LinkerOptions::default().debug(true),
    );
    println!("linked with -g: {:?}", debug.sections);
    assert!(debug.has(".debug_info"), "{:?}", debug.sections);
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    an_incremental_link_resolves_in_a_second_link,
    ltoir_output_links_again,
    precompiled_headers_are_created_used_and_retried,
    cuda_headers_come_from_nvrtc_or_the_toolkit,
    lineinfo_and_debug_reach_nvrtc_and_the_cubin,
    a_linked_program_keeps_line_info,
    a_linked_program_keeps_debug_info,
];
