//! The program-cache key: its documented encoding, what changes it, and what it refuses.

use cuda_safe::cache::{CacheKey, CodeKind, KEY_SCHEMA_VERSION};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

/// Every input of a key, owned.
#[derive(Debug, Clone)]
struct Inputs {
    compiler: String,
    version: String,
    kind: CodeKind,
    arch: String,
    program_name: String,
    source: String,
    options: Vec<String>,
    name_expressions: Vec<String>,
    headers: Vec<(String, String)>,
    digest: Option<Vec<u8>>,
}

impl Inputs {
    fn key(&self) -> CacheKey {
        let mut builder = CacheKey::builder(&self.source)
            .compiler(&self.compiler, &self.version)
            .target(self.kind, &self.arch)
            .program_name(&self.program_name)
            .options(&self.options)
            .name_expressions(&self.name_expressions)
            .headers(
                self.headers
                    .iter()
                    .map(|(name, contents)| (name.as_str(), contents.as_str())),
            );
        if let Some(digest) = &self.digest {
            builder = builder.caller_digest(digest);
        }
        builder.build().expect("valid inputs")
    }
}

fn inputs() -> impl Strategy<Value = Inputs> {
    let kind = proptest::sample::select(CodeKind::ALL.to_vec());
    let option = "-[a-hj-z][a-z0-9=_.+]{0,10}";
    let headers = proptest::collection::btree_map("[a-z]{1,6}\\.h", ".{0,20}", 0..4)
        .prop_map(|headers| headers.into_iter().collect::<Vec<_>>());
    (
        (
            "[a-z]{1,8}",
            "[0-9]{1,2}\\.[0-9]",
            kind,
            "(sm|compute)_[0-9]{2,3}",
        ),
        (".{0,12}", ".{0,80}"),
        proptest::collection::vec(option, 0..5),
        proptest::collection::vec("[a-z_<>:, 0-9]{1,12}", 0..4),
        headers,
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
    )
        .prop_map(
            |(
                (compiler, version, kind, arch),
                (program_name, source),
                options,
                name_expressions,
                headers,
                digest,
            )| Inputs {
                compiler,
                version,
                kind,
                arch,
                program_name,
                source,
                options,
                name_expressions,
                headers,
                digest,
            },
        )
}

/// One change to one field; every one must give another key.
fn mutate(inputs: &mut Inputs, which: usize) {
    let next_kind = |kind: CodeKind| {
        let at = CodeKind::ALL.iter().position(|&k| k == kind).unwrap();
        CodeKind::ALL[(at + 1) % CodeKind::ALL.len()]
    };
    match which {
        0 => inputs.compiler.push('x'),
        1 => inputs.version.push('1'),
        2 => inputs.kind = next_kind(inputs.kind),
        3 => inputs.arch.push('a'),
        4 => inputs.program_name.push('n'),
        5 => inputs.source.push(' '),
        6 => inputs.options.push("-extra".to_owned()),
        7 => match inputs.options.first_mut() {
            Some(first) => first.push('z'),
            None => inputs.options.push("-z".to_owned()),
        },
        8 => {
            if inputs.options.pop().is_none() {
                inputs.options.push(String::new());
            }
        }
        9 => inputs.name_expressions.push("@added<int>".to_owned()),
        10 => inputs.headers.push(("added.hpp".to_owned(), String::new())),
        11 => match inputs.headers.first_mut() {
            Some((_, contents)) => contents.push('\n'),
            None => inputs.headers.push(("new.h".to_owned(), "x".to_owned())),
        },
        12 => match inputs.headers.first_mut() {
            Some((name, _)) => name.insert(0, '_'),
            None => inputs.headers.push(("other.h".to_owned(), String::new())),
        },
        13 => match &mut inputs.digest {
            Some(digest) => digest.push(0),
            None => inputs.digest = Some(Vec::new()),
        },
        _ => inputs.digest = inputs.digest.take().xor(Some(vec![1])),
    }
}

