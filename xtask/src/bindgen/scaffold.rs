//! The `-sys` crates' scaffolding, from one recipe per crate (see [`recipes`]): in every crate
//! `src/library.rs` (where the library is found, and the function that opens it once per
//! process), `src/preamble.rs` (the part of `lib.rs` every crate shares: the bindings module,
//! the scaffolding's modules and the re-exports; see [`crate_files`]) and its test of the search
//! `tests/library.rs`; and `src/abi.rs` (`ABI_MAJOR`, `if_abi12!`, `if_abi13!`) with its test
//! `tests/abi.rs` in the crates with the `cuda-12` and `cuda-13` features.
//!
//! The files are written as Rust text and only formatted (their `// SAFETY:` comments must
//! survive), and checked for drift with the bindings.

mod crate_files;
mod recipes;

use std::fmt::Write;

pub(super) use recipes::SCAFFOLDS;

use super::format::format_source;

/// One crate's scaffolding recipe.
pub(super) struct Scaffold {
    /// The crate's folder (`nvrtc-sys`).
    pub(super) crate_dir: &'static str,
    /// The crate's Rust name (`nvrtc_sys`).
    pub(super) rust_name: &'static str,
    /// Whether the crate has the `cuda-12` and `cuda-13` features (and so `abi.rs`).
    pub(super) abi: bool,
    /// What its root re-exports of `cuda-loader` (`EntryPoint`, `LoadError`, ...).
    pub(super) loader_exports: &'static [&'static str],
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

/// The generated `abi.rs`, the same in every crate with the ABI features.
const ABI_RS: &str = include_str!("scaffold/abi.rs.in");

/// The generated `tests/abi.rs`, `@CRATE@` standing for the crate's Rust name.
const TESTS_ABI_RS: &str = include_str!("scaffold/tests_abi.rs.in");

impl Scaffold {
    /// The crate's scaffolding files: (path under the crate's folder, formatted text).
    pub(super) fn files(&self) -> Result<Vec<(&'static str, String)>, String> {
        let format =
            |text: &str, path: &str| format_source(text, &format!("{}/{path}", self.crate_dir));
        let mut files = vec![
            (
                "src/library.rs",
                format(&self.library.render(), "src/library.rs")?,
            ),
            (
                "src/preamble.rs",
                format(&self.render_preamble(), "src/preamble.rs")?,
            ),
            (
                "tests/library.rs",
                format(&self.render_library_test(), "tests/library.rs")?,
            ),
        ];
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
             //! `xtask/src/bindgen/scaffold/recipes.rs`; do not edit.\n\n\
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
    fn the_preamble_declares_the_bindings_of_the_abi_and_re_exports_the_scaffolding() {
        let cublas = SCAFFOLDS
            .iter()
            .find(|s| s.crate_dir == "cublas-sys")
            .unwrap();
        let text = cublas.render_preamble();
        assert!(text.contains("compile_error!(concat!("), "{text}");
        assert!(text.contains("#[cfg(feature = \"cuda-13\")]\n#[path = \"v13.rs\"]\n"));
        assert!(text.contains("mod abi;\n"));
        assert!(text.contains("pub use abi::ABI_MAJOR;\n"));
        assert!(text.contains(
            "pub use cuda_loader::{EntryPoint, Introduced, Library, LibrarySpec, \
             LibraryVersion, LoadError, PYTHON_ENV_VARS};\n"
        ));
        assert!(text.contains("pub use library::{LIBCUBLAS, LIBCUBLAS_PATH_ENV, cublas};\n"));
        assert!(
            !text.contains("//!"),
            "an included file takes no inner doc comment"
        );
        let nccl = SCAFFOLDS[5].render_preamble();
        assert!(nccl.contains("#[path = \"bindings.rs\"]\n"));
        assert!(!nccl.contains("compile_error!") && !nccl.contains("mod abi;"));
    }

    #[test]
    fn the_library_test_follows_the_recipe() {
        let cublas = SCAFFOLDS
            .iter()
            .find(|s| s.crate_dir == "cublas-sys")
            .unwrap();
        let text = cublas.render_library_test();
        assert!(
            text.contains("use cublas_sys::{LIBCUBLAS_PATH_ENV, LIBCUBLAS};"),
            "{text}"
        );
        assert!(text.contains("(false, true) => &[\"libcublas.so.13\", \"libcublas.so.12\"],"));
        assert!(text.contains("fn then_the_wheels_of_the_python_environment()"));
        assert!(text.contains("use std::path::{Path, PathBuf};"));
        let driver = SCAFFOLDS[0].render_library_test();
        assert!(driver.contains(
            "const FILE_NAMES: &[&str] = if cfg!(windows) { &[\"nvcuda.dll\"] } else { \
             &[\"libcuda.so.1\"] };"
        ));
        assert!(driver.contains("assert!(LIBCUDA.global);"));
        assert!(driver.contains("use std::path::PathBuf;"));
        assert!(!driver.contains("then_the_wheels"));
        let nccl = SCAFFOLDS[5].render_library_test();
        assert!(nccl.contains("const FILE_NAMES: &[&str] = &[\"libnccl.so.2\"];"));
        assert!(!nccl.contains("cuda-13"));
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
