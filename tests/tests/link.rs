//! The linker on a GPU: two LTO-IR units linked into one CUBIN that matches the whole-program
//! kernel, link errors with their log, every input kind (LTO-IR, PTX and CUBIN from NVRTC;
//! fatbin, host object and archive from the toolkit's nvcc when it is there), the driver-linker
//! fallback, and cached links (in this process and in a fresh one).

use std::path::{Path, PathBuf};
use std::process::Command;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::cache::{FileStreamProgramCache, InMemoryProgramCache, ProgramCache};
use cuda_safe::{
    CodeKind, CompiledCode, Device, Error, LaunchConfig, LinkInput, LinkInputKind, Linker,
    LinkerBackend, LinkerOptions, ObjectCode, Program, ProgramOptions, launch,
};

/// The translation unit that defines the device function.
const MIX: &str = r#"
__device__ unsigned mix(unsigned x) {
    x ^= x >> 16; x *= 0x7feb352dU;
    x ^= x >> 15; x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}
"#;

/// The translation unit whose kernel calls it.
const KERNEL: &str = r#"
__device__ unsigned mix(unsigned x);
extern "C" __global__ void hash(const unsigned* in, unsigned* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = mix(in[i] ^ i);
}
"#;

/// A kernel calling a function nothing defines.
const UNDEFINED: &str = r#"
__device__ unsigned missing_function(unsigned x);
extern "C" __global__ void broken(unsigned* x) { x[0] = missing_function(x[0]); }
"#;

const N: u32 = 1 << 16;

/// The CPU's answer.
fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

fn input() -> Vec<u32> {
    (0..N).map(|i| i.wrapping_mul(2_654_435_761)).collect()
}

fn expected() -> Vec<u32> {
    input()
        .iter()
        .enumerate()
        .map(|(i, &x)| mix(x ^ i as u32))
        .collect()
}

fn rdc() -> ProgramOptions {
    ProgramOptions::default().relocatable_device_code(true)
}

fn compile(source: &str, options: ProgramOptions, target: CodeKind) -> CompiledCode {
    Program::new(source, options)
        .unwrap()
        .compile(target)
        .unwrap()
        .into_code()
}

fn lto() -> LinkerOptions {
    LinkerOptions::default().lto(true)
}

/// Runs `hash` from `code` on the input and returns the output.
fn run(code: &ObjectCode) -> Vec<u32> {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let kernel = code.get_kernel("hash").unwrap();
    let data = pool.allocate_from_host(&input(), &stream).unwrap();
    let mut out = pool.allocate(4 * N as usize, &stream).unwrap();
    let config = LaunchConfig::for_num_elements(N as usize, 256).unwrap();
    // SAFETY: hash(const unsigned*, unsigned*, unsigned) reads and writes N words of each.
    unsafe { launch(&stream, &config, &kernel, (&data, &mut out, N)).unwrap() };
    out.to_vec::<u32>().unwrap()
}

fn the_lto_link_runs_and_matches_the_whole_program_kernel() {
    let mut linker = Linker::new(lto()).unwrap();
    linker
        .add_compiled(&compile(MIX, rdc(), CodeKind::LtoIr), "mix.ltoir")
        .unwrap();
    linker
        .add_compiled(&compile(KERNEL, rdc(), CodeKind::LtoIr), "kernel.ltoir")
        .unwrap();
    assert_eq!(linker.backend(), LinkerBackend::NvJitLink);
    let linked = linker.link(CodeKind::Cubin).unwrap();
    assert!(linked.bytes().starts_with(b"\x7fELF"));
    assert_eq!(linked.options()[1], "-lto");
    let whole = compile(
        &format!("{MIX}\n{KERNEL}"),
        ProgramOptions::default(),
        CodeKind::Cubin,
    );
    let from_lto = run(&linked.load().unwrap());
    let from_whole = run(&ObjectCode::from_compiled(&whole).unwrap());
    assert_eq!(from_lto, from_whole);
    assert_eq!(from_lto, expected());

    // PTX output of the same link loads and gives the same answer.
    let ptx = linker.link(CodeKind::Ptx).unwrap();
    assert_eq!(ptx.kind(), CodeKind::Ptx);
    assert_eq!(run(&ptx.load().unwrap()), expected());
}

