//! CPU tests of the linker's plan, cache keys and cache hits: no linker is loaded.

use super::*;
use crate::cache::InMemoryProgramCache;

fn options() -> LinkerOptions {
    LinkerOptions {
        arch: Some("sm_90".into()),
        lto: true,
        backend: LinkerBackend::NvJitLink,
        ..Default::default()
    }
}

fn linker(options: LinkerOptions, inputs: &[(&str, &[u8])]) -> Linker {
    let mut linker = Linker::new(options).unwrap();
    for (name, bytes) in inputs {
        let input = LinkInput::from_bytes(LinkInputKind::LtoIr, *name, bytes.to_vec()).unwrap();
        linker.add(input);
    }
    linker
}

/// nvJitLink `version`, as this process asked it.
fn keying(version: &str) -> keying::LinkKeying {
    keying::LinkKeying {
        backend: LinkerBackend::NvJitLink,
        version: version.to_owned(),
        recalled: false,
    }
}

fn key(linker: &Linker, target: CodeKind, version: &str) -> CacheKey {
    let plan = linker.plan(target).unwrap();
    linker.key_for(target, &plan, version).unwrap()
}

#[test]
fn the_plan_checks_inputs_before_any_linker() {
    let empty = Linker::new(options()).unwrap();
    let error = empty.link(CodeKind::Cubin).unwrap_err();
    assert!(error.to_string().contains("at least one input"), "{error}");
    let no_lto = linker(
        LinkerOptions {
            lto: false,
            ..options()
        },
        &[("a.ltoir", b"ir")],
    );
    let error = no_lto.link(CodeKind::Cubin).unwrap_err();
    assert!(
        error.to_string().contains("set LinkerOptions::lto"),
        "{error}"
    );
    let driver = linker(
        LinkerOptions {
            backend: LinkerBackend::Driver,
            ..options()
        },
        &[("a.ltoir", b"ir")],
    );
    let error = driver.link(CodeKind::Cubin).unwrap_err();
    assert!(error.is_not_supported(), "{error}");
    assert!(
        Linker::new(LinkerOptions {
            optimization_level: Some(1),
            ..options()
        })
        .is_err()
    );
}

#[test]
fn the_key_covers_every_input_option_target_and_backend() {
    let base_linker = linker(options(), &[("a", b"aa"), ("b", b"bb")]);
    let base = key(&base_linker, CodeKind::Cubin, "13.0");
    assert_eq!(base, key(&base_linker, CodeKind::Cubin, "13.0"));
    let variants = [
        key(&base_linker, CodeKind::Ptx, "13.0"),
        key(&base_linker, CodeKind::Cubin, "13.1"),
        key(
            &linker(options(), &[("b", b"bb"), ("a", b"aa")]),
            CodeKind::Cubin,
            "13.0",
        ),
        key(
            &linker(options(), &[("a", b"aa"), ("b", b"bc")]),
            CodeKind::Cubin,
            "13.0",
        ),
        key(&linker(options(), &[("a", b"aa")]), CodeKind::Cubin, "13.0"),
        key(
            &linker(
                LinkerOptions {
                    optimization_level: Some(0),
                    ..options()
                },
                &[("a", b"aa"), ("b", b"bb")],
            ),
            CodeKind::Cubin,
            "13.0",
        ),
        key(
            &linker(
                LinkerOptions {
                    arch: Some("sm_100".into()),
                    ..options()
                },
                &[("a", b"aa"), ("b", b"bb")],
            ),
            CodeKind::Cubin,
            "13.0",
        ),
        key(
            &linker(
                LinkerOptions {
                    incremental: true,
                    ..options()
                },
                &[("a", b"aa"), ("b", b"bb")],
            ),
            CodeKind::Cubin,
            "13.0",
        ),
        key(&base_linker, CodeKind::LtoIr, "13.0"),
    ];
    for (index, variant) in variants.iter().enumerate() {
        assert_ne!(*variant, base, "variant {index}");
        for other in &variants[index + 1..] {
            assert_ne!(variant, other, "variant {index}");
        }
    }
    let mut named = base_linker.clone();
    let code = CompiledCode::new(
        CodeKind::LtoIr,
        b"cc".to_vec(),
        vec![("k<int>".to_owned(), "_Z1kIiEvv".to_owned())],
    );
    named.add_compiled(&code, "c").unwrap();
    assert_ne!(key(&named, CodeKind::Cubin, "13.0"), base);
}

