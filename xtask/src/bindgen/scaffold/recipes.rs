//! The recipes of the `-sys` crates' scaffolding, one per crate (see [`super`]).

use super::{FileNames, LibraryRecipe, Scaffold};

/// What the crates built on NVIDIA's CUDA driver and toolkit libraries (`cuda.h`, `nvrtc.h`,
/// `nvml.h`, `nvJitLink.h`, `nvFatbin.h`) re-export of `cuda-loader`.
const CUDA_EXPORTS: &[&str] = &[
    "CudaVersion",
    "EntryPoint",
    "Introduced",
    "Library",
    "LibrarySpec",
    "LoadError",
];

/// What the crates of the libraries versioned on their own (cuBLAS, cuRAND, cuDNN, ...)
/// re-export of `cuda-loader`: their entry points are dated by `LibraryVersion`, and they
/// search the Python environments of `PYTHON_ENV_VARS`.
const LIBRARY_EXPORTS: &[&str] = &[
    "EntryPoint",
    "Introduced",
    "Library",
    "LibrarySpec",
    "LibraryVersion",
    "LoadError",
    "PYTHON_ENV_VARS",
];

/// The recipes, one per `-sys` crate.
pub(in crate::bindgen) const SCAFFOLDS: [Scaffold; 13] = [
    Scaffold {
        crate_dir: "cuda-sys",
        rust_name: "cuda_sys",
        abi: true,
        loader_exports: &[
            "Attempt",
            "CudaVersion",
            "EntryPoint",
            "Introduced",
            "Library",
            "LibrarySpec",
            "LoadError",
        ],
        library: LibraryRecipe {
            file: "libcuda",
            display_name: "the CUDA driver (libcuda)",
            env_const: "LIBCUDA_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCUDA",
            spec: "LIBCUDA",
            spec_doc: ": the driver's versioned soname only, never the toolkit's link-time stub \
                       (`lib64/stubs/libcuda.so`), which loads but fails every call.",
            file_names: FileNames::Fixed(&["libcuda.so.1"], Some(&["nvcuda.dll"])),
            search_dirs: &[],
            wheel_dirs: &[],
            global: Some(
                "The driver: one per system, and a program linked to it has its symbols global.",
            ),
            function: "driver",
            struct_name: "Driver",
            what: "driver",
            note: None,
            safety: "LIBCUDA names only NVIDIA's versioned soname or the path the user chose \
                     explicitly with $CUDA_SAFE_LIBCUDA: the driver, whose initialisers are sound \
                     to run in any thread and whose exports have the signatures of the `cuda.h` \
                     the bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "nvrtc-sys",
        rust_name: "nvrtc_sys",
        abi: true,
        loader_exports: CUDA_EXPORTS,
        library: LibraryRecipe {
            file: "libnvrtc",
            display_name: "NVRTC (libnvrtc)",
            env_const: "LIBNVRTC_PATH_ENV",
            env_var: "CUDA_SAFE_LIBNVRTC",
            spec: "LIBNVRTC",
            spec_doc: ".",
            file_names: FileNames::PerMajor(
                ["libnvrtc.so.12", "libnvrtc.so.13"],
                ["nvrtc64_120_0.dll", "nvrtc64_130_0.dll"],
            ),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &[],
            global: None,
            function: "nvrtc",
            struct_name: "Nvrtc",
            what: "NVRTC",
            note: None,
            safety: "LIBNVRTC names only NVIDIA's versioned sonames (on the search path or under \
                     a toolkit root) or the path the user chose explicitly with \
                     $CUDA_SAFE_LIBNVRTC: NVRTC, whose initialisers are sound to run in any \
                     thread and whose exports have the signatures of the `nvrtc.h` the bindings \
                     and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "nvml-sys",
        rust_name: "nvml_sys",
        abi: true,
        loader_exports: CUDA_EXPORTS,
        library: LibraryRecipe {
            file: "libnvidia-ml",
            display_name: "NVML (libnvidia-ml)",
            env_const: "LIBNVML_PATH_ENV",
            env_var: "CUDA_SAFE_LIBNVML",
            spec: "LIBNVML",
            spec_doc: ": the driver's versioned soname.",
            file_names: FileNames::Fixed(&["libnvidia-ml.so.1"], Some(&["nvml.dll"])),
            search_dirs: &[],
            wheel_dirs: &[],
            global: None,
            function: "nvml",
            struct_name: "Nvml",
            what: "NVML",
            note: Some(
                "Loading does not initialise NVML (`nvmlInit_v2` does) and never touches the \
                 CUDA driver.",
            ),
            safety: "LIBNVML names only NVIDIA's versioned soname or the path the user chose \
                     explicitly with $CUDA_SAFE_LIBNVML: NVML, whose initialisers are sound to \
                     run in any thread and whose exports have the signatures of the `nvml.h` the \
                     bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "nvjitlink-sys",
        rust_name: "nvjitlink_sys",
        abi: true,
        loader_exports: CUDA_EXPORTS,
        library: LibraryRecipe {
            file: "libnvJitLink",
            display_name: "nvJitLink (libnvJitLink)",
            env_const: "LIBNVJITLINK_PATH_ENV",
            env_var: "CUDA_SAFE_LIBNVJITLINK",
            spec: "LIBNVJITLINK",
            spec_doc: ".",
            file_names: FileNames::PerMajor(
                ["libnvJitLink.so.12", "libnvJitLink.so.13"],
                ["nvJitLink_120_0.dll", "nvJitLink_130_0.dll"],
            ),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &[],
            global: None,
            function: "nvjitlink",
            struct_name: "NvJitLink",
            what: "nvJitLink",
            note: None,
            safety: "LIBNVJITLINK names only NVIDIA's versioned sonames (on the search path or \
                     under a toolkit root) or the path the user chose explicitly with \
                     $CUDA_SAFE_LIBNVJITLINK: nvJitLink, whose initialisers are sound to run in \
                     any thread and whose plain exports have the signatures of the \
                     `nvJitLink.h` the bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "nvfatbin-sys",
        rust_name: "nvfatbin_sys",
        abi: true,
        loader_exports: CUDA_EXPORTS,
        library: LibraryRecipe {
            file: "libnvfatbin",
            display_name: "nvFatbin (libnvfatbin)",
            env_const: "LIBNVFATBIN_PATH_ENV",
            env_var: "CUDA_SAFE_LIBNVFATBIN",
            spec: "LIBNVFATBIN",
            spec_doc: ".",
            file_names: FileNames::PerMajor(
                ["libnvfatbin.so.12", "libnvfatbin.so.13"],
                ["nvfatbin_120_0.dll", "nvfatbin_130_0.dll"],
            ),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &[],
            global: None,
            function: "nvfatbin",
            struct_name: "NvFatbin",
            what: "nvFatbin",
            note: None,
            safety: "LIBNVFATBIN names only NVIDIA's versioned sonames (on the search path or \
                     under a toolkit root) or the path the user chose explicitly with \
                     $CUDA_SAFE_LIBNVFATBIN: nvFatbin, whose initialisers are sound to run in \
                     any thread and whose exports have the signatures of the `nvFatbin.h` the \
                     bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "nccl-sys",
        rust_name: "nccl_sys",
        abi: false,
        loader_exports: &[
            "EntryPoint",
            "Introduced",
            "Library",
            "LibrarySpec",
            "LoadError",
            "NcclVersion",
        ],
        library: LibraryRecipe {
            file: "libnccl",
            display_name: "NCCL (libnccl)",
            env_const: "LIBNCCL_PATH_ENV",
            env_var: "CUDA_SAFE_LIBNCCL",
            spec: "LIBNCCL",
            spec_doc: ".",
            file_names: FileNames::Fixed(&["libnccl.so.2"], None),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &[],
            global: None,
            function: "nccl",
            struct_name: "Nccl",
            what: "NCCL",
            note: None,
            safety: "LIBNCCL names only NCCL's versioned soname (on the search path or under a \
                     toolkit root) or the path the user chose explicitly with $CUDA_SAFE_LIBNCCL: \
                     NCCL, whose initialisers are sound to run in any thread and whose exports \
                     have the signatures of the `nccl.h` the bindings and ENTRY_POINTS were \
                     generated from (NCCL keeps its C ABI stable across releases).",
        },
    },
    Scaffold {
        crate_dir: "cublas-sys",
        rust_name: "cublas_sys",
        abi: true,
        loader_exports: LIBRARY_EXPORTS,
        library: LibraryRecipe {
            file: "libcublas",
            display_name: "cuBLAS (libcublas)",
            env_const: "LIBCUBLAS_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCUBLAS",
            spec: "LIBCUBLAS",
            spec_doc: ".",
            file_names: FileNames::PerMajor(
                ["libcublas.so.12", "libcublas.so.13"],
                ["cublas64_12.dll", "cublas64_13.dll"],
            ),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: CUBLAS_WHEEL_DIRS,
            global: None,
            function: "cublas",
            struct_name: "Cublas",
            what: "cuBLAS",
            note: Some(
                "Loading creates no cuBLAS context (`cublasCreate_v2` does). cuBLAS is built on \
                 cuBLASLt, which the dynamic loader looks for by its soname: a process that \
                 opened `libcublasLt` first (`cublaslt_sys::cublaslt()`) has it found there.",
            ),
            safety: "LIBCUBLAS names only NVIDIA's versioned sonames (on the search path, under \
                     a toolkit root or in a Python environment's cuBLAS wheel) or the path the \
                     user chose explicitly with $CUDA_SAFE_LIBCUBLAS: cuBLAS, whose initialisers \
                     are sound to run in any thread and whose exports have the signatures of the \
                     `cublas_v2.h` the bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "cublaslt-sys",
        rust_name: "cublaslt_sys",
        abi: true,
        loader_exports: LIBRARY_EXPORTS,
        library: LibraryRecipe {
            file: "libcublasLt",
            display_name: "cuBLASLt (libcublasLt)",
            env_const: "LIBCUBLASLT_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCUBLASLT",
            spec: "LIBCUBLASLT",
            spec_doc: ".",
            file_names: FileNames::PerMajor(
                ["libcublasLt.so.12", "libcublasLt.so.13"],
                ["cublasLt64_12.dll", "cublasLt64_13.dll"],
            ),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: CUBLAS_WHEEL_DIRS,
            global: None,
            function: "cublaslt",
            struct_name: "CublasLt",
            what: "cuBLASLt",
            note: None,
            safety: "LIBCUBLASLT names only NVIDIA's versioned sonames (on the search path, \
                     under a toolkit root or in a Python environment's cuBLAS wheel) or the path \
                     the user chose explicitly with $CUDA_SAFE_LIBCUBLASLT: cuBLASLt, whose \
                     initialisers are sound to run in any thread and whose exports have the \
                     signatures of the `cublasLt.h` the bindings and ENTRY_POINTS were generated \
                     from.",
        },
    },
    Scaffold {
        crate_dir: "curand-sys",
        rust_name: "curand_sys",
        abi: true,
        loader_exports: LIBRARY_EXPORTS,
        library: LibraryRecipe {
            file: "libcurand",
            display_name: "cuRAND (libcurand)",
            env_const: "LIBCURAND_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCURAND",
            spec: "LIBCURAND",
            spec_doc: ": its soname is `libcurand.so.10` under both CUDA majors (cuRAND numbers \
                       its releases apart from CUDA: 10.3 in CUDA 12, 10.4 in CUDA 13).",
            file_names: FileNames::Fixed(&["libcurand.so.10"], Some(&["curand64_10.dll"])),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &["nvidia/curand/lib", "nvidia/cu13/lib"],
            global: None,
            function: "curand",
            struct_name: "Curand",
            what: "cuRAND",
            note: None,
            safety: "LIBCURAND names only NVIDIA's versioned soname (on the search path, under a \
                     toolkit root or in a Python environment's cuRAND wheel) or the path the \
                     user chose explicitly with $CUDA_SAFE_LIBCURAND: cuRAND, whose initialisers \
                     are sound to run in any thread and whose exports have the signatures of the \
                     `curand.h` the bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "cudnn-sys",
        rust_name: "cudnn_sys",
        abi: true,
        loader_exports: LIBRARY_EXPORTS,
        library: LibraryRecipe {
            file: "libcudnn",
            display_name: "cuDNN (libcudnn)",
            env_const: "LIBCUDNN_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCUDNN",
            spec: "LIBCUDNN",
            spec_doc: ": cuDNN 9's shim, `libcudnn.so.9` under both CUDA majors, which exports \
                       every entry point and loads the sub-libraries it dispatches to \
                       (`libcudnn_graph.so.9`, `libcudnn_ops.so.9`, ...) from its own folder \
                       (its RPATH is `$ORIGIN`).",
            file_names: FileNames::Fixed(&["libcudnn.so.9"], Some(&["cudnn64_9.dll"])),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            // `nvidia-cudnn-cu12` and `nvidia-cudnn-cu13` alike.
            wheel_dirs: &["nvidia/cudnn/lib"],
            global: None,
            function: "cudnn",
            struct_name: "Cudnn",
            what: "cuDNN",
            note: Some("Loading creates no cuDNN handle (`cudnnCreate` does)."),
            safety: "LIBCUDNN names only NVIDIA's versioned soname (on the search path, under a \
                     toolkit root or in a Python environment's cuDNN wheel) or the path the user \
                     chose explicitly with $CUDA_SAFE_LIBCUDNN: cuDNN, whose initialisers are \
                     sound to run in any thread and whose exports have the signatures of the \
                     `cudnn.h` the bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "cufft-sys",
        rust_name: "cufft_sys",
        abi: true,
        loader_exports: LIBRARY_EXPORTS,
        library: LibraryRecipe {
            file: "libcufft",
            display_name: "cuFFT (libcufft)",
            env_const: "LIBCUFFT_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCUFFT",
            spec: "LIBCUFFT",
            spec_doc: ": cuFFT numbers its releases apart from CUDA, cuFFT 11 \
                       (`libcufft.so.11`) with CUDA 12 and cuFFT 12 (`libcufft.so.12`) with \
                       CUDA 13.",
            file_names: FileNames::PerMajor(
                ["libcufft.so.11", "libcufft.so.12"],
                ["cufft64_11.dll", "cufft64_12.dll"],
            ),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &["nvidia/cufft/lib", "nvidia/cu13/lib"],
            global: None,
            function: "cufft",
            struct_name: "Cufft",
            what: "cuFFT",
            note: Some("Loading creates no plan (`cufftCreate` does)."),
            safety: "LIBCUFFT names only NVIDIA's versioned sonames (on the search path, under a \
                     toolkit root or in a Python environment's cuFFT wheel) or the path the user \
                     chose explicitly with $CUDA_SAFE_LIBCUFFT: cuFFT, whose initialisers are \
                     sound to run in any thread and whose exports have the signatures of the \
                     `cufftXt.h` the bindings and ENTRY_POINTS were generated from.",
        },
    },
    Scaffold {
        crate_dir: "cusparse-sys",
        rust_name: "cusparse_sys",
        abi: true,
        loader_exports: LIBRARY_EXPORTS,
        library: LibraryRecipe {
            file: "libcusparse",
            display_name: "cuSPARSE (libcusparse)",
            env_const: "LIBCUSPARSE_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCUSPARSE",
            spec: "LIBCUSPARSE",
            spec_doc: ": its soname is `libcusparse.so.12` under both CUDA majors (cuSPARSE \
                       12.0 to 12.5 came with CUDA 12, 12.6 on with CUDA 13).",
            file_names: FileNames::Fixed(&["libcusparse.so.12"], Some(&["cusparse64_12.dll"])),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &["nvidia/cusparse/lib", "nvidia/cu13/lib"],
            global: None,
            function: "cusparse",
            struct_name: "Cusparse",
            what: "cuSPARSE",
            note: Some(
                "Loading creates no cuSPARSE handle (`cusparseCreate` does). The cuSPARSE of \
                 CUDA 12 is linked to nvJitLink (`libnvJitLink.so.12`), which the dynamic loader \
                 looks for by its soname: a process that opened it first \
                 (`nvjitlink_sys::nvjitlink()`) has it found there.",
            ),
            safety: "LIBCUSPARSE names only NVIDIA's versioned soname (on the search path, under \
                     a toolkit root or in a Python environment's cuSPARSE wheel) or the path the \
                     user chose explicitly with $CUDA_SAFE_LIBCUSPARSE: cuSPARSE, whose \
                     initialisers are sound to run in any thread and whose exports have the \
                     signatures of the `cusparse.h` the bindings and ENTRY_POINTS were \
                     generated from.",
        },
    },
    Scaffold {
        crate_dir: "cusolver-sys",
        rust_name: "cusolver_sys",
        abi: true,
        loader_exports: LIBRARY_EXPORTS,
        library: LibraryRecipe {
            file: "libcusolver",
            display_name: "cuSOLVER (libcusolver)",
            env_const: "LIBCUSOLVER_PATH_ENV",
            env_var: "CUDA_SAFE_LIBCUSOLVER",
            spec: "LIBCUSOLVER",
            spec_doc: ": cuSOLVER numbers its releases apart from CUDA, cuSOLVER 11 \
                       (`libcusolver.so.11`) with CUDA 12 and cuSOLVER 12 \
                       (`libcusolver.so.12`) with CUDA 13.",
            file_names: FileNames::PerMajor(
                ["libcusolver.so.11", "libcusolver.so.12"],
                ["cusolver64_11.dll", "cusolver64_12.dll"],
            ),
            search_dirs: &["CUDA_HOME", "CUDA_PATH"],
            wheel_dirs: &["nvidia/cusolver/lib", "nvidia/cu13/lib"],
            global: None,
            function: "cusolver",
            struct_name: "Cusolver",
            what: "cuSOLVER",
            note: Some(
                "Loading creates no cuSOLVER handle (`cusolverDnCreate` does). cuSOLVER is linked \
                 to cuBLAS, cuBLASLt, cuSPARSE and nvJitLink of its CUDA major, which the dynamic \
                 loader looks for by their sonames: a process that opened them first \
                 (`cublas_sys::cublas()`, ...) has them found there.",
            ),
            safety: "LIBCUSOLVER names only NVIDIA's versioned sonames (on the search path, under \
                     a toolkit root or in a Python environment's cuSOLVER wheel) or the path the \
                     user chose explicitly with $CUDA_SAFE_LIBCUSOLVER: cuSOLVER, whose \
                     initialisers are sound to run in any thread and whose exports have the \
                     signatures of the `cusolverDn.h` the bindings and ENTRY_POINTS were \
                     generated from.",
        },
    },
];

/// Where the cuBLAS wheels put `libcublas` and `libcublasLt`: `nvidia-cublas-cu12` in
/// `nvidia/cublas/lib`, `nvidia-cublas` (CUDA 13) in `nvidia/cu13/lib`.
const CUBLAS_WHEEL_DIRS: &[&str] = &["nvidia/cublas/lib", "nvidia/cu13/lib"];