const MUTATIONS: usize = 15;

proptest! {
    #[test]
    fn the_key_is_deterministic(inputs in inputs()) {
        prop_assert_eq!(inputs.key(), inputs.clone().key());
    }

    #[test]
    fn any_field_changes_the_key(inputs in inputs(), which in 0..MUTATIONS) {
        let mut changed = inputs.clone();
        mutate(&mut changed, which);
        prop_assert_ne!(inputs.key(), changed.key(), "mutation {} of {:?}", which, inputs);
    }

    #[test]
    fn name_expression_and_header_order_do_not_matter(
        (inputs, expressions, headers) in inputs().prop_flat_map(|inputs| {
            let expressions = Just(inputs.name_expressions.clone()).prop_shuffle();
            let headers = Just(inputs.headers.clone()).prop_shuffle();
            (Just(inputs), expressions, headers)
        })
    ) {
        let mut reordered = inputs.clone();
        reordered.name_expressions = expressions;
        reordered.headers = headers;
        if let Some(first) = inputs.name_expressions.first() {
            reordered.name_expressions.push(first.clone());
        }
        prop_assert_eq!(inputs.key(), reordered.key());
    }

    #[test]
    fn option_order_matters(inputs in inputs(), a in "-[a-h]{1,4}", b in "-[j-z]{1,4}") {
        let mut first = inputs.clone();
        first.options.extend([a.clone(), b.clone()]);
        let mut second = inputs;
        second.options.extend([b, a]);
        prop_assert_ne!(first.key(), second.key());
    }

    /// Moving text from one option to the next is a different key (the encoding is injective).
    #[test]
    fn field_boundaries_are_part_of_the_key(inputs in inputs(), text in "[a-z]{2,10}", at in 1..10usize) {
        let at = at.min(text.len() - 1);
        let (left, right) = text.split_at(at);
        let mut split = inputs.clone();
        split.options.extend([text.clone(), String::new()]);
        let mut moved = inputs;
        moved.options.extend([left.to_owned(), right.to_owned()]);
        prop_assert_ne!(split.key(), moved.key());
    }
}

/// A from-scratch encoder following `docs/program-cache.md`.
fn documented_key(fields: &[(&str, &[u8])]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for (label, value) in fields {
        hasher.update((label.len() as u64).to_le_bytes());
        hasher.update(label.as_bytes());
        hasher.update((value.len() as u64).to_le_bytes());
        hasher.update(value);
    }
    hasher.finalize().into()
}

#[test]
fn the_encoding_is_the_documented_one() {
    let key = CacheKey::builder("__global__ void k() {}")
        .compiler("nvrtc", "13.0")
        .target(CodeKind::Cubin, "sm_90")
        .program_name("k.cu")
        .options(["-std=c++17", "-I/opt/include"])
        .name_expressions(["k2", "k1", "k2"])
        .header("b.h", "B")
        .header("a.h", "A")
        .caller_digest(&[0xde, 0xad])
        .build()
        .unwrap();
    let count = |n: u64| n.to_le_bytes();
    let expected = documented_key(&[
        ("schema", &KEY_SCHEMA_VERSION.to_le_bytes()),
        ("compiler", b"nvrtc"),
        ("compiler-version", b"13.0"),
        ("code-kind", b"cubin"),
        ("arch", b"sm_90"),
        ("program-name", b"k.cu"),
        ("source", b"__global__ void k() {}"),
        ("options", &count(2)),
        ("option", b"-std=c++17"),
        ("option", b"-I/opt/include"),
        ("name-expressions", &count(2)),
        ("name-expression", b"k1"),
        ("name-expression", b"k2"),
        ("headers", &count(2)),
        ("header-name", b"a.h"),
        ("header-contents", b"A"),
        ("header-name", b"b.h"),
        ("header-contents", b"B"),
        ("caller-digest-present", &[1]),
        ("caller-digest", &[0xde, 0xad]),
    ]);
    assert_eq!(key.as_bytes(), &expected);

    let bare = CacheKey::builder("")
        .compiler("nvrtc", "12.9")
        .target(CodeKind::Ptx, "compute_90")
        .build()
        .unwrap();
    let expected = documented_key(&[
        ("schema", &KEY_SCHEMA_VERSION.to_le_bytes()),
        ("compiler", b"nvrtc"),
        ("compiler-version", b"12.9"),
        ("code-kind", b"ptx"),
        ("arch", b"compute_90"),
        ("program-name", b""),
        ("source", b""),
        ("options", &count(0)),
        ("name-expressions", &count(0)),
        ("headers", &count(0)),
        ("caller-digest-present", &[0]),
    ]);
    assert_eq!(bare.as_bytes(), &expected);
}

