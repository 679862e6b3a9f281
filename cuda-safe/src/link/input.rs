//! What a link takes: [`LinkInput`]s of each [`LinkInputKind`], from bytes, compiled code or
//! files.

use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::code::{CodeKind, CompiledCode};
use crate::error::{Error, Result};
use cuda_sys::CUjitInputType;
#[cfg(feature = "nvjitlink")]
use nvjitlink_sys::nvJitLinkInputType;

/// The kind of one link input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkInputKind {
    /// A CUBIN (an ELF for one SM architecture), relocatable or not.
    Cubin,
    /// PTX text.
    Ptx,
    /// LTO-IR (`CodeKind::LtoIr`, NVRTC's `-dlto` output); needs nvJitLink and `lto`.
    LtoIr,
    /// A fatbin (several CUBINs, PTX or LTO-IR in one container).
    Fatbin,
    /// A host object file with embedded device code (`nvcc -rdc=true -c` output).
    Object,
    /// An archive of host objects with device code (`.a`, `.lib`).
    Library,
}

impl LinkInputKind {
    /// The kind a compile produced.
    pub fn of_code(kind: CodeKind) -> Self {
        match kind {
            CodeKind::Ptx => LinkInputKind::Ptx,
            CodeKind::Cubin => LinkInputKind::Cubin,
            CodeKind::LtoIr => LinkInputKind::LtoIr,
            CodeKind::Fatbin => LinkInputKind::Fatbin,
        }
    }

    /// The kind a file name's extension stands for: `.cubin`, `.ptx`, `.ltoir`, `.fatbin`,
    /// `.o`/`.obj`, `.a`/`.lib`.
    pub fn of_path(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "cubin" => LinkInputKind::Cubin,
            "ptx" => LinkInputKind::Ptx,
            "ltoir" | "lto" => LinkInputKind::LtoIr,
            "fatbin" | "fatbinary" => LinkInputKind::Fatbin,
            "o" | "obj" => LinkInputKind::Object,
            "a" | "lib" => LinkInputKind::Library,
            _ => return None,
        })
    }

    /// The kind's name (`cubin`, `ptx`, `ltoir`, `fatbin`, `object`, `library`).
    pub fn name(self) -> &'static str {
        match self {
            LinkInputKind::Cubin => "cubin",
            LinkInputKind::Ptx => "ptx",
            LinkInputKind::LtoIr => "ltoir",
            LinkInputKind::Fatbin => "fatbin",
            LinkInputKind::Object => "object",
            LinkInputKind::Library => "library",
        }
    }

    /// nvJitLink's input type.
    #[cfg(feature = "nvjitlink")]
    pub(super) fn nvjitlink(self) -> nvJitLinkInputType {
        match self {
            LinkInputKind::Cubin => nvJitLinkInputType::NVJITLINK_INPUT_CUBIN,
            LinkInputKind::Ptx => nvJitLinkInputType::NVJITLINK_INPUT_PTX,
            LinkInputKind::LtoIr => nvJitLinkInputType::NVJITLINK_INPUT_LTOIR,
            LinkInputKind::Fatbin => nvJitLinkInputType::NVJITLINK_INPUT_FATBIN,
            LinkInputKind::Object => nvJitLinkInputType::NVJITLINK_INPUT_OBJECT,
            LinkInputKind::Library => nvJitLinkInputType::NVJITLINK_INPUT_LIBRARY,
        }
    }

    /// The driver linker's input type; LTO-IR has none there (`None`).
    pub(super) fn driver(self) -> Option<CUjitInputType> {
        Some(match self {
            LinkInputKind::Cubin => CUjitInputType::CU_JIT_INPUT_CUBIN,
            LinkInputKind::Ptx => CUjitInputType::CU_JIT_INPUT_PTX,
            LinkInputKind::Fatbin => CUjitInputType::CU_JIT_INPUT_FATBINARY,
            LinkInputKind::Object => CUjitInputType::CU_JIT_INPUT_OBJECT,
            LinkInputKind::Library => CUjitInputType::CU_JIT_INPUT_LIBRARY,
            LinkInputKind::LtoIr => return None,
        })
    }
}

/// One input of a link: its kind, a name for the linker's logs, and its bytes (shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInput {
    kind: LinkInputKind,
    name: String,
    bytes: Bytes,
}

