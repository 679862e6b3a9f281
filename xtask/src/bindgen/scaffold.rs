//! The `-sys` crates' scaffolding, from one recipe per crate: `src/library.rs` (where the
//! library is found, and the function that opens it once per process) in every crate, and
//! `src/abi.rs` (`ABI_MAJOR`, `if_abi12!`, `if_abi13!`) with its test `tests/abi.rs` in the
//! crates with the `cuda-12` and `cuda-13` features.
//!
//! The files are written as Rust text and only formatted (their `// SAFETY:` comments must
//! survive), and checked for drift with the bindings.

use std::fmt::Write;

use super::format::format_source;

/// One crate's scaffolding recipe.
pub(super) struct Scaffold {
    /// The crate's folder (`nvrtc-sys`).
    pub(super) crate_dir: &'static str,
    /// The crate's Rust name (`nvrtc_sys`).
    pub(super) rust_name: &'static str,
    /// Whether the crate has the `cuda-12` and `cuda-13` features (and so `abi.rs`).
    pub(super) abi: bool,
    /// Its library.
    pub(super) library: LibraryRecipe,
}

/// How one crate finds and opens its library.
pub(super) struct LibraryRecipe {
    /// The library's file stem, for docs (`libnvrtc`).
    pub(super) file: &'static str,
    /// The display name errors use (`NVRTC (libnvrtc)`).
    pub(super) display_name: &'static str,
    /// The constant holding the override variable's name (`LIBNVRTC_PATH_ENV`).
    pub(super) env_const: &'static str,
    /// The override variable (`CUDA_SAFE_LIBNVRTC`).
    pub(super) env_var: &'static str,
    /// The `LibrarySpec` static (`LIBNVRTC`).
    pub(super) spec: &'static str,
    /// The rest of the static's doc, after "Where `libnvrtc` is looked for".
    pub(super) spec_doc: &'static str,
    /// Its file names.
    pub(super) file_names: FileNames,
    /// Its toolkit-root variables.
    pub(super) search_dirs: &'static [&'static str],
    /// The folders NVIDIA's PyPI wheels put it in, under a Python environment's
    /// `site-packages`.
    pub(super) wheel_dirs: &'static [&'static str],
    /// Whether it is opened into the global scope, and why (a comment), when it is.
    pub(super) global: Option<&'static str>,
    /// The function that opens it (`nvrtc`).
    pub(super) function: &'static str,
    /// What the function returns a reference to (`Nvrtc`).
    pub(super) struct_name: &'static str,
    /// What the entry points are called in the function's doc (`NVRTC`).
    pub(super) what: &'static str,
    /// A paragraph of the function's doc before the one on opening once, if any.
    pub(super) note: Option<&'static str>,
    /// The `// SAFETY:` comment of the open, after `SAFETY: `.
    pub(super) safety: &'static str,
}

/// A library's file names.
pub(super) enum FileNames {
    /// The same under either ABI: the Unix names, and the Windows names where there are any.
    Fixed(&'static [&'static str], Option<&'static [&'static str]>),
    /// One per CUDA major, the compiled ABI's first: the (12, 13) names on Unix and on Windows.
    PerMajor([&'static str; 2], [&'static str; 2]),
}

