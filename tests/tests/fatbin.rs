//! Fatbins built with nvFatbin on a GPU: CUBINs from NVRTC (the device's architecture and
//! another) with PTX, loaded through `ObjectCode` and run, compressed too (CUDA 13's nvFatbin
//! compresses with zstd, which the loader's image check must accept); a fatbin of PTX alone,
//! and of another architecture's CUBIN with PTX, which the driver compiles for the device;
//! LTO-IR kept in a fatbin and linked with nvJitLink; nvFatbin's refusals, typed.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::nvfatbin_sys::nvFatbinResult;
use cuda_safe::{
    CodeKind, CompiledCode, CompiledProgram, Device, Error, FatbinBuilder, FatbinCompression,
    FatbinHost, FatbinOptions, LaunchConfig, LinkInput, Linker, LinkerOptions, ObjectCode, Program,
    ProgramOptions, Toolchain, launch,
};

/// A kernel, a templated one (reached by its name expression), both on `unsigned` for exact
/// answers.
const KERNELS: &str = r#"
extern "C" __global__ void affine(const unsigned* x, unsigned* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3u * x[i] + i;
}
template <class T>
__global__ void affine_t(const T* x, T* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = T(3) * x[i] + T(i);
}
"#;

/// The device function of the LTO case, in a translation unit of its own.
const MIX: &str = r#"
__device__ unsigned mix(unsigned x) { return 3u * x; }
"#;

/// The kernel that calls it.
const MIX_KERNEL: &str = r#"
__device__ unsigned mix(unsigned x);
extern "C" __global__ void affine(const unsigned* x, unsigned* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = mix(x[i]) + i;
}
"#;

const TEMPLATE: &str = "affine_t<unsigned>";
const N: u32 = 1 << 14;

fn input() -> Vec<u32> {
    (0..N).map(|i| i.wrapping_mul(2_654_435_761)).collect()
}

fn expected() -> Vec<u32> {
    input()
        .iter()
        .zip(0..)
        .map(|(&x, i)| x.wrapping_mul(3).wrapping_add(i))
        .collect()
}

/// Device 0's architecture digits (`"90"`).
fn device_arch() -> String {
    Device::new(0).unwrap().arch().unwrap()
}

/// An architecture NVRTC compiles for that is not the device's: its CUBIN cannot run here.
fn other_arch(device: &str) -> &'static str {
    if device == "75" { "80" } else { "75" }
}

/// `source` (with the template's name expression) compiled for `arch` to `target`.
fn compile(source: &str, arch: &str, target: CodeKind, rdc: bool) -> CompiledCode {
    let options = ProgramOptions::default()
        .arch(arch)
        .relocatable_device_code(rdc);
    let mut program = Program::new(source, options).unwrap();
    if source.contains("affine_t") {
        program.add_name_expression(TEMPLATE).unwrap();
    }
    program
        .compile(target)
        .unwrap_or_else(|error| panic!("{target} for {arch}: {error}"))
        .into_code()
}

/// Runs `kernel` of `code` on the input and returns the output.
fn run(code: &ObjectCode, kernel: &str) -> Vec<u32> {
    try_run(code, kernel).unwrap_or_else(|error| panic!("{kernel}: {error}"))
}

/// [`run`], or the first error on the way (looking the kernel up, launching, copying back).
fn try_run(code: &ObjectCode, kernel: &str) -> Result<Vec<u32>, Error> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(Default::default())?;
    let pool = device.default_memory_resource()?;
    let kernel = code.get_kernel(kernel)?;
    let data = pool.allocate_from_host(&input(), &stream)?;
    let mut out = pool.allocate(4 * N as usize, &stream)?;
    let config = LaunchConfig::for_num_elements(N as usize, 256)?;
    // SAFETY: both kernels take (const unsigned*, unsigned*, unsigned) and read and write N
    // words of each buffer.
    unsafe { launch(&stream, &config, &kernel, (&data, &mut out, N)) }?;
    out.to_vec::<u32>()
}

