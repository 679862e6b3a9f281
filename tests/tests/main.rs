//! The GPU integration tests: one binary, `gpu`, whose modules are the test files. Each file
//! lists its tests in a `FILE` ([`cuda_gpu_tests::gpu_file!`]); [`cuda_gpu_tests::run_gpu_files`]
//! runs each file's tests in a process of its own, named `file::test`, so that
//! `cargo test -p cuda-gpu-tests -- graph::` runs the graph tests. The files whose tests start
//! this binary again as a child process (`checkpoint`, `completion`, `device_graph`, `ipc`,
//! `link`, `vmm`, `nccl`) run the child's part here, before the harness. `nccl` and
//! `cudarc_bridge` need the features of their names (`cudarc` for the last).

mod blas;
mod cache;
mod checkpoint;
mod completion;
mod composed;
mod context_release;
mod copies;
#[cfg(feature = "cudarc")]
mod cudarc_bridge;
mod device_graph;
mod dlpack;
mod dnn;
mod dnn_attention;
mod dnn_norm;
mod fatbin;
mod fft;
mod graph;
mod green;
mod green_interop;
mod ipc;
mod launch;
mod launch_attributes;
mod libs_devices;
mod link;
mod managed;
#[cfg(feature = "nccl")]
mod nccl;
mod nvml;
mod peer;
mod pinned_download;
mod program;
mod rand;
mod raw_layer;
mod runtime;
mod solver;
mod sparse;
mod textures;
mod tma;
mod toolchain;
mod vmm;

use std::process::ExitCode;

use cuda_gpu_tests::GpuFile;

/// Every test file, in the order they run: by name, then `blas`, `rand`, `fft`, `solver`, `sparse`,
/// `dnn`, `dnn_attention`, `dnn_norm`, `libs_devices`, `cudarc_bridge`
/// and `nccl` (with their features).
fn files() -> Vec<GpuFile> {
    let files = [
        cache::FILE,
        checkpoint::FILE,
        completion::FILE,
        composed::FILE,
        context_release::FILE,
        copies::FILE,
        device_graph::FILE,
        dlpack::FILE,
        fatbin::FILE,
        graph::FILE,
        green::FILE,
        green_interop::FILE,
        ipc::FILE,
        launch::FILE,
        launch_attributes::FILE,
        link::FILE,
        managed::FILE,
        nvml::FILE,
        peer::FILE,
        pinned_download::FILE,
        program::FILE,
        raw_layer::FILE,
        runtime::FILE,
        textures::FILE,
        tma::FILE,
        toolchain::FILE,
        vmm::FILE,
    ]
    .into_iter();
    let files = files.chain([
        blas::FILE,
        rand::FILE,
        fft::FILE,
        solver::FILE,
        sparse::FILE,
        dnn::FILE,
        dnn_attention::FILE,
        dnn_norm::FILE,
        libs_devices::FILE,
    ]);
    #[cfg(feature = "cudarc")]
    let files = files.chain([cudarc_bridge::FILE]);
    #[cfg(feature = "nccl")]
    let files = files.chain([nccl::FILE]);
    files.collect()
}

fn main() -> ExitCode {
    let child = checkpoint::child_part()
        .or_else(completion::child_part)
        .or_else(device_graph::child_part)
        .or_else(ipc::child_part)
        .or_else(link::child_part)
        .or_else(vmm::child_part);
    #[cfg(feature = "nccl")]
    let child = child.or_else(nccl::child_part);
    if let Some(code) = child {
        return code;
    }
    cuda_gpu_tests::run_gpu_files(&files())
}