/// The recipes, one per `-sys` crate.
pub(super) const SCAFFOLDS: [Scaffold; 9] = [
    Scaffold {
        crate_dir: "cuda-sys",
        rust_name: "cuda_sys",
        abi: true,
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
];

/// Where the cuBLAS wheels put `libcublas` and `libcublasLt`: `nvidia-cublas-cu12` in
/// `nvidia/cublas/lib`, `nvidia-cublas` (CUDA 13) in `nvidia/cu13/lib`.
const CUBLAS_WHEEL_DIRS: &[&str] = &["nvidia/cublas/lib", "nvidia/cu13/lib"];

/// The generated `abi.rs`, the same in every crate with the ABI features.
const ABI_RS: &str = include_str!("scaffold/abi.rs.in");

/// The generated `tests/abi.rs`, `@CRATE@` standing for the crate's Rust name.
const TESTS_ABI_RS: &str = include_str!("scaffold/tests_abi.rs.in");

impl Scaffold {
    /// The crate's scaffolding files: (path under the crate's folder, formatted text).
    pub(super) fn files(&self) -> Result<Vec<(&'static str, String)>, String> {
        let mut files = vec![(
            "src/library.rs",
            format_source(
                &self.library.render(),
                &format!("{}/src/library.rs", self.crate_dir),
            )?,
        )];
        if self.abi {
            files.push((
                "src/abi.rs",
                format_source(ABI_RS, &format!("{}/src/abi.rs", self.crate_dir))?,
            ));
            files.push((
                "tests/abi.rs",
                format_source(
                    &TESTS_ABI_RS.replace("@CRATE@", self.rust_name),
                    &format!("{}/tests/abi.rs", self.crate_dir),
                )?,
            ));
        }
        Ok(files)
    }
}

/// `text` as comment lines of at most 100 columns: `indent`, then `marker` (`///`, `//`) and
/// the words; each line ends in a newline.
fn comment(indent: &str, marker: &str, text: &str) -> String {
    let mut out = String::new();
    let mut line = format!("{indent}{marker}");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > 100 && line.len() > indent.len() + marker.len() {
            out.push_str(&line);
            out.push('\n');
            line = format!("{indent}{marker}");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A Rust string literal of `items`' elements, as a slice: `&["a", "b"]`.
fn slice(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("{item:?}")).collect();
    format!("&[{}]", quoted.join(", "))
}

impl LibraryRecipe {
    /// The text of `src/library.rs`.
    fn render(&self) -> String {
        let Self {
            file,
            env_const,
            env_var,
            spec,
            function,
            struct_name,
            what,
            ..
        } = self;
        let mut out = format!(
            "//! Where `{file}` is found, and the function that opens it once per process.\n\
             //!\n\
             //! Generated by `cargo xtask bindgen` from this crate's recipe in\n\
             //! `xtask/src/bindgen/scaffold.rs`; do not edit.\n\n\
             use std::sync::OnceLock;\n\n\
             use crate::{{ENTRY_POINTS, Library, LibrarySpec, LoadError, {struct_name}}};\n\n\
             /// The environment variable that names an explicit path to `{file}`.\n\
             pub const {env_const}: &str = {env_var:?};\n\n"
        );
        self.render_file_names(&mut out);
        let global = match self.global {
            Some(why) => format!("{}    global: true,\n", comment("    ", "//", why)),
            None => "    global: false,\n".to_owned(),
        };
        let note = self.note.map_or_else(String::new, |note| {
            format!("{}///\n", comment("", "///", note))
        });
        out.push_str(&comment(
            "",
            "///",
            &format!("Where `{file}` is looked for{}", self.spec_doc),
        ));
        let _ = write!(
            out,
            "pub static {spec}: LibrarySpec = LibrarySpec {{\n    \
                 name: {display:?},\n    \
                 env_var: {env_const},\n    \
                 file_names: FILE_NAMES,\n    \
                 search_dirs: {dirs},\n    \
                 wheel_dirs: {wheel_dirs},\n\
             {global}\
             }};\n\n\
             /// The process's {what} entry points, loading `{file}` on the first call.\n\
             ///\n\
             {note}\
             /// The library is opened once per process; a failure is remembered and returned \
             again.\n\
             pub fn {function}() -> Result<&'static {struct_name}, LoadError> {{\n    \
                 static LOADED: OnceLock<Result<{struct_name}, LoadError>> = OnceLock::new();\n    \
                 LOADED\n        \
                     .get_or_init(|| {{\n\
                         {safety}            \
                         unsafe {{\n\
                             Library::open(&{spec}, &ENTRY_POINTS)\n\
                                 .map(|library| {struct_name}::new(library))\n\
                         }}\n        \
                     }})\n        \
                     .as_ref()\n        \
                     .map_err(Clone::clone)\n\
             }}\n",
            display = self.display_name,
            dirs = slice(self.search_dirs),
            wheel_dirs = slice(self.wheel_dirs),
            safety = comment("            ", "//", &format!("SAFETY: {}", self.safety)),
        );
        out
    }

    /// The `FILE_NAMES` constant, one definition per platform (and ABI, where they differ).
    fn render_file_names(&self, out: &mut String) {
        let file = self.file;
        let mut define = |doc: &str, cfg: &str, names: &[&str]| {
            let _ = write!(
                out,
                "/// `{file}`'s file names{doc}.\n\
                 #[cfg({cfg})]\n\
                 const FILE_NAMES: &[&str] = {};\n\n",
                slice(names)
            );
        };
        match &self.file_names {
            FileNames::Fixed(unix, None) => {
                let _ = write!(
                    out,
                    "/// `{file}`'s file names.\nconst FILE_NAMES: &[&str] = {};\n\n",
                    slice(unix)
                );
            }
            FileNames::Fixed(unix, Some(windows)) => {
                define("", "not(windows)", unix);
                define("", "windows", windows);
            }
            FileNames::PerMajor([unix_12, unix_13], [windows_12, windows_13]) => {
                let first = ", the compiled ABI's major first";
                define(
                    first,
                    "all(not(windows), not(feature = \"cuda-13\"))",
                    &[unix_12, unix_13],
                );
                define(
                    first,
                    "all(not(windows), feature = \"cuda-13\")",
                    &[unix_13, unix_12],
                );
                define(
                    first,
                    "all(windows, not(feature = \"cuda-13\"))",
                    &[windows_12, windows_13],
                );
                define(
                    first,
                    "all(windows, feature = \"cuda-13\")",
                    &[windows_13, windows_12],
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crate_of_the_workspace_has_a_recipe_matching_its_manifest() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace root");
        for scaffold in &SCAFFOLDS {
            let manifest =
                std::fs::read_to_string(root.join(scaffold.crate_dir).join("Cargo.toml"))
                    .expect("the crate's manifest");
            assert!(
                manifest.contains(&format!("name = \"{}\"", scaffold.rust_name)),
                "{}",
                scaffold.crate_dir
            );
            assert_eq!(
                manifest.contains("cuda-13 = []"),
                scaffold.abi,
                "{}",
                scaffold.crate_dir
            );
        }
    }

    #[test]
    fn the_library_file_names_the_spec_the_override_and_the_safety_argument() {
        let text = SCAFFOLDS[1].library.render();
        assert!(text.contains("pub const LIBNVRTC_PATH_ENV: &str = \"CUDA_SAFE_LIBNVRTC\";"));
        assert!(text.contains(
            "#[cfg(all(not(windows), feature = \"cuda-13\"))]\nconst FILE_NAMES: &[&str] = \
             &[\"libnvrtc.so.13\", \"libnvrtc.so.12\"];"
        ));
        assert!(text.contains("search_dirs: &[\"CUDA_HOME\", \"CUDA_PATH\"],"));
        assert!(text.contains("// SAFETY: LIBNVRTC names only"));
        assert!(text.contains("pub fn nvrtc() -> Result<&'static Nvrtc, LoadError> {"));
        let driver = SCAFFOLDS[0].library.render();
        assert!(driver.contains("    // The driver: one per system"));
        assert!(driver.contains("    global: true,"));
        assert!(driver.contains("#[cfg(windows)]\nconst FILE_NAMES: &[&str] = &[\"nvcuda.dll\"];"));
        let nccl = SCAFFOLDS[5].library.render();
        assert!(nccl.contains(
            "/// `libnccl`'s file names.\nconst FILE_NAMES: &[&str] = &[\"libnccl.so.2\"];"
        ));
    }

    #[test]
    fn the_abi_test_names_its_crate() {
        let text = TESTS_ABI_RS.replace("@CRATE@", SCAFFOLDS[2].rust_name);
        assert!(
            text.contains("use nvml_sys::{ABI_MAJOR, HEADER_CUDA_VERSION, if_abi12, if_abi13};")
        );
        assert!(!text.contains('@'));
    }
}
