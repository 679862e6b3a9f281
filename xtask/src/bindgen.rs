//! `cargo xtask bindgen`: generates the raw bindings and the lazily loading entry-point tables.
//!
//! For each header (`cuda.h`, `nvrtc.h`, `nvml.h`) of each CUDA major, bindgen produces the
//! types and constants; the function declarations it finds become methods of one struct
//! (`Driver`, `Nvrtc`, `Nvml`) that resolve their symbol through `cuda-loader` on first use.
//! The symbol of each method is the name clang sees after the header's macros, so it is the
//! versioned one (`cuMemAlloc_v2`). The output goes through prettyplease and then rustfmt, so
//! two runs give identical bytes and `cargo fmt --check` accepts it.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use regex::Regex;

use crate::headers::{self, HeaderSet};

/// One header's generation recipe.
struct Api {
    /// The crate the output belongs to.
    crate_dir: &'static str,
    /// The header file name.
    header: &'static str,
    /// The struct holding the entry points.
    struct_name: &'static str,
    /// What the struct's doc calls the library.
    library: &'static str,
    /// Prefix of the header's functions and function macros.
    prefix: &'static str,
    /// bindgen allowlists: functions, types, variables.
    functions: &'static str,
    types: &'static str,
    vars: &'static str,
}

const APIS: [Api; 3] = [
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
];

/// Parsed command line of `cargo xtask bindgen`.
#[derive(Debug, Default, PartialEq)]
struct Options {
    cuda_home: Option<PathBuf>,
    check: bool,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => options.check = true,
            "--from-wheels" => options.cuda_home = None,
            "--cuda-home" => {
                let dir = args.next().ok_or("--cuda-home needs a directory")?;
                options.cuda_home = Some(PathBuf::from(dir));
            }
            other => return Err(format!("unknown argument `{other}` for bindgen")),
        }
    }
    Ok(options)
}

/// Runs `cargo xtask bindgen`.
pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let root = crate::workspace_root();
    let sets = match &options.cuda_home {
        Some(dir) => vec![headers::from_toolkit(dir)?],
        None => headers::from_wheels(&root)?,
    };
    let mut drifted = Vec::new();
    for set in &sets {
        for api in &APIS {
            let code = generate(api, set)?;
            let path = root
                .join(api.crate_dir)
                .join("src")
                .join(format!("v{}.rs", set.major));
            let committed = fs::read_to_string(&path).ok();
            if committed.as_deref() == Some(code.as_str()) {
                println!("unchanged {}", path.display());
            } else if options.check {
                drifted.push(path.display().to_string());
            } else {
                fs::write(&path, &code).map_err(|e| format!("writing {}: {e}", path.display()))?;
                println!("wrote {}", path.display());
            }
        }
    }
    if drifted.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "generated bindings differ from the committed files (run `cargo xtask bindgen`): {}",
            drifted.join(", ")
        ))
    }
}

