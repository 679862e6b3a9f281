//! What NVIDIA's doxygen-built references make of a header: the group each documented function
//! is filed under, and the hash that names its entry's anchor.
//!
//! Groups come from the header's own commands: `\defgroup X` or `\addtogroup X` followed by
//! `@{` opens group `X` until the matching `@}` (`cuda.h`, `nvml.h`), and `\ingroup X` in a
//! function's comment files that function alone (`nvrtc.h`, `nvJitLink.h`). A function is
//! documented when a doc comment (`/** */`, `/*! */`, `///`) comes right before its declaration,
//! with nothing but preprocessor lines between.
//!
//! Doxygen names a member's anchor `"g"` + the MD5 of its definition (its type and name), its
//! name again and its argument list, with whitespace as doxygen normalises it. The build
//! defines some macros away (`cuda.h`'s `CUDAAPI`) and keeps others in the type (`nvml.h`'s
//! `DECLDIR`, `cuda.h`'s `__CUDA_DEPRECATED`); it drops `extern` and `inline` and keeps
//! `static`. The anchors derived so were checked against NVIDIA's published pages (see the
//! tests).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use super::md5::md5_hex;

/// One documented function, as its reference page files it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Documented {
    /// The doxygen group (`CUDA_MEM`), when the function is filed under one.
    pub(super) group: Option<String>,
    /// The MD5 (hex) of the declaration as doxygen spells it, which names the entry's anchor.
    pub(super) hash: String,
}

/// The documented declarations in `header` of the functions named in `names`, by name. The
/// first documented declaration of a name counts; `ignored_macros` are the macros the
/// library's doxygen build defines away.
pub(super) fn documented_functions(
    header: &str,
    names: &BTreeSet<String>,
    ignored_macros: &[&str],
) -> Result<BTreeMap<String, Documented>, String> {
    let mut scanner = Scanner {
        names,
        ignored_macros,
        commands: Regex::new(r"[\\@](?:(defgroup|addtogroup|ingroup)\s+([A-Za-z0-9_]+)|(\{)|(\}))")
            .map_err(|e| e.to_string())?,
        groups: Vec::new(),
        pending_group: None,
        member_doc: None,
        statement: String::new(),
        found: BTreeMap::new(),
    };
    scanner.scan(&header.replace("\\\r\n", " ").replace("\\\n", " "));
    Ok(scanner.found)
}

/// The state of one pass over a header.
struct Scanner<'a> {
    names: &'a BTreeSet<String>,
    ignored_macros: &'a [&'a str],
    /// The doxygen commands that group: `\defgroup X`, `\addtogroup X`, `\ingroup X`, `@{`, `@}`.
    commands: Regex,
    /// The open groups, innermost last; `None` for an `@{` that opened no named group.
    groups: Vec<Option<String>>,
    /// A group named by `\defgroup` or `\addtogroup`, waiting for its `@{`.
    pending_group: Option<String>,
    /// `Some` right after a doc comment that documents the next declaration, holding the
    /// group its `\ingroup` names.
    member_doc: Option<Option<String>>,
    /// The code since the last `;`, `{` or `}`.
    statement: String,
    found: BTreeMap<String, Documented>,
}

impl Scanner<'_> {
    /// Walks `text`: comments, preprocessor lines and code.
    fn scan(&mut self, text: &str) {
        let mut rest = text;
        let mut line_start = true;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("/*") {
                let (body, next) = after.split_once("*/").unwrap_or((after, ""));
                self.comment(body, false);
                self.statement.push(' ');
                rest = next;
                continue;
            }
            if let Some(after) = rest.strip_prefix("//") {
                let end = after.find('\n').unwrap_or(after.len());
                self.comment(&after[..end], true);
                rest = &after[end..];
                continue;
            }
            if line_start && c == '#' {
                rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
                continue;
            }
            match c {
                ';' | '{' | '}' => self.end_statement(),
                _ => self.statement.push(c),
            }
            if c == '\n' {
                line_start = true;
            } else if !c.is_whitespace() {
                line_start = false;
            }
            rest = &rest[c.len_utf8()..];
        }
    }

    /// A comment's text (without its delimiters): a doc comment's grouping commands, or its
    /// documenting the next declaration.
    fn comment(&mut self, body: &str, line: bool) {
        let doc = body.starts_with(if line { '/' } else { '*' }) || body.starts_with('!');
        // `/**< ... */` documents the member before it.
        if !doc || body[1..].starts_with('<') {
            return;
        }
        let mut grouping = false;
        let mut ingroup = None;
        for captures in self.commands.captures_iter(body) {
            match (captures.get(1).map(|m| m.as_str()), captures.get(2)) {
                (Some("ingroup"), Some(name)) => ingroup = Some(name.as_str().to_owned()),
                (Some(_), Some(name)) => {
                    self.pending_group = Some(name.as_str().to_owned());
                    grouping = true;
                }
                _ if captures.get(3).is_some() => {
                    self.groups.push(self.pending_group.take());
                    grouping = true;
                }
                _ => {
                    self.groups.pop();
                    grouping = true;
                }
            }
        }
        self.member_doc = (!grouping).then_some(ingroup);
    }

    /// The statement ends: a documented declaration of a wanted name is recorded.
    fn end_statement(&mut self) {
        let statement = std::mem::take(&mut self.statement);
        if statement.trim().is_empty() {
            return;
        }
        let member_doc = self.member_doc.take();
        self.pending_group = None;
        let (Some(ingroup), Some((prefix, name, args))) = (member_doc, declaration(&statement))
        else {
            return;
        };
        if !self.names.contains(name) || self.found.contains_key(name) {
            return;
        }
        let definition = self.definition(prefix, name);
        let hash = md5_hex(format!("{definition}{name}({})", arguments(args)).as_bytes());
        let group = ingroup.or_else(|| self.groups.iter().rev().find_map(Clone::clone));
        self.found
            .insert(name.to_owned(), Documented { group, hash });
    }

    /// Doxygen's definition of a function: its type as written, without `extern`, `inline` and
    /// the macros the build defines away, then its name.
    fn definition(&self, prefix: &str, name: &str) -> String {
        let words: Vec<&str> = prefix
            .split_whitespace()
            .filter(|word| {
                !["extern", "inline"].contains(word) && !self.ignored_macros.contains(word)
            })
            .collect();
        format!("{} {name}", words.join(" "))
    }
}

