//! The cache key: SHA-256 over labelled, length-prefixed compile inputs.
//!
//! Every field is written as `u64 LE label length, label, u64 LE value length, value`, in a
//! fixed order, so no two different sets of inputs share an encoding. `docs/program-cache.md`
//! lists the fields.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use super::CodeKind;
use crate::error::{Error, Result};
use crate::hex;

/// The version of the key's encoding; part of every key, raised whenever the encoding or the
/// cache-file format changes, so old entries are never read by a newer layout.
pub const KEY_SCHEMA_VERSION: u32 = 2;

/// A program cache key: the SHA-256 of a compile's inputs. Displays as 64 lowercase hex digits.
///
/// ```
/// use cuda_safe::cache::{CacheKey, CodeKind};
///
/// let key = CacheKey::builder("extern \"C\" __global__ void k() {}")
///     .compiler("nvrtc", "13.0")
///     .target(CodeKind::Cubin, "sm_90")
///     .options(["-std=c++17", "--use_fast_math"])
///     .build()?;
/// let hex = key.to_string();
/// assert_eq!(hex.len(), 64);
/// assert_eq!(hex.parse::<CacheKey>()?, key);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    /// A builder for the key of compiling `source`.
    pub fn builder(source: &str) -> CacheKeyBuilder<'_> {
        CacheKeyBuilder {
            source,
            compiler: None,
            target: None,
            program_name: "",
            options: Vec::new(),
            name_expressions: Vec::new(),
            headers: Vec::new(),
            caller_digest: None,
            seen: None,
        }
    }

    /// The key with these 32 bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The key's 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key of a program the caller names: `label` (`"saxpy_sm_90"`, as `cuda.core`'s
    /// examples key their caches) hashed in a field of its own, so no label's key is ever a
    /// compile's key (those start with the compiler).
    ///
    /// The label is the caller's promise that it names one program: same source, options,
    /// compiler and target every time. Nothing of the compile is in the key, so a changed
    /// kernel under an old label gets the old code back; put what changes in the label
    /// (`"saxpy_sm_90_v2"`), or build the key from the inputs with [`CacheKey::builder`].
    ///
    /// ```
    /// use cuda_safe::cache::{CacheKey, CompiledCode, CodeKind, InMemoryProgramCache, ProgramCache};
    ///
    /// let cache = InMemoryProgramCache::default();
    /// let key = CacheKey::labelled("saxpy_sm_90");
    /// assert_eq!(key, CacheKey::labelled("saxpy_sm_90"));
    /// assert_ne!(key, CacheKey::labelled("saxpy_sm_80"));
    /// let code = cache.get_or_insert_with(&key, || {
    ///     Ok(CompiledCode::new(CodeKind::Ptx, b"// saxpy\0".to_vec(), Vec::new())) // compile here
    /// })?;
    /// assert_eq!(cache.get(&key)?, Some(code));
    /// # Ok::<(), cuda_safe::Error>(())
    /// ```
    pub fn labelled(label: &str) -> Self {
        let mut hasher = FieldHasher(Sha256::new());
        hasher.field("schema", &KEY_SCHEMA_VERSION.to_le_bytes());
        hasher.field("label", label.as_bytes());
        Self(hasher.0.finalize().into())
    }

    /// The key as 64 lowercase hex digits (the entry file's name).
    pub(crate) fn to_hex(self) -> String {
        hex::encode(&self.0)
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({self})")
    }
}

impl FromStr for CacheKey {
    type Err = Error;

    /// Parses exactly 64 ASCII hex digits (either case); no sign, space or prefix.
    fn from_str(text: &str) -> Result<Self> {
        hex::decode_array(text).map(Self).ok_or_else(|| {
            Error::invalid_argument(format!("not a 64-hex-digit cache key: {text:?}"))
        })
    }
}

