//! The headers generated and how: one recipe per header.

use crate::headers;

/// One header's generation recipe.
pub(super) struct Api {
    /// The crate the output belongs to.
    pub(super) crate_dir: &'static str,
    /// The header file name.
    pub(super) header: &'static str,
    /// The struct holding the entry points.
    pub(super) struct_name: &'static str,
    /// What the struct's doc calls the library.
    pub(super) library: &'static str,
    /// Prefix of the header's functions and function macros.
    pub(super) prefix: &'static str,
    /// bindgen's allowlist of functions.
    pub(super) functions: &'static str,
    /// bindgen's allowlist of types.
    pub(super) types: &'static str,
    /// bindgen's allowlist of variables.
    pub(super) vars: &'static str,
}

/// The recipes, one per header; each header of each CUDA major becomes `src/v<major>.rs` of
/// its crate.
pub(super) const APIS: [Api; 4] = [
    Api {
        crate_dir: "cuda-sys",
        header: headers::CUDA_H,
        struct_name: "Driver",
        library: "the CUDA driver API (`libcuda`)",
        prefix: "cu",
        functions: "cu[A-Z].*",
        types: "(CU|cu)[A-Za-z0-9_]*",
        vars: "(CU|CUDA|cu)[A-Za-z0-9_]*",
    },
    Api {
        crate_dir: "nvrtc-sys",
        header: headers::NVRTC_H,
        struct_name: "Nvrtc",
        library: "NVRTC (`libnvrtc`)",
        prefix: "nvrtc",
        functions: "nvrtc[A-Z].*",
        types: "nvrtc[A-Za-z0-9_]*",
        vars: "NVRTC_[A-Za-z0-9_]*",
    },
    Api {
        crate_dir: "nvml-sys",
        header: headers::NVML_H,
        struct_name: "Nvml",
        library: "NVML (`libnvidia-ml`)",
        prefix: "nvml",
        functions: "nvml[A-Z].*",
        types: "nvml[A-Za-z0-9_]*",
        vars: "(NVML|nvml)[A-Za-z0-9_]*",
    },
    Api {
        crate_dir: "nvjitlink-sys",
        header: headers::NVJITLINK_H,
        struct_name: "NvJitLink",
        library: "nvJitLink (`libnvJitLink`)",
        prefix: "nvJitLink",
        // The header's versioned exports (`__nvJitLinkCreate_13_5`) are read too: they carry
        // the signatures its inline wrappers forward to.
        functions: "(__)?nvJitLink[A-Z].*",
        types: "nvJitLink[A-Za-z0-9_]*",
        vars: "NVJITLINK_[A-Za-z0-9_]*",
    },
];
