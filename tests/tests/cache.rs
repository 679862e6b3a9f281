//! Program caches with a real compiler and driver: compiles happen once, hits (in memory and on
//! disk, in a "new process" simulated by a fresh cache) give launchable kernels, templated
//! kernels included, and a corrupted entry is recompiled.

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::cache::{
    FileStreamProgramCache, InMemoryProgramCache, ProgramCache, TieredProgramCache,
};
use cuda_safe::{CodeKind, Device, KernelCache, LaunchConfig, Program, ProgramOptions, launch};

const SOURCE: &str = r#"
template <typename T> __global__ void add_one(T* data, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) data[i] += T(1);
}
"#;

fn program() -> Program {
    let mut program = Program::new(SOURCE, ProgramOptions::default()).unwrap();
    program.add_name_expression("add_one<float>").unwrap();
    program.add_name_expression("add_one<int>").unwrap();
    program
}

/// Launches `add_one<float>` from `kernels` on 100 floats and checks the result.
fn add_one_works<C: ProgramCache>(kernels: &KernelCache<C>, program: &Program) {
    let device = Device::new(0).unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let kernel = kernels
        .kernel(program, CodeKind::Cubin, "add_one<float>")
        .unwrap();
    let mut data = pool.allocate(400, &stream).unwrap();
    data.copy_from_host(&[1.5f32; 100]).unwrap();
    let config = LaunchConfig::for_num_elements(100, 64).unwrap();
    // SAFETY: add_one<float>(float*, size_t) updates 100 floats, which the buffer holds.
    unsafe { launch(&stream, &config, &kernel, (&mut data, 100usize)).unwrap() };
    assert_eq!(data.to_vec::<f32>().unwrap(), [2.5f32; 100]);
}

fn a_program_compiles_and_loads_once_per_process() {
    let program = program();
    let kernels = KernelCache::new(InMemoryProgramCache::new(16 << 20));
    add_one_works(&kernels, &program);
    add_one_works(&kernels, &program);
    kernels
        .kernel(&program, CodeKind::Cubin, "add_one<int>")
        .unwrap();
    let stats = kernels.programs().stats().unwrap();
    assert_eq!((stats.insertions, stats.hits), (1, 0), "{stats:?}");
    assert_eq!(kernels.loaded_count(), 1);
    // Another target is another entry.
    let _loaded = kernels.object_code(&program, CodeKind::Ptx).unwrap();
    assert_eq!(kernels.loaded_count(), 2);
    kernels.unload_all();
    add_one_works(&kernels, &program);
    assert_eq!(kernels.programs().stats().unwrap().hits, 1);
}

/// The entry files under a disk cache's root at `dir` stored with a note inside (the copy of a
/// program a fresh process finds in one read; the payload's flag byte, after the 68-byte
/// header, has bit 1 set), and the others.
pub(crate) fn noted_and_plain_entries(dir: &std::path::Path) -> (u64, u64) {
    let (mut noted, mut plain) = (0, 0);
    let Ok(shards) = std::fs::read_dir(dir.join("entries")) else {
        return (0, 0);
    };
    for shard in shards {
        for entry in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            match bytes.get(69) {
                Some(flags) if flags & 2 != 0 => noted += 1,
                _ => plain += 1,
            }
        }
    }
    (noted, plain)
}