/// Collects a compile's inputs and hashes them into a [`CacheKey`].
///
/// The compiler and the target are required. Options are kept in the order given (NVRTC's
/// output can depend on it); name expressions are sorted and deduplicated (the set is what
/// matters); in-memory headers are sorted by name (NVRTC looks them up by name), identical
/// duplicates are dropped and two different headers under one name are refused.
///
/// Options that make the output depend on files the key cannot see are refused unless a
/// caller digest is given: include paths (`-I…`, `--include-path…`), pre-included headers
/// (`-include…`, `--pre-include…`) and precompiled headers (`--use-pch…`).
///
/// ```
/// use cuda_safe::cache::{CacheKey, CodeKind};
///
/// let source = "template <class T> __global__ void scale(T* x) { *x *= 2; }";
/// let build = |digest: Option<&[u8]>| {
///     let mut builder = CacheKey::builder(source)
///         .compiler("nvrtc", "13.0")
///         .target(CodeKind::Cubin, "sm_90")
///         .options(["-I/opt/include"])
///         .name_expressions(["scale<float>"]);
///     if let Some(digest) = digest {
///         builder = builder.caller_digest(digest);
///     }
///     builder.build()
/// };
/// assert!(build(None).unwrap_err().to_string().contains("caller digest"));
/// assert!(build(Some(b"hash of /opt/include")).is_ok());
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until .build()"]
pub struct CacheKeyBuilder<'a> {
    source: &'a str,
    compiler: Option<(&'a str, &'a str)>,
    target: Option<(CodeKind, &'a str)>,
    program_name: &'a str,
    options: Vec<&'a str>,
    name_expressions: Vec<&'a str>,
    headers: Vec<(&'a str, &'a str)>,
    caller_digest: Option<&'a [u8]>,
    seen: Option<(&'a [String], &'a [u8])>,
}

impl<'a> CacheKeyBuilder<'a> {
    /// The compiler's name and version (`"nvrtc"`, `"13.0"`: `nvrtcVersion`'s major.minor).
    pub fn compiler(mut self, name: &'a str, version: &'a str) -> Self {
        self.compiler = Some((name, version));
        self
    }

    /// The kind of code and the architecture it is for (`CodeKind::Cubin`, `"sm_90"`).
    pub fn target(mut self, kind: CodeKind, arch: &'a str) -> Self {
        self.target = Some((kind, arch));
        self
    }

    /// The program's name (NVRTC's `name` argument; it appears in `__FILE__` and line info).
    pub fn program_name(mut self, name: &'a str) -> Self {
        self.program_name = name;
        self
    }

    /// Appends one compiler option.
    pub fn option(mut self, option: &'a str) -> Self {
        self.options.push(option);
        self
    }