/// Checks what a build says about itself, loads it and runs both kernels.
fn loads_and_runs(built: &CompiledProgram, what: &str) {
    assert_eq!(built.kind(), CodeKind::Fatbin, "{what}");
    assert_eq!(built.toolchain(), Toolchain::NvFatbin, "{what}");
    assert!(
        built.bytes().starts_with(&[0x50, 0xed, 0x55, 0xba]),
        "{what}: no fatbin magic"
    );
    let code = built
        .load()
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    assert_eq!(code.kind(), Some(CodeKind::Fatbin), "{what}");
    assert_eq!(run(&code, "affine"), expected(), "{what}: affine");
    assert_eq!(run(&code, TEMPLATE), expected(), "{what}: {TEMPLATE}");
    eprintln!(
        "{what}: {} bytes, options {:?}, ran",
        built.bytes().len(),
        built.options()
    );
}

fn cubins_and_ptx_build_load_and_run_compressed_or_not() {
    let arch = device_arch();
    let other = other_arch(&arch);
    let here = compile(KERNELS, &format!("sm_{arch}"), CodeKind::Cubin, false);
    let there = compile(KERNELS, &format!("sm_{other}"), CodeKind::Cubin, false);
    let ptx = compile(KERNELS, "compute_75", CodeKind::Ptx, false);
    let option_sets = [
        ("default options", FatbinOptions::default()),
        (
            "-64 -compress-all -host=linux (zstd in CUDA 13)",
            FatbinOptions::default()
                .address_bits(64)
                .compress_all(true)
                .host(FatbinHost::Linux),
        ),
        (
            "-compress-mode=size",
            FatbinOptions::default().compression(FatbinCompression::Size),
        ),
        ("-compress=false", FatbinOptions::default().compress(false)),
    ];
    for (what, options) in option_sets {
        let mut fatbin = FatbinBuilder::new(options).unwrap();
        fatbin
            .add_compiled(&here, &format!("sm_{arch}"), "affine.here.cubin")
            .unwrap()
            .add_compiled(&there, other, "affine.there.cubin")
            .unwrap()
            .add_compiled(&ptx, "compute_75", "affine.ptx")
            .unwrap();
        let built = fatbin
            .build()
            .unwrap_or_else(|error| panic!("{what}: {error}"));
        assert_eq!(built.options(), fatbin.flags(), "{what}");
        assert_eq!(
            built.lowered_name(TEMPLATE),
            here.lowered_name(TEMPLATE),
            "{what}: the name map is kept"
        );
        loads_and_runs(&built, what);
        // The same bytes as plain compiled code, and from a file, load too.
        let bytes = CompiledCode::new(CodeKind::Fatbin, built.bytes().to_vec(), Vec::new());
        assert_eq!(run(&bytes.load().unwrap(), "affine"), expected(), "{what}");
        let file = std::env::temp_dir().join(format!("cuda-safe-{}.fatbin", std::process::id()));
        std::fs::write(&file, built.bytes()).unwrap();
        let from_file = ObjectCode::from_file(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(run(&from_file, "affine"), expected(), "{what}: from a file");
    }
}

fn ptx_alone_or_beside_another_architecture_is_compiled_by_the_driver() {
    let arch = device_arch();
    let other = other_arch(&arch);
    let ptx = compile(KERNELS, "compute_75", CodeKind::Ptx, false);
    let mut alone = FatbinBuilder::new(FatbinOptions::default()).unwrap();
    alone
        .add_compiled(&ptx, "compute_75", "affine.ptx")
        .unwrap();
    loads_and_runs(&alone.build().unwrap(), "PTX alone");

    // A CUBIN the device cannot run, and PTX: the driver compiles the PTX.
    let there = compile(KERNELS, &format!("sm_{other}"), CodeKind::Cubin, false);
    let mut beside = FatbinBuilder::new(FatbinOptions::default()).unwrap();
    beside
        .add_compiled(&there, &format!("sm_{other}"), "affine.there.cubin")
        .unwrap()
        .add_compiled(&ptx, "compute_75", "affine.ptx")
        .unwrap();
    loads_and_runs(&beside.build().unwrap(), "another CUBIN and PTX");

    // That CUBIN alone has nothing for this device: the driver says so when it loads the
    // fatbin, or (loading lazily) when the kernel is looked up or launched.
    let mut only_there = FatbinBuilder::new(FatbinOptions::default()).unwrap();
    only_there
        .add_compiled(&there, &format!("sm_{other}"), "affine.there.cubin")
        .unwrap();
    let outcome = only_there
        .build()
        .unwrap()
        .load()
        .and_then(|code| try_run(&code, "affine"));
    let error = outcome.expect_err("a CUBIN of another architecture ran");
    assert!(matches!(error, Error::Cuda { .. }), "{error:?}");
    eprintln!("a CUBIN of sm_{other} alone, run on sm_{arch}: {error}");
}

fn lto_ir_kept_in_a_fatbin_links_with_nvjitlink() {
    let arch = format!("sm_{}", device_arch());
    let mix = compile(MIX, &arch, CodeKind::LtoIr, true);
    let kernel = compile(MIX_KERNEL, &arch, CodeKind::LtoIr, true);
    let mut fatbin = FatbinBuilder::new(FatbinOptions::default()).unwrap();
    fatbin.add_compiled(&mix, &arch, "mix.ltoir").unwrap();
    let library = fatbin.build().unwrap();
    let mut linker = Linker::new(LinkerOptions::default().arch(arch.clone()).lto(true)).unwrap();
    linker.add(LinkInput::from_compiled(library.code(), "mix.fatbin").unwrap());
    linker.add_compiled(&kernel, "kernel.ltoir").unwrap();
    let linked = linker
        .link(CodeKind::Cubin)
        .unwrap_or_else(|error| panic!("{error:?}"));
    assert_eq!(run(&linked.load().unwrap(), "affine"), expected());
}

fn nvfatbin_refusals_are_typed_and_name_the_entry() {
    let arch = device_arch();
    let other = other_arch(&arch);
    let here = compile(KERNELS, &format!("sm_{arch}"), CodeKind::Cubin, false);
    // A CUBIN given as another architecture's.
    let mut mismatch = FatbinBuilder::new(FatbinOptions::default()).unwrap();
    mismatch
        .add_compiled(&here, &format!("sm_{other}"), "affine.cubin")
        .unwrap();
    let error = mismatch.build().unwrap_err();
    match &error {
        Error::NvFatbin {
            api, code, detail, ..
        } => {
            assert_eq!(*api, "nvFatbinAddCubin");
            assert_eq!(*code, nvFatbinResult::NVFATBIN_ERROR_ELF_ARCH_MISMATCH);
            assert_eq!(
                detail.as_deref(),
                Some(format!("adding the CUBIN \"affine.cubin\" for sm_{other}").as_str())
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("NVFATBIN_ERROR_ELF_ARCH_MISMATCH"),
        "{error}"
    );
    eprintln!("a mismatched CUBIN, as reported: {error}");

    // An option nvFatbin does not know.
    let mut unknown =
        FatbinBuilder::new(FatbinOptions::default().extra(vec!["-no-such-option"])).unwrap();
    unknown
        .add_compiled(&here, &format!("sm_{arch}"), "affine.cubin")
        .unwrap();
    let error = unknown.build().unwrap_err();
    assert!(
        matches!(
            &error,
            Error::NvFatbin { api: "nvFatbinCreate", code, .. }
                if *code == nvFatbinResult::NVFATBIN_ERROR_UNRECOGNIZED_OPTION
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("-no-such-option"), "{error}");

    // Neither NVRTC nor a link makes a fatbin.
    let program = Program::new(KERNELS, ProgramOptions::default()).unwrap();
    let error = program.compile(CodeKind::Fatbin).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    let mut linker = Linker::new(LinkerOptions::default()).unwrap();
    linker.add_compiled(&here, "affine.cubin").unwrap();
    let error = linker.link(CodeKind::Fatbin).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    cubins_and_ptx_build_load_and_run_compressed_or_not,
    ptx_alone_or_beside_another_architecture_is_compiled_by_the_driver,
    lto_ir_kept_in_a_fatbin_links_with_nvjitlink,
    nvfatbin_refusals_are_typed_and_name_the_entry,
];