/// A statement that declares a function: (what comes before its name, its name, the text
/// between its parentheses). The name is the identifier before the parenthesis that the
/// statement's last `)` closes, so a type holding a macro call (`DEPRECATED(13.0) int f(void)`)
/// is read whole.
fn declaration(statement: &str) -> Option<(&str, &str, &str)> {
    let statement = statement.trim();
    let close = statement.len().checked_sub(1)?;
    if !statement.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    let mut open = None;
    for (at, c) in statement.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    open = Some(at);
                    break;
                }
            }
            _ => {}
        }
    }
    let open = open?;
    let before = statement[..open].trim_end();
    let name_start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |at| at + 1);
    let name = &before[name_start..];
    let prefix = before[..name_start].trim();
    let plausible = !prefix.is_empty()
        && !prefix.contains(['=', '#'])
        && !prefix
            .split_whitespace()
            .any(|word| ["typedef", "return"].contains(&word));
    let first = name.chars().next()?;
    (plausible && (first.is_ascii_alphabetic() || first == '_'))
        .then(|| (prefix, name, &statement[open + 1..close]))
}

/// An argument list as doxygen writes it: whitespace collapsed to one space, none inside the
/// parentheses' ends or before a comma, one after each comma, none after a `*` or `&`
/// (`const char * const *p` is `const char *const *p`).
fn arguments(args: &str) -> String {
    let collapsed = args.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(collapsed.len());
    let chars: Vec<char> = collapsed.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let previous = out.chars().last();
            let next = chars.get(i + 1).copied();
            let after_pointer = matches!(previous, Some('*' | '&'))
                && next.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '_' | '*' | '&'));
            if after_pointer || next == Some(',') {
                continue;
            }
        }
        out.push(c);
        if c == ',' && chars.get(i + 1) != Some(&' ') {
            out.push(' ');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn groups_nest_and_ingroup_files_one_function() {
        let header = "\
/**
 * \\defgroup CUDA_MEM Memory Management
 * @{
 */
/** \\brief Allocates. */
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr,
                            size_t bytesize);
/** @defgroup inner Inner
 *  @{
 */
/** Frees. */
__CUDA_DEPRECATED CUresult CUDAAPI cuMemFree(CUdeviceptr dptr);
/** @} */
CUresult CUDAAPI cuUndocumented(void);
/** Synchronises. */
#if defined(X)
CUresult CUDAAPI cuCtxSynchronize(void);
#endif
/** @} */ /* END CUDA_MEM */
/**
 * \\ingroup compilation
 */
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog);
/** \\ingroup linking */
#ifndef NVJITLINK_NO_INLINE
static inline nvJitLinkResult nvJitLinkCreate(
  nvJitLinkHandle *handle, // the handle
  uint32_t numOptions,
  const char **options)
{
  return __nvJitLinkCreate_13_5 (handle, numOptions, options);
}
#else
extern nvJitLinkResult nvJitLinkCreate(nvJitLinkHandle *handle);
#endif
";
        let wanted = names(&[
            "cuMemAlloc",
            "cuMemFree",
            "cuUndocumented",
            "cuCtxSynchronize",
            "nvrtcDestroyProgram",
            "nvJitLinkCreate",
            "__nvJitLinkCreate_13_5",
        ]);
        let found = documented_functions(header, &wanted, &["CUDAAPI"]).unwrap();
        let group = |name: &str| found[name].group.as_deref();
        assert_eq!(group("cuMemAlloc"), Some("CUDA_MEM"));
        assert_eq!(group("cuMemFree"), Some("inner"));
        assert_eq!(group("cuCtxSynchronize"), Some("CUDA_MEM"));
        assert_eq!(group("nvrtcDestroyProgram"), Some("compilation"));
        assert_eq!(group("nvJitLinkCreate"), Some("linking"));
        assert!(!found.contains_key("cuUndocumented"));
        assert!(!found.contains_key("__nvJitLinkCreate_13_5"));
        // The anchors of NVIDIA's pages for these declarations.
        assert_eq!(found["cuMemAlloc"].hash, "b82d2a09844a58dd9e744dc31e8aa467");
        assert_eq!(
            found["cuCtxSynchronize"].hash,
            "7a54725f28d34b8c6299f0c6ca579616"
        );
        assert_eq!(
            found["nvrtcDestroyProgram"].hash,
            "aa237c59615b7d4f48d5b308b5c9b140"
        );
        assert_eq!(
            found["nvJitLinkCreate"].hash,
            "48ba234f5d1ae2dbabb037a319cd061b"
        );
    }

    /// Declarations copied from the pinned headers, with the anchor NVIDIA's page gives each.
    #[test]
    fn hashes_match_published_anchors() {
        let cases: [(&str, &[&str], &str); 7] = [
            (
                "CUresult CUDAAPI cuLaunchKernel(CUfunction f,\n    unsigned int gridDimX,\n    \
                 unsigned int gridDimY,\n    unsigned int gridDimZ,\n    \
                 unsigned int blockDimX,\n    unsigned int blockDimY,\n    \
                 unsigned int blockDimZ,\n    unsigned int sharedMemBytes,\n    \
                 CUstream hStream,\n    void **kernelParams,\n    void **extra);",
                &["CUDAAPI"],
                "b8f3dc3031b40da29d5f9a7139e52e15",
            ),
            (
                "__CUDA_DEPRECATED CUresult CUDAAPI cuFuncSetSharedSize(CUfunction hfunc, \
                 unsigned int bytes);",
                &["CUDAAPI"],
                "9b5a3f121142f7b42aea48366c72bf8b",
            ),
            (
                "CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, \
                 unsigned int flags, CUdevice dev);",
                &["CUDAAPI"],
                "77e9fb578caefca5ed15b4acebf35265",
            ),
            (
                "nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog,\n    const char *src,\n    \
                 const char *name,\n    int numHeaders,\n    const char * const *headers,\n    \
                 const char * const *includeNames);",
                &[],
                "9ae65f68911d1cf0adda2af4ad8cb458",
            ),
            (
                "nvmlReturn_t DECLDIR nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, \
                 unsigned long long *energy);",
                &[],
                "732ab899b5bd18ac4bfb93c02de4900a",
            ),
            (
                "nvmlReturn_t DECLDIR nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion);",
                &[],
                "1d12b603a42805ee7e4160557ffc2128",
            ),
            (
                "extern nvJitLinkResult nvJitLinkVersion(\n  unsigned int *major,\n  \
                 unsigned int *minor);",
                &[],
                "04b722539d968953cb5cc70488e3f47a",
            ),
        ];
        for (declaration, ignored, hash) in cases {
            let header = format!("/** Documented. */\n{declaration}\n");
            let (_, name, _) = super::declaration(declaration.trim_end_matches(';')).unwrap();
            let found = documented_functions(&header, &names(&[name]), ignored).unwrap();
            assert_eq!(found[name].hash, hash, "{name}");
            assert_eq!(found[name].group, None);
        }
    }

    #[test]
    fn arguments_are_spelled_as_doxygen_spells_them() {
        assert_eq!(
            arguments(" const char * const * headers ,int  n "),
            "const char *const *headers, int n"
        );
        assert_eq!(arguments("void"), "void");
        assert_eq!(arguments(""), "");
        assert_eq!(arguments("void **pp,size_t b"), "void **pp, size_t b");
    }

    #[test]
    fn statements_that_are_no_declarations_are_passed_over() {
        assert_eq!(declaration("return f(a, b)"), None);
        assert_eq!(
            declaration("typedef CUresult (CUDAAPI *PFN_x)(int a)"),
            None
        );
        assert_eq!(declaration("int x = f(3)"), None);
        assert_eq!(declaration("extern \"C\""), None);
        assert_eq!(
            declaration("__DEPRECATED__(\"use g\") nvrtcResult f(int a)"),
            Some(("__DEPRECATED__(\"use g\") nvrtcResult", "f", "int a"))
        );
        assert_eq!(
            declaration("DEPRECATED(13.0) nvmlReturn_t DECLDIR nvmlX(int a)"),
            Some(("DEPRECATED(13.0) nvmlReturn_t DECLDIR", "nvmlX", "int a"))
        );
    }
}