    /// Appends compiler options, in order.
    pub fn options<S: AsRef<str> + ?Sized + 'a>(
        mut self,
        options: impl IntoIterator<Item = &'a S>,
    ) -> Self {
        self.options.extend(options.into_iter().map(AsRef::as_ref));
        self
    }

    /// Adds one name expression (`"saxpy<float>"`).
    pub fn name_expression(mut self, expression: &'a str) -> Self {
        self.name_expressions.push(expression);
        self
    }

    /// Adds name expressions; their order does not change the key.
    pub fn name_expressions<S: AsRef<str> + ?Sized + 'a>(
        mut self,
        expressions: impl IntoIterator<Item = &'a S>,
    ) -> Self {
        self.name_expressions
            .extend(expressions.into_iter().map(AsRef::as_ref));
        self
    }

    /// Adds an in-memory header: the name `#include` uses and its contents.
    pub fn header(mut self, name: &'a str, contents: &'a str) -> Self {
        self.headers.push((name, contents));
        self
    }

    /// Adds in-memory headers as `(name, contents)` pairs; their order does not change the key.
    pub fn headers(mut self, headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        self.headers.extend(headers);
        self
    }

    /// A digest the caller computed over whatever else the output depends on (files under an
    /// include path, a build id); any length.
    pub fn caller_digest(mut self, digest: &'a [u8]) -> Self {
        self.caller_digest = Some(digest);
        self
    }

    /// Options whose files `digest` covers (the toolkit folders of
    /// [`CudaHeaders::Toolkit`](crate::CudaHeaders::Toolkit)): not refused for want of a caller
    /// digest; the digest goes into the key.
    pub(crate) fn seen_files(mut self, options: &'a [String], digest: &'a [u8]) -> Self {
        self.seen = Some((options, digest));
        self
    }

    /// Checks the inputs and hashes them.
    ///
    /// Fails without a compiler or target, with an empty compiler name, version or
    /// architecture, with two different headers under one name, and with an option that
    /// reads files the key cannot see when no caller digest was given.
    pub fn build(self) -> Result<CacheKey> {
        let (compiler, version) = self.compiler.ok_or_else(|| {
            Error::invalid_argument("cache key: no compiler given (call .compiler(name, version))")
        })?;
        let (kind, arch) = self.target.ok_or_else(|| {
            Error::invalid_argument("cache key: no target given (call .target(kind, arch))")
        })?;
        for (what, value) in [
            ("compiler name", compiler),
            ("compiler version", version),
            ("architecture", arch),
        ] {
            if value.is_empty() {
                return Err(Error::invalid_argument(format!(
                    "cache key: the {what} is empty"
                )));
            }
        }
        let seen = self.seen.map_or(&[][..], |(options, _)| options);
        if self.caller_digest.is_none()
            && let Some((option, why)) = self
                .options
                .iter()
                .filter(|option| !seen.iter().any(|covered| covered == *option))
                .find_map(|option| reads_unseen_files(option).map(|why| (option, why)))
        {
            return Err(Error::invalid_argument(format!(
                "cache key: option {option:?} makes the output depend on files the key \
                     cannot see ({why}); give a caller digest of those files with \
                     .caller_digest(..)"
            )));
        }

        let mut expressions = self.name_expressions;
        expressions.sort_unstable();
        expressions.dedup();
        let mut headers = self.headers;
        headers.sort_unstable();
        headers.dedup();
        let clash = headers.windows(2).find_map(|pair| match pair {
            [(first, _), (second, _)] if first == second => Some(*first),
            _ => None,
        });
        if let Some(name) = clash {
            return Err(Error::invalid_argument(format!(
                "cache key: two different in-memory headers are named {name:?}"
            )));
        }

        let mut hasher = FieldHasher(Sha256::new());
        hasher.field("schema", &KEY_SCHEMA_VERSION.to_le_bytes());
        hasher.field("compiler", compiler.as_bytes());
        hasher.field("compiler-version", version.as_bytes());
        hasher.field("code-kind", kind.name().as_bytes());
        hasher.field("arch", arch.as_bytes());
        hasher.field("program-name", self.program_name.as_bytes());
        hasher.field("source", self.source.as_bytes());
        hasher.count("options", self.options.len());
        for option in &self.options {
            hasher.field("option", option.as_bytes());
        }
        hasher.count("name-expressions", expressions.len());
        for expression in &expressions {
            hasher.field("name-expression", expression.as_bytes());
        }
        hasher.count("headers", headers.len());
        for (name, contents) in &headers {
            hasher.field("header-name", name.as_bytes());
            hasher.field("header-contents", contents.as_bytes());
        }
        match self.caller_digest {
            Some(digest) => {
                hasher.field("caller-digest-present", &[1]);
                hasher.field("caller-digest", digest);
            }
            None => hasher.field("caller-digest-present", &[0]),
        }
        // Only when there is one, so every other key stays as it was.
        if let Some((_, digest)) = self.seen {
            hasher.field("seen-files-digest", digest);
        }
        Ok(CacheKey(hasher.0.finalize().into()))
    }
}

/// Why an option makes the output depend on files outside the key, if it does.
fn reads_unseen_files(option: &str) -> Option<&'static str> {
    let option = option.trim_start();
    let long = option.trim_start_matches('-');
    if option.starts_with("-I") || long.starts_with("include-path") {
        Some("an include path")
    } else if long.starts_with("pre-include") || long.starts_with("include") {
        Some("a pre-included header")
    } else if long.starts_with("use-pch") {
        Some("a precompiled header file")
    } else {
        None
    }
}

