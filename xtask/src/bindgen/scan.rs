//! Facts read from the header text itself: function macros and the CUDA version of each
//! entry point.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

/// `#define name target` macros (also through `__CUDA_API_PTDS(target)`) whose target is one
/// of the generated functions and differs from the name.
pub(super) fn function_macros(
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

/// `static inline` wrappers whose body forwards to one of the generated functions, as
/// `nvJitLink.h` maps each API name to its versioned export
/// (`nvJitLinkCreate` -> `__nvJitLinkCreate_13_5`): (wrapper name, target), by name.
pub(super) fn inline_wrappers(
    header: &str,
    prefix: &str,
    functions: &BTreeSet<String>,
) -> Vec<(String, String)> {
    let pattern = format!(
        r"static\s+inline\s+[A-Za-z0-9_]+\s+({prefix}[A-Za-z0-9_]+)\s*\([^)]*\)\s*(?://[^\n]*\s*)?\{{\s*return\s+([A-Za-z0-9_]+)\s*\("
    );
    let Ok(regex) = Regex::new(&pattern) else {
        return Vec::new();
    };
    let mut seen = BTreeMap::new();
    for captures in regex.captures_iter(header) {
        let (name, target) = (&captures[1], &captures[2]);
        if name != target && functions.contains(target) {
            seen.insert(name.to_owned(), target.to_owned());
        }
    }
    seen.into_iter().collect()
}

/// From `cudaTypedefs.h`: each function's `PFN_<base>_v<version>` versions, oldest first
/// (per-thread-stream variants left out).
pub(super) fn introduced_versions(typedefs: &str) -> BTreeMap<String, Vec<u32>> {
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
pub(super) fn since_of(symbol: &str, versions: &BTreeMap<String, Vec<u32>>) -> Option<u32> {
    let (base, abi) = match symbol.rsplit_once("_v") {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (base, n.parse::<usize>().ok()?)
        }
        _ => (symbol, 1),
    };
    versions.get(base)?.get(abi.checked_sub(1)?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn finds_inline_wrappers_of_versioned_exports() {
        let header = "\
extern nvJitLinkResult __nvJitLinkCreate_13_5(nvJitLinkHandle *handle);
#ifndef NVJITLINK_NO_INLINE
static inline nvJitLinkResult nvJitLinkCreate(
  nvJitLinkHandle *handle,
  const char **options)
{
  return __nvJitLinkCreate_13_5 (handle, numOptions, options);
}
#endif
static inline nvJitLinkResult nvJitLinkAddData(
  const char *name) // name can be null
{
  return __nvJitLinkAddData_13_5 (handle, inputType, data, size, name);
}
static inline nvJitLinkResult nvJitLinkOther(void) { return nvJitLinkNotGenerated(); }
";
        let functions: BTreeSet<String> = ["__nvJitLinkCreate_13_5", "__nvJitLinkAddData_13_5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            inline_wrappers(header, "nvJitLink", &functions),
            vec![
                (
                    "nvJitLinkAddData".to_owned(),
                    "__nvJitLinkAddData_13_5".to_owned()
                ),
                (
                    "nvJitLinkCreate".to_owned(),
                    "__nvJitLinkCreate_13_5".to_owned()
                ),
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
}