/// Generates the complete, formatted file of one header.
fn generate(api: &Api, set: &HeaderSet) -> Result<String, String> {
    let header_path = set.header(api.header);
    // Macros continued over several lines are read as one line.
    let header_text = read(&header_path)?.replace("\\\n", " ");
    let raw = bindgen::Builder::default()
        .header(header_path.display().to_string())
        .clang_arg(format!("-I{}", set.include_dir.display()))
        .allowlist_function(api.functions)
        .allowlist_type(api.types)
        .allowlist_var(api.vars)
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: false,
        })
        .derive_default(true)
        .generate_comments(false)
        .layout_tests(true)
        .formatter(bindgen::Formatter::None)
        .rust_target(bindgen::RustTarget::stable(85, 0).map_err(|e| e.to_string())?)
        .rust_edition(bindgen::RustEdition::Edition2024)
        .generate()
        .map_err(|e| format!("bindgen failed on {}: {e}", header_path.display()))?
        .to_string();
    let file = syn::parse_file(&raw).map_err(|e| format!("parsing bindgen output: {e}"))?;

    let mut items = Vec::new();
    let mut functions = Vec::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(block) => {
                for foreign in block.items {
                    match foreign {
                        syn::ForeignItem::Fn(function) => functions.push(function.sig),
                        other => {
                            return Err(format!(
                                "unexpected foreign item in {}: {}",
                                api.header,
                                quote!(#other)
                            ));
                        }
                    }
                }
            }
            other => items.push(other),
        }
    }

    let function_names: BTreeSet<String> =
        functions.iter().map(|sig| sig.ident.to_string()).collect();
    let aliases = function_macros(&header_text, api.prefix, &function_names);
    let since = if api.header == headers::CUDA_H {
        let typedefs = read(&set.header(headers::CUDA_TYPEDEFS_H))?;
        introduced_versions(&typedefs)
    } else {
        BTreeMap::new()
    };
    let struct_versions = if api.header == headers::NVML_H {
        nvml_struct_versions(&header_text, &items)?
    } else {
        TokenStream::new()
    };

    let preamble = [
        format!(
            " Raw bindings to `{}` of CUDA {}.{} ({}).",
            api.header,
            set.cuda_version / 1000,
            (set.cuda_version % 1000) / 10,
            set.source_of(api.header),
        ),
        String::new(),
        format!(" Generated by `cargo xtask bindgen` with bindgen {BINDGEN_VERSION}; do not edit."),
        " Types and constants come from bindgen; each function of the header is a method of"
            .to_owned(),
        format!(
            " [`{}`] that resolves its symbol on first use.",
            api.struct_name
        ),
    ];
    let cuda_version = Literal::u32_unsuffixed(set.cuda_version);
    let entry_points = entry_point_table(&functions, &since)?;
    let alias_rows = aliases
        .iter()
        .map(|(api_name, symbol)| quote!((#api_name, #symbol)));
    let struct_tokens = entry_point_struct(api, &functions, &aliases, &since)?;

    let tokens = quote! {
        #(#![doc = #preamble])*
        #(#items)*

        /// `CUDA_VERSION` of the `cuda.h` these bindings were generated with.
        pub const HEADER_CUDA_VERSION: u32 = #cuda_version;

        /// Function macros of the header: (name used in C, exported symbol it expands to).
        pub const VERSIONED_NAMES: &[(&str, &str)] = &[#(#alias_rows),*];

        #struct_versions
        #entry_points
        #struct_tokens
    };
    let file = syn::parse2::<syn::File>(tokens)
        .map_err(|e| format!("generated code for {} does not parse: {e}", api.header))?;
    // rustfmt is not idempotent on some long lines: format until the text stops changing.
    let mut code = prettyplease::unparse(&file);
    for _ in 0..4 {
        let formatted = rustfmt(&code)?;
        if formatted == code {
            return Ok(code);
        }
        code = formatted;
    }
    Err(format!(
        "rustfmt does not settle on the bindings of {}",
        api.header
    ))
}

/// The bindgen version, for the preamble (kept equal to the pinned one by a test).
const BINDGEN_VERSION: &str = "0.73.2";

/// `#define name target` macros (also through `__CUDA_API_PTDS(target)`) whose target is one
/// of the generated functions and differs from the name.
fn function_macros(
    header: &str,
    prefix: &str,
    functions: &BTreeSet<String>,
) -> Vec<(String, String)> {
    let pattern = format!(
        r"^\s*#\s*define\s+({prefix}[A-Za-z0-9_]+)\s+(?:__CUDA_API_PT(?:DS|SZ)\(\s*)?({prefix}[A-Za-z0-9_]+)\s*\)?\s*(?://.*)?$"
    );
    let Ok(regex) = Regex::new(&pattern) else {
        return Vec::new();
    };
    let mut seen = BTreeMap::new();
    for line in header.lines() {
        if let Some(captures) = regex.captures(line) {
            let (name, target) = (&captures[1], &captures[2]);
            if name != target && functions.contains(target) {
                seen.insert(name.to_owned(), target.to_owned());
            }
        }
    }
    seen.into_iter().collect()
}

/// From `cudaTypedefs.h`: each function's `PFN_<base>_v<version>` versions, oldest first
/// (per-thread-stream variants left out).
fn introduced_versions(typedefs: &str) -> BTreeMap<String, Vec<u32>> {
    let mut versions: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let Ok(regex) = Regex::new(r"\*\s*PFN_(cu[A-Za-z0-9]+)_v([0-9]+)(_pt(?:ds|sz))?\s*\)") else {
        return BTreeMap::new();
    };
    for captures in regex.captures_iter(typedefs) {
        if captures.get(3).is_some() {
            continue;
        }
        if let Ok(version) = captures[2].parse() {
            versions
                .entry(captures[1].to_owned())
                .or_default()
                .insert(version);
        }
    }
    versions
        .into_iter()
        .map(|(name, set)| (name, set.into_iter().collect()))
        .collect()
}

/// The CUDA version that introduced `symbol`: `cuX_vN` is the N-th ABI of `cuX` in
/// `cudaTypedefs.h` (`cuX` itself the first).
fn since_of(symbol: &str, versions: &BTreeMap<String, Vec<u32>>) -> Option<u32> {
    let (base, abi) = match symbol.rsplit_once("_v") {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (base, n.parse::<usize>().ok()?)
        }
        _ => (symbol, 1),
    };
    versions.get(base)?.get(abi.checked_sub(1)?).copied()
}

/// `pub static ENTRY_POINTS` and `ENTRY_POINT_COUNT`.
fn entry_point_table(
    functions: &[syn::Signature],
    since: &BTreeMap<String, Vec<u32>>,
) -> Result<TokenStream, String> {
    let count = Literal::usize_unsuffixed(functions.len());
    let rows = functions
        .iter()
        .map(|sig| {
            let name = sig.ident.to_string();
            let symbol = CString::new(name.clone())
                .map_err(|e| format!("symbol {name} holds a NUL byte: {e}"))?;
            let symbol = Literal::c_string(&symbol);
            let version = match since_of(&name, since) {
                Some(version) => {
                    let version = Literal::u32_unsuffixed(version);
                    quote!(Some(#version))
                }
                None => quote!(None),
            };
            Ok(quote!(::cuda_loader::EntryPoint::new(#symbol, #version)))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(quote! {
        /// How many entry points the header declares.
        pub const ENTRY_POINT_COUNT: usize = #count;

        /// Every function of the header, in header order; a method's index into this table is
        /// its cache slot.
        pub static ENTRY_POINTS: [::cuda_loader::EntryPoint; ENTRY_POINT_COUNT] = [#(#rows),*];
    })
}

/// The struct whose methods call the header's functions.
fn entry_point_struct(
    api: &Api,
    functions: &[syn::Signature],
    aliases: &[(String, String)],
    since: &BTreeMap<String, Vec<u32>>,
) -> Result<TokenStream, String> {
    let name = format_ident!("{}", api.struct_name);
    let struct_doc = format!(
        " The entry points of {}, each resolved on first call and cached.\n\n \
         Every method is `unsafe`: the caller upholds the C function's contract (valid \
         pointers, handles and sizes) as the header documents it. A method returns \
         [`LoadError::SymbolMissing`](::cuda_loader::LoadError::SymbolMissing) when the loaded \
         library lacks its symbol, and otherwise the C function's own return value.",
        api.library
    );
    let methods = functions
        .iter()
        .enumerate()
        .map(|(index, sig)| method(index, sig, aliases, since))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(quote! {
        #[doc = #struct_doc]
        #[derive(Debug)]
        pub struct #name {
            library: ::cuda_loader::Library<ENTRY_POINT_COUNT>,
        }

        impl #name {
            /// Wraps a library opened with [`ENTRY_POINTS`].
            ///
            /// # Safety
            ///
            /// `library` must have been opened with [`ENTRY_POINTS`], and every symbol listed
            /// there that the library exports must have the signature the header declares for
            /// it: each method calls its symbol through that signature.
            pub unsafe fn new(library: ::cuda_loader::Library<ENTRY_POINT_COUNT>) -> Self {
                Self { library }
            }

            /// The loaded library (its path, and which entry points it has).
            pub fn library(&self) -> &::cuda_loader::Library<ENTRY_POINT_COUNT> {
                &self.library
            }

            #(#methods)*
        }
    })
}

/// One method: look the symbol up in its slot, then call it.
fn method(
    index: usize,
    sig: &syn::Signature,
    aliases: &[(String, String)],
    since: &BTreeMap<String, Vec<u32>>,
) -> Result<TokenStream, String> {
    let ident = &sig.ident;
    let symbol = ident.to_string();
    if sig.variadic.is_some() {
        return Err(format!(
            "{symbol} is variadic, which the loader does not support"
        ));
    }
    let mut names = Vec::new();
    let mut types = Vec::new();
    for input in &sig.inputs {
        let syn::FnArg::Typed(typed) = input else {
            return Err(format!("{symbol} has a receiver"));
        };
        let syn::Pat::Ident(pat) = typed.pat.as_ref() else {
            return Err(format!("{symbol} has an unnamed parameter"));
        };
        names.push(pat.ident.clone());
        types.push(typed.ty.as_ref().clone());
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    let mut doc = format!(" Calls `{symbol}`");
    if let Some((api_name, _)) = aliases.iter().find(|(_, target)| *target == symbol) {
        doc.push_str(&format!(" (what `{api_name}` names in the header)"));
    }
    if let Some(version) = since_of(&symbol, since) {
        doc.push_str(&format!(
            ", since CUDA {}.{}",
            version / 1000,
            (version % 1000) / 10
        ));
    }
    doc.push('.');
    let slot = Literal::usize_unsuffixed(index);
    Ok(quote! {
        #[doc = #doc]
        #[inline]
        pub unsafe fn #ident(&self, #(#names: #types),*)
            -> ::core::result::Result<#ret, ::cuda_loader::LoadError>
        {
            // C reserves names with two leading underscores, so no parameter is called this.
            let __c_function = unsafe {
                self.library.get::<unsafe extern "C" fn(#(#types),*) -> #ret>(#slot)
            }?;
            Ok(unsafe { __c_function(#(#names),*) })
        }
    })
}

/// NVML's `#define nvmlX_vN NVML_STRUCT_VERSION(X, N)` constants, which bindgen cannot
/// evaluate (they use `sizeof`): `size_of::<nvmlX_vN_t>() | N << 24`.
fn nvml_struct_versions(header: &str, items: &[syn::Item]) -> Result<TokenStream, String> {
    let regex = Regex::new(
        r"(?m)^\s*#\s*define\s+(nvml[A-Za-z0-9_]+)\s+NVML_STRUCT_VERSION\(\s*([A-Za-z0-9_]+)\s*,\s*([0-9]+)\s*\)",
    )
    .map_err(|e| e.to_string())?;
    let defined: BTreeSet<String> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Type(t) => Some(t.ident.to_string()),
            syn::Item::Union(u) => Some(u.ident.to_string()),
            _ => None,
        })
        .collect();
    let mut constants = BTreeMap::new();
    for captures in regex.captures_iter(header) {
        let name = captures[1].to_owned();
        let ty = format!("nvml{}_v{}_t", &captures[2], &captures[3]);
        if !defined.contains(&ty) {
            return Err(format!("{name} names {ty}, which bindgen did not generate"));
        }
        let version: u32 = captures[3]
            .parse()
            .map_err(|e| format!("{name}: version {}: {e}", &captures[3]))?;
        constants.insert(name, (ty, version));
    }
    let rows = constants.iter().map(|(name, (ty, version))| {
        let name = format_ident!("{name}");
        let ty = format_ident!("{ty}");
        let version = Literal::u32_unsuffixed(*version);
        let doc = format!(" `NVML_STRUCT_VERSION` of [`{ty}`].");
        quote! {
            #[doc = #doc]
            pub const #name: ::std::os::raw::c_uint =
                (::core::mem::size_of::<#ty>() as ::std::os::raw::c_uint) | (#version << 24);
        }
    });
    Ok(quote!(#(#rows)*))
}

/// Formats Rust source with the toolchain's rustfmt (edition 2024), as `cargo fmt` would.
fn rustfmt(source: &str) -> Result<String, String> {
    let mut child = Command::new(std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".into()))
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("rustfmt has no stdin")?;
    let input = source.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    writer
        .join()
        .map_err(|_| "rustfmt writer thread failed".to_owned())?
        .map_err(|e| format!("feeding rustfmt: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "rustfmt failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8(output.stdout).map_err(|e| format!("rustfmt output: {e}"))
}

/// Reads a text file.
fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_arguments() {
        assert_eq!(parse_args(&[]).unwrap(), Options::default());
        let options = parse_args(&strings(&["--cuda-home", "/opt/cuda", "--check"])).unwrap();
        assert_eq!(options.cuda_home, Some(PathBuf::from("/opt/cuda")));
        assert!(options.check);
        assert!(parse_args(&strings(&["--cuda-home"])).is_err());
        assert!(parse_args(&strings(&["--frobnicate"])).is_err());
    }

    #[test]
    fn finds_function_macros_through_ptds_wrappers() {
        let header = "\
#define cuMemAlloc                          cuMemAlloc_v2
    #define cuMemcpyHtoD                    __CUDA_API_PTDS(cuMemcpyHtoD_v2)
#define cuMemcpy                            __CUDA_API_PTDS(cuMemcpy)
#define cuNotAFunction                      cuNotAFunction_v9
#define CU_STREAM_LEGACY ((CUstream)0x1)
";
        let functions: BTreeSet<String> = ["cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuMemcpy"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let found = function_macros(header, "cu", &functions);
        assert_eq!(
            found,
            vec![
                ("cuMemAlloc".to_owned(), "cuMemAlloc_v2".to_owned()),
                ("cuMemcpyHtoD".to_owned(), "cuMemcpyHtoD_v2".to_owned()),
            ]
        );
    }

    #[test]
    fn versions_come_from_typedef_suffixes() {
        let typedefs = "\
typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v3020)(CUcontext *pctx);
typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v11040)(CUcontext *pctx);
typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v12050)(CUcontext *pctx);
typedef CUresult (CUDAAPI *PFN_cuMemcpyHtoD_v7000_ptds)(CUdeviceptr_v2 dstDevice);
    typedef CUresult (CUDAAPI *PFN_cuCtxCreate_v2000)(CUcontext *pctx);
typedef CUresult (CUDAAPI *PFN_cuKernelGetParamInfo_v12040)(CUkernel kernel);
";
        let versions = introduced_versions(typedefs);
        assert_eq!(versions["cuCtxCreate"], vec![2000, 3020, 11040, 12050]);
        assert!(!versions.contains_key("cuMemcpyHtoD"));
        assert_eq!(since_of("cuCtxCreate", &versions), Some(2000));
        assert_eq!(since_of("cuCtxCreate_v2", &versions), Some(3020));
        assert_eq!(since_of("cuCtxCreate_v4", &versions), Some(12050));
        assert_eq!(since_of("cuCtxCreate_v9", &versions), None);
        assert_eq!(since_of("cuKernelGetParamInfo", &versions), Some(12040));
        assert_eq!(since_of("cuUnknown", &versions), None);
    }

    #[test]
    fn preamble_version_matches_the_pinned_bindgen() {
        let manifest = include_str!("../../Cargo.toml");
        assert!(
            manifest.contains(&format!("bindgen = \"={BINDGEN_VERSION}\"")),
            "update BINDGEN_VERSION with the workspace's bindgen pin"
        );
    }
}
