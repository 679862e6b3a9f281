//! Compiled code as bytes: what a compiler produced ([`CodeKind`]) and the artifact a compile
//! gives, a cache stores and a load takes ([`CompiledCode`]: the bytes, their kind and the
//! name-expression map).
//!
//! ```
//! use cuda_safe::{CodeKind, CompiledCode};
//!
//! let code = CompiledCode::new(
//!     CodeKind::Ptx,
//!     b"// a PTX module\0".to_vec(),
//!     vec![("saxpy<float>".to_owned(), "_Z5saxpyIfEvT_PKS0_PS0_m".to_owned())],
//! );
//! assert_eq!(code.kind(), CodeKind::Ptx);
//! assert_eq!(code.lowered_name("saxpy<float>"), Some("_Z5saxpyIfEvT_PKS0_PS0_m"));
//! assert_eq!(code.lowered_name("saxpy<double>"), None);
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The kind of code a compile produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeKind {
    /// PTX text, as `nvrtcGetPTX` returns it (NUL terminator included).
    Ptx,
    /// A CUBIN (an ELF for one SM architecture).
    Cubin,
    /// LTO-IR, for link-time optimisation with nvJitLink.
    LtoIr,
    /// A fatbin: CUBINs for several architectures, PTX and LTO-IR in one container, as
    /// `FatbinBuilder` (feature `fatbin`) builds it (NVRTC does not compile to one).
    Fatbin,
}

impl CodeKind {
    /// Every kind, in the order of their [`CodeKind::tag`]s.
    pub const ALL: [CodeKind; 4] = [
        CodeKind::Ptx,
        CodeKind::Cubin,
        CodeKind::LtoIr,
        CodeKind::Fatbin,
    ];

    /// The lowercase name used in cache keys and listings (`ptx`, `cubin`, `ltoir`, `fatbin`).
    pub fn name(self) -> &'static str {
        match self {
            CodeKind::Ptx => "ptx",
            CodeKind::Cubin => "cubin",
            CodeKind::LtoIr => "ltoir",
            CodeKind::Fatbin => "fatbin",
        }
    }

    /// The byte that stands for this kind in a cache file (1, 2, 3, 4).
    pub fn tag(self) -> u8 {
        match self {
            CodeKind::Ptx => 1,
            CodeKind::Cubin => 2,
            CodeKind::LtoIr => 3,
            CodeKind::Fatbin => 4,
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

/// Compiled code: the bytes, their kind, and the name-expression → lowered-name map that
/// resolves templated kernels by the expression they were asked for.
///
/// This is what [`Program::compile`](crate::Program::compile) produces, what a
/// [`ProgramCache`](crate::cache::ProgramCache) stores, and what
/// [`ObjectCode::from_compiled`](crate::ObjectCode::from_compiled) loads. Cloning is two
/// reference-count increments: the bytes and the names are shared.
#[derive(Debug, Clone)]
pub struct CompiledCode {
    kind: CodeKind,
    bytes: Arc<[u8]>,
    lowered_names: Arc<[(String, String)]>,
    /// Whether the bytes passed the loader's image check (set by the check, or by a cache that
    /// verified an entry stored after it), shared by the clones: the bytes never change.
    image_checked: Arc<AtomicBool>,
}

/// Equal kind, bytes and names; whether the image was checked yet is no part of the code.
impl PartialEq for CompiledCode {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.bytes == other.bytes
            && self.lowered_names == other.lowered_names
    }
}

impl Eq for CompiledCode {}

impl CompiledCode {
    /// Code from its parts: its kind, its bytes exactly as the compiler returned them (PTX
    /// keeps its terminating NUL), and `(name expression, lowered name)` pairs.
    pub fn new(
        kind: CodeKind,
        bytes: impl Into<Arc<[u8]>>,
        lowered_names: impl Into<Arc<[(String, String)]>>,
    ) -> Self {
        Self {
            kind,
            bytes: bytes.into(),
            lowered_names: lowered_names.into(),
            image_checked: Arc::default(),
        }
    }

    /// Whether the bytes passed the loader's image check, so a load need not walk them again.
    pub(crate) fn image_checked(&self) -> bool {
        self.image_checked.load(Ordering::Relaxed)
    }

    /// Records that the bytes passed the loader's image check (for every clone).
    pub(crate) fn mark_image_checked(&self) {
        self.image_checked.store(true, Ordering::Relaxed);
    }

    /// This code, marked as checked when `checked` (a cache entry stored after the check and
    /// verified against its checksum on reading).
    #[cfg(feature = "disk-cache")]
    pub(crate) fn with_image_checked(self, checked: bool) -> Self {
        if checked {
            self.mark_image_checked();
        }
        self
    }

    /// What the bytes are.
    pub fn kind(&self) -> CodeKind {
        self.kind
    }

    /// The compiled bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Every `(name expression, lowered name)` pair, as `nvrtcGetLoweredName` gave them.
    pub fn lowered_names(&self) -> &[(String, String)] {
        &self.lowered_names
    }

    /// The shared name map, for a loaded library to keep without copying it.
    pub(crate) fn shared_lowered_names(&self) -> Arc<[(String, String)]> {
        self.lowered_names.clone()
    }

    /// The lowered (mangled) name recorded for `name_expression`.
    pub fn lowered_name(&self, name_expression: &str) -> Option<&str> {
        self.lowered_names
            .iter()
            .find(|(expression, _)| expression == name_expression)
            .map(|(_, lowered)| lowered.as_str())
    }

    /// The bytes this code is charged against a memory cache's byte cap: the code plus every
    /// name's bytes.
    pub fn weight(&self) -> u64 {
        let names: usize = self
            .lowered_names
            .iter()
            .map(|(expression, lowered)| expression.len() + lowered.len())
            .sum();
        u64::try_from(self.bytes.len().saturating_add(names)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_unknown_tags_are_none() {
        for kind in CodeKind::ALL {
            assert_eq!(CodeKind::from_tag(kind.tag()), Some(kind));
        }
        assert_eq!(CodeKind::from_tag(0), None);
        assert_eq!(CodeKind::from_tag(5), None);
        assert_eq!(CodeKind::LtoIr.to_string(), "ltoir");
        assert_eq!(CodeKind::from_tag(4), Some(CodeKind::Fatbin));
        assert_eq!(CodeKind::Fatbin.to_string(), "fatbin");
    }

    #[test]
    fn weight_counts_code_and_names() {
        let code = CompiledCode::new(
            CodeKind::Cubin,
            vec![0; 10],
            vec![("k<int>".to_owned(), "_Z1kIiEvv".to_owned())],
        );
        assert_eq!(code.weight(), 10 + 6 + 9);
        assert_eq!(code.bytes().len(), 10);
        assert_eq!(code.lowered_names().len(), 1);
    }
}