#[test]
fn the_key_displays_and_parses_as_64_hex_digits() {
    let key = CacheKey::from_bytes(std::array::from_fn(|i| i as u8 * 8));
    let hex = key.to_string();
    assert_eq!(
        hex,
        "0008101820283038404850586068707880889098a0a8b0b8c0c8d0d8e0e8f0f8"
    );
    assert_eq!(hex.parse::<CacheKey>().unwrap(), key);
    assert_eq!(hex.to_uppercase().parse::<CacheKey>().unwrap(), key);
    assert_eq!(format!("{key:?}"), format!("CacheKey({hex})"));
    for bad in [
        "",
        &hex[1..],
        &format!("{hex}0"),
        &hex.replace('a', "g"),
        &"é".repeat(32),
    ] {
        assert!(bad.parse::<CacheKey>().is_err(), "{bad:?}");
    }
}

fn with_options(options: &[&str], digest: Option<&[u8]>) -> cuda_safe::Result<CacheKey> {
    let mut builder = CacheKey::builder("k")
        .compiler("nvrtc", "13.0")
        .target(CodeKind::Cubin, "sm_90")
        .options(options);
    if let Some(digest) = digest {
        builder = builder.caller_digest(digest);
    }
    builder.build()
}

#[test]
fn options_that_read_unseen_files_need_a_caller_digest() {
    for option in [
        "-I/usr/local/include",
        "--include-path=/opt/inc",
        "-include",
        "--pre-include=config.h",
        "--use-pch=k.pch",
    ] {
        let error = with_options(&["-std=c++17", option], None).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(option), "{text}");
        assert!(text.contains("caller digest"), "{text}");
        assert!(
            matches!(error, cuda_safe::Error::InvalidArgument(_)),
            "{error:?}"
        );
        assert!(with_options(&[option], Some(b"digest")).is_ok(), "{option}");
    }
    assert!(with_options(&["-DUSE_INCLUDE=1", "--pch", "-lineinfo"], None).is_ok());
}

#[test]
fn incomplete_or_ambiguous_inputs_are_refused() {
    let errors = [
        CacheKey::builder("k")
            .target(CodeKind::Ptx, "compute_90")
            .build(),
        CacheKey::builder("k").compiler("nvrtc", "13.0").build(),
        CacheKey::builder("k")
            .compiler("nvrtc", "13.0")
            .target(CodeKind::Ptx, "")
            .build(),
        CacheKey::builder("k")
            .compiler("", "13.0")
            .target(CodeKind::Ptx, "compute_90")
            .build(),
        CacheKey::builder("k")
            .compiler("nvrtc", "13.0")
            .target(CodeKind::Ptx, "compute_90")
            .header("a.h", "1")
            .header("a.h", "2")
            .build(),
    ];
    for (index, result) in errors.into_iter().enumerate() {
        let error = result.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("invalid argument: cache key: "),
            "{index}: {error}"
        );
    }

    let one = CacheKey::builder("k")
        .compiler("nvrtc", "13.0")
        .target(CodeKind::Ptx, "compute_90")
        .header("a.h", "1");
    let twice = one.clone().header("a.h", "1");
    assert_eq!(one.build().unwrap(), twice.build().unwrap());
}