/// A link input's bytes, shared by its clones: the caller's (or compiled code's), or the
/// buffer a file was read into, kept as it was read (turning it into an `Arc<[u8]>` would copy
/// it, holding the file twice at once).
#[derive(Clone)]
enum Bytes {
    /// Bytes the caller gave.
    Shared(Arc<[u8]>),
    /// A file's bytes, in the buffer they were read into.
    Read(Arc<Vec<u8>>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Shared(bytes) => bytes,
            Bytes::Read(bytes) => bytes,
        }
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Bytes {}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl LinkInput {
    /// An input from bytes. PTX gets the NUL terminator the linkers need when it lacks one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for empty bytes, or a name with a NUL byte.
    pub fn from_bytes(
        kind: LinkInputKind,
        name: impl Into<String>,
        bytes: impl Into<Arc<[u8]>>,
    ) -> Result<Self> {
        let name = name.into();
        let mut bytes: Arc<[u8]> = bytes.into();
        check(kind, &name, &bytes)?;
        if kind == LinkInputKind::Ptx && bytes.last() != Some(&0) {
            let mut terminated = Vec::with_capacity(bytes.len() + 1);
            terminated.extend_from_slice(&bytes);
            terminated.push(0);
            bytes = terminated.into();
        }
        Ok(Self {
            kind,
            name,
            bytes: Bytes::Shared(bytes),
        })
    }

    /// Compiled code ([`Program::compile`](crate::Program::compile)'s, or a cache's) as an
    /// input named `name`; its bytes are shared, not copied.
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes).
    pub fn from_compiled(code: &CompiledCode, name: impl Into<String>) -> Result<Self> {
        Self::from_bytes(
            LinkInputKind::of_code(code.kind()),
            name,
            Arc::<[u8]>::from(code.bytes()),
        )
    }

    /// The largest file [`from_file`](Self::from_file) and [`from_file_as`](Self::from_file_as)
    /// read: 1 GiB; [`from_file_as_with_max_bytes`](Self::from_file_as_with_max_bytes) takes
    /// another cap.
    pub const DEFAULT_MAX_FILE_BYTES: u64 = crate::user_file::DEFAULT_MAX_FILE_BYTES;

    /// A file, read now (the key of a cached link covers its contents), of the kind its
    /// extension names ([`LinkInputKind::of_path`]), of at most
    /// [`DEFAULT_MAX_FILE_BYTES`](Self::DEFAULT_MAX_FILE_BYTES).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an extension that names no kind (use
    /// [`from_file_as`](Self::from_file_as)), or as [`from_file_as`](Self::from_file_as).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let kind = LinkInputKind::of_path(path).ok_or_else(|| {
            Error::invalid_argument(format!(
                "{}: the extension names no link input kind (.cubin, .ptx, .ltoir, .fatbin, \
                 .o, .a); give the kind with LinkInput::from_file_as",
                path.display()
            ))
        })?;
        Self::from_file_as(path, kind)
    }

    /// A file of the given kind, read now, of at most
    /// [`DEFAULT_MAX_FILE_BYTES`](Self::DEFAULT_MAX_FILE_BYTES).
    ///
    /// # Errors
    ///
    /// As [`from_file_as_with_max_bytes`](Self::from_file_as_with_max_bytes).
    pub fn from_file_as(path: impl AsRef<Path>, kind: LinkInputKind) -> Result<Self> {
        Self::from_file_as_with_max_bytes(path, kind, Self::DEFAULT_MAX_FILE_BYTES)
    }

    /// A file of the given kind, read now, of at most `max_bytes`: a larger one is refused
    /// from its size (`fstat`), before anything is read. The file is read once, into the
    /// buffer the input keeps (PTX's NUL terminator added in place), so a file is held once.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the file for one that cannot be read, is not a regular
    /// file (a FIFO, a device, a directory), is larger than `max_bytes`, is empty or changed
    /// size while it was read.
    pub fn from_file_as_with_max_bytes(
        path: impl AsRef<Path>,
        kind: LinkInputKind,
        max_bytes: u64,
    ) -> Result<Self> {
        let path = path.as_ref();
        let mut bytes = crate::user_file::read_regular(path, max_bytes)?;
        let name = path.display().to_string();
        check(kind, &name, &bytes)?;
        if kind == LinkInputKind::Ptx && bytes.last() != Some(&0) {
            // Into the spare byte `read_regular` reserves: nothing moves.
            bytes.push(0);
        }
        Ok(Self {
            kind,
            name,
            bytes: Bytes::Read(Arc::new(bytes)),
        })
    }

    /// The input's kind.
    pub fn kind(&self) -> LinkInputKind {
        self.kind
    }

    /// The name the linker's logs use.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bytes (PTX with its NUL terminator).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Refuses a link input whose `name` holds a NUL byte or whose `bytes` are empty.
fn check(kind: LinkInputKind, name: &str, bytes: &[u8]) -> Result<()> {
    if name.contains('\0') {
        return Err(Error::invalid_argument(format!(
            "link input name {name:?} holds a NUL byte"
        )));
    }
    if bytes.is_empty() {
        return Err(Error::invalid_argument(format!(
            "link input {name:?} ({}) is empty",
            kind.name()
        )));
    }
    Ok(())
}