/// SHA-256 fed with labelled, length-prefixed fields.
struct FieldHasher(Sha256);

impl FieldHasher {
    fn field(&mut self, label: &str, value: &[u8]) {
        self.0.update((label.len() as u64).to_le_bytes());
        self.0.update(label.as_bytes());
        self.0.update((value.len() as u64).to_le_bytes());
        self.0.update(value);
    }

    fn count(&mut self, label: &str, count: usize) {
        self.field(label, &(count as u64).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::{CacheKey, reads_unseen_files};

    #[test]
    fn only_64_ascii_hex_digits_parse() {
        let key = CacheKey::from_bytes(std::array::from_fn(|i| i as u8 * 8));
        let hex = key.to_string();
        assert_eq!(hex.parse::<CacheKey>().unwrap(), key);
        assert_eq!(hex.to_uppercase().parse::<CacheKey>().unwrap(), key);
        let all_f = "f".repeat(64).parse::<CacheKey>().unwrap();
        assert_eq!(all_f.as_bytes(), &[0xff; 32]);

        // A sign is accepted by `u8::from_str_radix`, but is not a hex digit.
        let signed = format!("+f{}", &hex[2..]);
        assert_eq!(signed.len(), 64);
        let refused = |text: &str| {
            let error = text.parse::<CacheKey>().unwrap_err();
            assert!(
                error.to_string().contains("not a 64-hex-digit cache key"),
                "{text:?}: {error}"
            );
        };
        refused(&signed);
        refused(&format!("-0{}", &hex[2..]));
        refused(&format!("0x{}", &hex[2..]));
        refused(&format!(" {}", &hex[1..]));
        refused(&format!("{}g", &hex[..63]));
        refused(&hex[..62]);
        refused(&format!("{hex}0"));
        refused("");
        // 64 bytes but not 64 characters: a multi-byte character is refused, not split.
        refused(&format!("é{}", &hex[2..]));
    }

    #[test]
    fn seen_include_paths_key_with_their_digest_and_others_still_need_one() {
        let seen = vec!["--include-path=/usr/local/cuda/include".to_owned()];
        let build = |options: &[&str], digest: &[u8]| {
            CacheKey::builder("src")
                .compiler("nvrtc", "13.0")
                .target(super::CodeKind::Cubin, "sm_90")
                .options(options.iter().copied())
                .seen_files(&seen, digest)
                .build()
        };
        let first = build(&[&seen[0]], b"one").unwrap();
        assert_eq!(first, build(&[&seen[0]], b"one").unwrap());
        assert_ne!(first, build(&[&seen[0]], b"two").unwrap());
        let plain = CacheKey::builder("src")
            .compiler("nvrtc", "13.0")
            .target(super::CodeKind::Cubin, "sm_90")
            .build()
            .unwrap();
        assert_ne!(plain, build(&[], b"one").unwrap(), "the digest is keyed");
        let error = build(&[&seen[0], "-I/elsewhere"], b"one").unwrap_err();
        assert!(error.to_string().contains("-I/elsewhere"), "{error}");
    }

    #[test]
    fn file_reading_options_are_recognised() {
        for option in [
            "-I/usr/include",
            "-I",
            "--include-path=/x",
            "--include-path",
            "-include",
            "-include=x.h",
            "--pre-include=x.h",
            "--use-pch=a.pch",
            " -Ifoo",
        ] {
            assert!(reads_unseen_files(option).is_some(), "{option}");
        }
        for option in [
            "-std=c++17",
            "--use_fast_math",
            "-arch=sm_90",
            "--gpu-architecture=sm_90",
            "-default-device",
            "-DINCLUDE=1",
            "--pch",
            "--pch-dir=/tmp/pch",
            "--create-pch=a.pch",
            "--use-bundled-headers=/opt/nvrtc-headers",
            "-lineinfo",
        ] {
            assert_eq!(reads_unseen_files(option), None, "{option}");
        }
    }
}