fn link_errors_give_the_log() {
    let mut linker = Linker::new(lto()).unwrap();
    linker
        .add_compiled(&compile(UNDEFINED, rdc(), CodeKind::LtoIr), "broken.ltoir")
        .unwrap();
    let error = linker.link(CodeKind::Cubin).unwrap_err();
    let log = error
        .link_log()
        .unwrap_or_else(|| panic!("no log: {error}"));
    assert!(log.contains("missing_function"), "{log}");
    assert!(log.contains("-lto"), "the options are listed: {log}");
    assert!(
        matches!(&error, Error::Link { source, .. } if matches!(**source, Error::NvJitLink { .. })),
        "{error:?}"
    );
    eprintln!("link error, as reported:\n{error}");

    // An option nvJitLink does not know is refused (by nvJitLinkCreate), with the options.
    let mut unknown = Linker::new(lto().extra(vec!["-no-such-option"])).unwrap();
    unknown
        .add_compiled(&compile(MIX, rdc(), CodeKind::LtoIr), "mix.ltoir")
        .unwrap();
    let error = unknown.link(CodeKind::Cubin).unwrap_err();
    assert!(matches!(error, Error::Link { .. }), "{error:?}");
    assert!(
        error.link_log().unwrap().contains("-no-such-option"),
        "{error}"
    );
    eprintln!("unknown option, as reported:\n{error}");
}

/// The toolkit's nvcc, when this machine has one.
fn nvcc() -> Option<PathBuf> {
    let roots = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain([PathBuf::from("/usr/local/cuda")]);
    roots
        .map(|root| root.join("bin").join("nvcc"))
        .find(|path| path.is_file())
}