/// The SHA-256 of every input (kind, name and bytes, each length-prefixed, in order) and of
/// the name map the output keeps: what a cached link's key covers of its inputs.
pub(super) fn digest(inputs: &[LinkInput], lowered_names: &[(String, String)]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let mut field = |label: &str, value: &[u8]| {
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update((value.len() as u64).to_le_bytes());
        hasher.update(value);
    };
    field("inputs", &(inputs.len() as u64).to_le_bytes());
    for input in inputs {
        field("kind", input.kind.name().as_bytes());
        field("name", input.name.as_bytes());
        field("bytes", &input.bytes);
    }
    field("lowered-names", &(lowered_names.len() as u64).to_le_bytes());
    for (expression, lowered) in lowered_names {
        field("expression", expression.as_bytes());
        field("lowered", lowered.as_bytes());
    }
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_name_kinds() {
        for (path, kind) in [
            ("a.cubin", Some(LinkInputKind::Cubin)),
            ("dir/b.PTX", Some(LinkInputKind::Ptx)),
            ("c.ltoir", Some(LinkInputKind::LtoIr)),
            ("d.fatbin", Some(LinkInputKind::Fatbin)),
            ("e.o", Some(LinkInputKind::Object)),
            ("libf.a", Some(LinkInputKind::Library)),
            ("g.txt", None),
            ("noext", None),
        ] {
            assert_eq!(LinkInputKind::of_path(Path::new(path)), kind, "{path}");
        }
        let error = LinkInput::from_file("kernel.txt").unwrap_err();
        assert!(error.to_string().contains("from_file_as"), "{error}");
        let error = LinkInput::from_file("/nonexistent/k.cubin").unwrap_err();
        assert!(error.to_string().contains("cannot read"), "{error}");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.ltoir");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(4 << 30).unwrap();
        drop(file);
        let started = std::time::Instant::now();
        let error = LinkInput::from_file(&path).unwrap_err().to_string();
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
        assert!(error.contains("over the cap of 1073741824"), "{error}");
        std::fs::write(&path, b"0123456789").unwrap();
        let error = LinkInput::from_file_as_with_max_bytes(&path, LinkInputKind::LtoIr, 9)
            .unwrap_err()
            .to_string();
        assert!(error.contains("10 bytes, over the cap of 9"), "{error}");
        let input = LinkInput::from_file_as_with_max_bytes(&path, LinkInputKind::LtoIr, 10);
        assert_eq!(input.unwrap().bytes(), b"0123456789");
    }

    #[test]
    fn ptx_gets_its_terminator_and_empty_inputs_are_refused() {
        let ptx = LinkInput::from_bytes(LinkInputKind::Ptx, "a.ptx", b".version 8.0".to_vec());
        assert_eq!(ptx.unwrap().bytes().last(), Some(&0));
        let kept = LinkInput::from_bytes(LinkInputKind::Ptx, "b.ptx", b"x\0".to_vec()).unwrap();
        assert_eq!(kept.bytes(), b"x\0");
        assert!(LinkInput::from_bytes(LinkInputKind::Cubin, "c", Vec::new()).is_err());
        assert!(LinkInput::from_bytes(LinkInputKind::Cubin, "c\0", vec![1]).is_err());
    }

    #[test]
    fn compiled_code_keeps_its_kind() {
        let code = CompiledCode::new(CodeKind::LtoIr, vec![1, 2, 3], Vec::new());
        let input = LinkInput::from_compiled(&code, "a.ltoir").unwrap();
        assert_eq!(input.kind(), LinkInputKind::LtoIr);
        assert_eq!(input.bytes(), [1, 2, 3]);
        assert_eq!(input.name(), "a.ltoir");
    }

    #[test]
    fn the_digest_covers_kind_name_bytes_order_and_names() {
        let input = |kind, name: &str, bytes: &[u8]| {
            LinkInput::from_bytes(kind, name, bytes.to_vec()).unwrap()
        };
        let a = input(LinkInputKind::LtoIr, "a", b"aaaa");
        let b = input(LinkInputKind::LtoIr, "b", b"bbbb");
        let base = digest(&[a.clone(), b.clone()], &[]);
        assert_eq!(base, digest(&[a.clone(), b.clone()], &[]));
        let variants = [
            digest(&[b.clone(), a.clone()], &[]),
            digest(std::slice::from_ref(&a), &[]),
            digest(&[a.clone(), input(LinkInputKind::Cubin, "b", b"bbbb")], &[]),
            digest(&[a.clone(), input(LinkInputKind::LtoIr, "c", b"bbbb")], &[]),
            digest(&[a.clone(), input(LinkInputKind::LtoIr, "b", b"bbbc")], &[]),
            digest(&[a, b], &[("k<int>".into(), "_Z1kIiEvv".into())]),
        ];
        for variant in variants {
            assert_ne!(variant, base);
        }
    }
}
