//! What a cache stores: the compiled bytes, their kind and the lowered names.

use std::fmt;
use std::sync::Arc;

/// The kind of code a compile produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeKind {
    /// PTX text, as `nvrtcGetPTX` returns it (NUL terminator included).
    Ptx,
    /// A CUBIN (an ELF for one SM architecture).
    Cubin,
    /// LTO-IR, for link-time optimisation with nvJitLink.
    LtoIr,
}

impl CodeKind {
    /// Every kind, in the order of their [`CodeKind::tag`]s.
    pub const ALL: [CodeKind; 3] = [CodeKind::Ptx, CodeKind::Cubin, CodeKind::LtoIr];

    /// The lowercase name used in cache keys and listings (`ptx`, `cubin`, `ltoir`).
    pub fn name(self) -> &'static str {
        match self {
            CodeKind::Ptx => "ptx",
            CodeKind::Cubin => "cubin",
            CodeKind::LtoIr => "ltoir",
        }
    }

    /// The byte that stands for this kind in a cache file (1, 2, 3).
    pub fn tag(self) -> u8 {
        match self {
            CodeKind::Ptx => 1,
            CodeKind::Cubin => 2,
            CodeKind::LtoIr => 3,
        }
    }

    /// The kind a cache-file byte stands for, if any.
    pub fn from_tag(tag: u8) -> Option<CodeKind> {
        CodeKind::ALL.into_iter().find(|kind| kind.tag() == tag)
    }
}

impl fmt::Display for CodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One cached compile: the code, its kind, and the name-expression → lowered-name map.
///
/// Cloning is two reference-count increments: the bytes and the names are shared.
///
/// ```
/// use cuda_safe::cache::{CachedProgram, CodeKind};
///
/// let program = CachedProgram::new(
///     CodeKind::Cubin,
///     vec![0x7f, b'E', b'L', b'F'],
///     vec![("saxpy<float>".to_owned(), "_Z5saxpyIfEvT_PKS0_PS0_m".to_owned())],
/// );
/// assert_eq!(program.lowered_name("saxpy<float>"), Some("_Z5saxpyIfEvT_PKS0_PS0_m"));
/// assert_eq!(program.lowered_name("saxpy<double>"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedProgram {
    /// What [`CachedProgram::code`] is.
    pub kind: CodeKind,
    /// The compiled bytes, exactly as the compiler returned them.
    pub code: Arc<[u8]>,
    /// `(name expression, lowered name)` pairs, as `nvrtcGetLoweredName` gave them.
    pub lowered_names: Arc<[(String, String)]>,
}

impl CachedProgram {
    /// A program from its parts.
    pub fn new(
        kind: CodeKind,
        code: impl Into<Arc<[u8]>>,
        lowered_names: impl Into<Arc<[(String, String)]>>,
    ) -> Self {
        Self {
            kind,
            code: code.into(),
            lowered_names: lowered_names.into(),
        }
    }

    /// The lowered (mangled) name recorded for `name_expression`.
    pub fn lowered_name(&self, name_expression: &str) -> Option<&str> {
        self.lowered_names
            .iter()
            .find(|(expression, _)| expression == name_expression)
            .map(|(_, lowered)| lowered.as_str())
    }

    /// The bytes this entry is charged against a memory cache's byte cap: the code plus every
    /// name's bytes.
    pub fn weight(&self) -> u64 {
        let names: usize = self
            .lowered_names
            .iter()
            .map(|(expression, lowered)| expression.len() + lowered.len())
            .sum();
        u64::try_from(self.code.len().saturating_add(names)).unwrap_or(u64::MAX)
    }
}