#[test]
fn a_cached_image_is_returned_without_linking() {
    // The stored bytes are no real image: only a hit can return them.
    let cache = InMemoryProgramCache::new(1 << 20);
    let mut linker = linker(options(), &[("a", b"aa")]);
    let code = CompiledCode::new(
        CodeKind::LtoIr,
        b"bb".to_vec(),
        vec![("k<int>".to_owned(), "_Z1kIiEvv".to_owned())],
    );
    linker.add_compiled(&code, "b").unwrap();
    let plan = linker.plan(CodeKind::Cubin).unwrap();
    let key = linker.key_for(CodeKind::Cubin, &plan, "13.0").unwrap();
    let stored = CompiledCode::new(
        CodeKind::Cubin,
        b"\x7fELF linked".to_vec(),
        linker.lowered_names.clone(),
    );
    cache.put(&key, &stored).unwrap();
    let _ = plan;
    let hit = linker
        .fetch_or_link(
            CodeKind::Cubin,
            &cache,
            keying("13.0"),
            &linker.inputs_digest(),
        )
        .unwrap()
        .0;
    assert!(hit.from_cache());
    assert_eq!(hit.code(), &stored);
    assert_eq!(hit.code().lowered_name("k<int>"), Some("_Z1kIiEvv"));
    assert_eq!(hit.options(), ["-arch=sm_90", "-lto"]);
    assert_eq!(hit.toolchain(), Toolchain::NvJitLink);
    assert_eq!(hit.log(), "");
    assert_eq!(cache.stats().unwrap().hits, 1);
    // A stored entry of another kind under the key is no hit: the link is tried (and fails
    // here on the fake LTO-IR, or on loading nvJitLink).
    let plan = linker.plan(CodeKind::Ptx).unwrap();
    let key = linker.key_for(CodeKind::Ptx, &plan, "13.0").unwrap();
    cache.put(&key, &stored).unwrap();
    let _ = plan;
    let error = linker
        .fetch_or_link(
            CodeKind::Ptx,
            &cache,
            keying("13.0"),
            &linker.inputs_digest(),
        )
        .unwrap_err();
    // Without the `nvjitlink` feature the link is refused as unsupported.
    assert!(
        matches!(error, Error::Link { .. } | Error::Load(_))
            || (!cfg!(feature = "nvjitlink") && matches!(error, Error::Unsupported { .. })),
        "{error}"
    );
}

/// An LTO-IR link keeps inputs that carry IR only; a cached LTO-IR entry is a hit of its
/// target alone, returned without asking nvJitLink's version (0.1 has neither feature).
#[test]
fn ltoir_output_takes_ir_inputs_and_hits_as_ltoir() {
    let cache = InMemoryProgramCache::new(1 << 20);
    let incremental = LinkerOptions {
        incremental: true,
        ..options()
    };
    let mut mixed = linker(incremental.clone(), &[("a", b"aa")]);
    mixed
        .add(LinkInput::from_bytes(LinkInputKind::Ptx, "b.ptx", b".version 8.0".to_vec()).unwrap());
    let error = mixed.link(CodeKind::LtoIr).unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("b.ptx is ptx"), "{error}");
    assert!(mixed.plan(CodeKind::Cubin).is_ok());

    let ir = linker(incremental, &[("a", b"aa")]);
    let stored = CompiledCode::new(CodeKind::LtoIr, b"linked IR".to_vec(), Vec::new());
    cache
        .put(&key(&ir, CodeKind::LtoIr, "0.1"), &stored)
        .unwrap();
    let hit = ir
        .fetch_or_link(CodeKind::LtoIr, &cache, keying("0.1"), &ir.inputs_digest())
        .unwrap()
        .0;
    assert!(hit.from_cache());
    assert_eq!(hit.kind(), CodeKind::LtoIr);
    assert_eq!(hit.options(), ["-arch=sm_90", "-lto", "-r"]);
}

#[test]
fn the_failure_log_lists_both_logs_then_the_flags() {
    let flags = vec!["-arch=sm_90".to_owned(), "-lto".to_owned()];
    assert_eq!(
        failure_log(
            "error   : Undefined reference\n",
            "info    : 0 bytes\n",
            &flags
        ),
        "error   : Undefined reference\ninfo    : 0 bytes\noptions: [\"-arch=sm_90\", \"-lto\"]"
    );
    assert_eq!(failure_log("", "", &flags).lines().count(), 1);
}

#[test]
fn linkers_and_images_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Linker>();
    assert_send_sync::<CompiledProgram>();
}

#[test]
fn a_file_input_that_is_not_a_regular_file_is_refused_at_once() {
    let error = LinkInput::from_file_as("/dev/zero", LinkInputKind::Cubin).unwrap_err();
    assert!(
        error.to_string().contains("not a regular file (a device)"),
        "{error}"
    );
    let dir = tempfile::tempdir().unwrap();
    let error = LinkInput::from_file_as(dir.path(), LinkInputKind::Object).unwrap_err();
    assert!(error.to_string().contains("a directory"), "{error}");
}

/// A version a note recalled keys the lookup, and a hit returns without asking nvJitLink
/// (99.9 is no nvJitLink anyone has).
#[test]
fn a_recalled_version_hits_without_asking_the_linker() {
    let cache = InMemoryProgramCache::new(1 << 20);
    let linker = linker(options(), &[("a", b"aa")]);
    let stored = CompiledCode::new(CodeKind::Cubin, b"\x7fELF linked".to_vec(), Vec::new());
    cache
        .put(&key(&linker, CodeKind::Cubin, "99.9"), &stored)
        .unwrap();
    let recalled = keying::LinkKeying {
        recalled: true,
        ..keying("99.9")
    };
    let hit = linker
        .fetch_or_link(CodeKind::Cubin, &cache, recalled, &linker.inputs_digest())
        .unwrap()
        .0;
    assert!(hit.from_cache());
    assert_eq!(hit.code(), &stored);
}