fn a_disk_hit_in_a_new_cache_resolves_templated_kernels() {
    let dir = std::env::temp_dir().join(format!("cuda-safe-cache-test-{}", std::process::id()));
    let program = program();
    {
        let first = KernelCache::new(FileStreamProgramCache::new(&dir).unwrap());
        add_one_works(&first, &program);
        // The program, and its noted copy when this process has a note on NVRTC.
        let (noted, plain) = noted_and_plain_entries(&dir);
        assert_eq!(plain, 1);
        assert_eq!(first.programs().stats().unwrap().insertions, 1 + noted);
    }
    // What a new process sees: an empty in-memory level in front of the same directory.
    let second = KernelCache::new(TieredProgramCache::new(
        InMemoryProgramCache::new(16 << 20),
        FileStreamProgramCache::new(&dir).unwrap(),
    ));
    add_one_works(&second, &program);
    assert_eq!(second.programs().back().stats().unwrap().hits, 1);
    assert_eq!(second.programs().front().stats().unwrap().insertions, 1);

    // A corrupted entry is a miss: the program is compiled again and the entry rewritten.
    let disk = FileStreamProgramCache::new(&dir).unwrap();
    let key = program.cache_key(CodeKind::Cubin).unwrap();
    let path = disk.entry_path(&key);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let third = KernelCache::new(FileStreamProgramCache::new(&dir).unwrap());
    add_one_works(&third, &program);
    let stats = third.programs().stats().unwrap();
    let (noted, plain) = noted_and_plain_entries(&dir);
    assert_eq!(plain, 1);
    assert_eq!(
        (stats.corrupt_entries, stats.insertions),
        (1, 1 + noted),
        "{stats:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn a_disk_cache_without_noted_copies_keeps_one_entry_per_program() {
    let dir = std::env::temp_dir().join(format!("cuda-safe-plain-test-{}", std::process::id()));
    let plain = || {
        FileStreamProgramCache::new(&dir)
            .unwrap()
            .with_noted_copies(false)
    };
    let program = program();
    let first = KernelCache::new(plain());
    add_one_works(&first, &program);
    assert_eq!(first.programs().stats().unwrap().insertions, 1);
    assert_eq!(noted_and_plain_entries(&dir), (0, 1));
    let second = KernelCache::new(plain());
    add_one_works(&second, &program);
    let stats = second.programs().stats().unwrap();
    assert_eq!((stats.hits, stats.insertions), (1, 0), "{stats:?}");
    assert_eq!(
        noted_and_plain_entries(&dir),
        (0, 1),
        "a hit stores no copy"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn an_assumed_nvrtc_version_skips_nvrtc_on_hits_and_is_checked_on_misses() {
    let (major, minor) = cuda_safe::nvrtc_version().unwrap();
    let program = program();
    let right =
        KernelCache::new(InMemoryProgramCache::new(16 << 20)).assume_nvrtc_version(major, minor);
    add_one_works(&right, &program);
    let key = program
        .cache_key_for_compiler(CodeKind::Cubin, &format!("{major}.{minor}"))
        .unwrap();
    assert_eq!(key, program.cache_key(CodeKind::Cubin).unwrap());
    let wrong =
        KernelCache::new(InMemoryProgramCache::new(16 << 20)).assume_nvrtc_version(major + 1, 0);
    let error = wrong
        .kernel(&program, CodeKind::Cubin, "add_one<float>")
        .unwrap_err();
    assert!(error.to_string().contains("assumes NVRTC"), "{error}");
}

fn a_warm_kernel_request_returns_the_same_kernel() {
    let program = program();
    let kernels = KernelCache::new(InMemoryProgramCache::new(16 << 20));
    let first = kernels
        .kernel(&program, CodeKind::Cubin, "add_one<float>")
        .unwrap();
    let second = kernels
        .kernel(&program, CodeKind::Cubin, "add_one<float>")
        .unwrap();
    // A launch reads the parameter list (in the stream's context); both handles see it.
    add_one_works(&kernels, &program);
    assert_eq!(first.as_raw(), second.as_raw());
    assert_eq!(kernels.loaded_count(), 1);
    assert!(std::ptr::eq(
        first.params().unwrap(),
        second.params().unwrap()
    ));
}

/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![
    a_program_compiles_and_loads_once_per_process,
    a_disk_hit_in_a_new_cache_resolves_templated_kernels,
    a_disk_cache_without_noted_copies_keeps_one_entry_per_program,
    an_assumed_nvrtc_version_skips_nvrtc_on_hits_and_is_checked_on_misses,
    a_warm_kernel_request_returns_the_same_kernel,
];