/// Runs nvcc with `args` in `dir`; `false` (with its output printed) when it fails.
fn nvcc_ok(nvcc: &Path, dir: &Path, args: &[&str]) -> bool {
    match Command::new(nvcc).current_dir(dir).args(args).output() {
        Ok(output) if output.status.success() => true,
        Ok(output) => {
            eprintln!(
                "nvcc {args:?} failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            false
        }
        Err(error) => {
            eprintln!("nvcc {args:?} did not run: {error}");
            false
        }
    }
}

/// Links the relocatable kernel CUBIN with `library` and checks the result.
fn links_with(kernel: &CompiledCode, library: LinkInput, options: LinkerOptions) {
    let what = format!("{:?} through {:?}", library.kind(), options.backend);
    let mut linker = Linker::new(options).unwrap();
    linker.add_compiled(kernel, "kernel.cubin").unwrap();
    linker.add(library);
    let linked = linker
        .link(CodeKind::Cubin)
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    assert_eq!(run(&linked.load().unwrap()), expected(), "{what}");
    eprintln!("linked {what}");
}

fn every_input_kind_links() {
    let kernel = compile(KERNEL, rdc(), CodeKind::Cubin);
    let ptx = LinkInput::from_compiled(&compile(MIX, rdc(), CodeKind::Ptx), "mix.ptx").unwrap();
    let cubin =
        LinkInput::from_compiled(&compile(MIX, rdc(), CodeKind::Cubin), "mix.cubin").unwrap();
    let mut inputs = vec![ptx, cubin];

    let arch = format!("-arch=sm_{}", Device::new(0).unwrap().arch().unwrap());
    let dir = std::env::temp_dir().join(format!("cuda-safe-link-kinds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mix.cu"), MIX).unwrap();
    match nvcc() {
        None => eprintln!(
            "no nvcc under $CUDA_HOME, $CUDA_PATH or /usr/local/cuda: fatbin, object and archive inputs not tested"
        ),
        Some(nvcc) => {
            let builds: [(&[&str], &str); 3] = [
                (
                    &["-rdc=true", "-fatbin", "mix.cu", "-o", "mix.fatbin"],
                    "mix.fatbin",
                ),
                (&["-rdc=true", "-c", "mix.cu", "-o", "mix.o"], "mix.o"),
                (
                    &["-rdc=true", "-lib", "mix.cu", "-o", "libmix.a"],
                    "libmix.a",
                ),
            ];
            for (args, output) in builds {
                let mut args = args.to_vec();
                args.push(&arch);
                if nvcc_ok(&nvcc, &dir, &args) {
                    inputs.push(LinkInput::from_file(dir.join(output)).unwrap());
                }
            }
        }
    }
    for input in &inputs {
        links_with(&kernel, input.clone(), LinkerOptions::default());
    }
    // The driver linker takes the same inputs (all but LTO-IR).
    for input in &inputs {
        let driver = LinkerOptions::default().backend(LinkerBackend::Driver);
        links_with(&kernel, input.clone(), driver);
    }
    let kinds: Vec<LinkInputKind> = inputs.iter().map(LinkInput::kind).collect();
    eprintln!("input kinds linked: {kinds:?} (and LtoIr)");
    let _ = std::fs::remove_dir_all(&dir);
}

fn the_driver_linker_refuses_lto_ir_by_type() {
    let mut linker = Linker::new(lto().backend(LinkerBackend::Driver)).unwrap();
    linker
        .add_compiled(&compile(MIX, rdc(), CodeKind::LtoIr), "mix.ltoir")
        .unwrap();
    let error = linker.link(CodeKind::Cubin).unwrap_err();
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
}

/// The variable that makes this binary the fresh process of the cache test: the directory.
const CHILD_ENV: &str = "CUDA_SAFE_LINK_CACHE_CHILD";
/// What the child prints when its link came from the cache and ran correctly.
const CHILD_HIT: &str = "LINK-CACHE-CHILD-HIT";

/// Compiles both units and links them through `cache` (compiles cached too, so the inputs
/// are the same bytes in every process).
fn cached_link(cache: &dyn ProgramCache) -> cuda_safe::CompiledProgram {
    let mut linker = Linker::new(lto()).unwrap();
    for (source, name) in [(MIX, "mix.ltoir"), (KERNEL, "kernel.ltoir")] {
        let program = Program::new(source, rdc()).unwrap();
        let code = program.compile_cached(CodeKind::LtoIr, cache).unwrap();
        linker.add_compiled(code.code(), name).unwrap();
    }
    linker.link_cached(CodeKind::Cubin, cache).unwrap()
}

fn the_cache_returns_a_linked_image_without_relinking() {
    let memory = InMemoryProgramCache::new(64 << 20);
    let first = cached_link(&memory);
    assert!(!first.from_cache());
    let again = cached_link(&memory);
    assert!(again.from_cache(), "the second link relinked");
    assert_eq!(again.code(), first.code());
    assert_eq!(run(&again.load().unwrap()), expected());

    let dir = std::env::temp_dir().join(format!("cuda-safe-link-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let disk = FileStreamProgramCache::new(&dir).unwrap();
    assert!(!cached_link(&disk).from_cache());
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(CHILD_HIT),
        "the fresh process did not hit:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fresh process: links through the directory's cache, which must hit.
fn child_main(dir: &Path) {
    let disk = FileStreamProgramCache::new(dir).unwrap();
    let (noted_before, plain_before) = crate::cache::noted_and_plain_entries(dir);
    let linked = cached_link(&disk);
    assert!(linked.from_cache(), "the fresh process relinked");
    assert_eq!(run(&linked.load().unwrap()), expected());
    // Nothing compiled or linked again: what the hits stored is noted copies alone.
    let (noted, plain) = crate::cache::noted_and_plain_entries(dir);
    assert_eq!(plain, plain_before);
    assert_eq!(disk.stats().unwrap().insertions, noted - noted_before);
    println!("{CHILD_HIT}");
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    the_lto_link_runs_and_matches_the_whole_program_kernel,
    link_errors_give_the_log,
    every_input_kind_links,
    the_driver_linker_refuses_lto_ir_by_type,
    the_cache_returns_a_linked_image_without_relinking,
];

/// The child's part, when this process is this file's child ([`CHILD_ENV`] naming the cache
/// folder): its exit code; `None` otherwise. `main` asks before the harness runs.
pub(crate) fn child_part() -> Option<std::process::ExitCode> {
    let dir = std::env::var_os(CHILD_ENV)?;
    child_main(Path::new(&dir));
    Some(std::process::ExitCode::SUCCESS)
}
