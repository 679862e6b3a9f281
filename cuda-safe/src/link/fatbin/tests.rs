//! The builder's checks, which refuse bad entries before nvFatbin is loaded (the calls
//! themselves run against the stub library of `stub/c` and on a GPU machine).

use super::*;

/// A real CUBIN (`module/image/testdata`, see its tests).
const CUBIN: &[u8] = include_bytes!("../../module/image/testdata/saxpy_sm90.cubin");
const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn builder() -> FatbinBuilder {
    FatbinBuilder::new(FatbinOptions::default()).unwrap()
}

fn refusal(result: Result<&mut FatbinBuilder>) -> String {
    match result {
        Err(Error::InvalidArgument(message)) => message.into_owned(),
        Err(other) => panic!("expected a refusal, got {other:?}"),
        Ok(_) => panic!("expected a refusal, got an entry"),
    }
}

#[test]
fn entries_are_kept_in_order_with_their_digits_and_names() {
    let mut fatbin = builder();
    assert!(fatbin.is_empty());
    fatbin
        .add_cubin(CUBIN, "sm_90", "saxpy.cubin")
        .unwrap()
        .add_ptx(PTX, "compute_90", "saxpy.ptx")
        .unwrap()
        .add_ltoir(vec![1, 2, 3], "90a", "saxpy.ltoir")
        .unwrap()
        .add_reloc(vec![0x7f, b'E', b'L', b'F'])
        .unwrap();
    assert_eq!(fatbin.len(), 4);
    let kinds: Vec<EntryKind> = fatbin.entries.iter().map(|entry| entry.kind).collect();
    assert_eq!(
        kinds,
        [
            EntryKind::Cubin,
            EntryKind::Ptx,
            EntryKind::LtoIr,
            EntryKind::Reloc
        ]
    );
    let arches: Vec<&[u8]> = fatbin.entries.iter().map(|e| e.arch.as_bytes()).collect();
    assert_eq!(arches, [&b"90"[..], b"90", b"90a", b""]);
    // PTX gets its NUL terminator; given one, it keeps exactly one.
    assert_eq!(fatbin.entries[1].bytes.last(), Some(&0));
    assert_eq!(fatbin.entries[1].bytes.len(), PTX.len() + 1);
    let with_nul = format!("{PTX}\0");
    fatbin.add_ptx(with_nul.as_bytes(), "90", "again").unwrap();
    assert_eq!(fatbin.entries[4].bytes.len(), PTX.len() + 1);
    assert_eq!(
        fatbin.entries[0].describe(),
        "the CUBIN \"saxpy.cubin\" for sm_90"
    );
    assert_eq!(
        fatbin.entries[1].describe(),
        "the PTX \"saxpy.ptx\" for compute_90"
    );
    assert_eq!(
        fatbin.entries[3].describe(),
        "the host object's relocatable PTX"
    );
}

#[test]
fn a_bad_architecture_is_refused_before_the_library() {
    for arch in ["", "sm90", "sm_9", "lto_90", "gfx90", "sm_90x", "SM_90"] {
        let text = refusal(builder().add_cubin(CUBIN, arch, "k.cubin"));
        assert!(text.contains("not of the form sm_XX"), "{arch}: {text}");
        assert!(text.contains("\"k.cubin\""), "{text}");
    }
    let text = refusal(builder().add_ptx(PTX, "compute_", "k.ptx"));
    assert!(text.contains("compute_"), "{text}");
}

#[test]
fn a_cubin_must_be_a_cuda_elf_file() {
    let mut x86 = CUBIN.to_vec();
    x86[18..20].copy_from_slice(&62u16.to_le_bytes());
    let text = refusal(builder().add_cubin(x86, "sm_90", "host.o"));
    assert!(text.contains("ELF machine is 62, not 190"), "{text}");
    let mut big_endian = CUBIN.to_vec();
    big_endian[5] = 2;
    let text = refusal(builder().add_cubin(big_endian, "sm_90", "k"));
    assert!(text.contains("64-bit little-endian"), "{text}");
    let text = refusal(builder().add_cubin([b'/'; 64].as_slice(), "sm_90", "k"));
    assert!(text.contains("not an ELF file"), "{text}");
    let text = refusal(builder().add_cubin(&CUBIN[..63], "sm_90", "k"));
    assert!(text.contains("63 bytes are too few"), "{text}");
    let text = refusal(builder().add_cubin(CUBIN, "sm_90", "k\0.cubin"));
    assert!(text.contains("NUL"), "{text}");
}

#[test]
fn ptx_must_be_nul_free_text() {
    let text = refusal(builder().add_ptx(b".version 8.0\0.target sm_90\n", "90", "k.ptx"));
    assert!(text.contains("NUL byte at byte 12"), "{text}");
    let text = refusal(builder().add_ptx(b".version \xff\n", "90", "k.ptx"));
    assert!(text.contains("not UTF-8"), "{text}");
    for empty in [&b""[..], b"\0"] {
        let text = refusal(builder().add_ptx(empty, "90", "k.ptx"));
        assert!(text.contains("empty"), "{text}");
    }
    let text = refusal(builder().add_ltoir(Vec::new(), "90", "k.ltoir"));
    assert!(text.contains("empty"), "{text}");
    let text = refusal(builder().add_reloc(Vec::new()));
    assert!(text.contains("empty"), "{text}");
}

#[test]
fn compiled_code_becomes_the_entry_of_its_kind_with_its_names() {
    let names = vec![("twice<float>".to_owned(), "_Z5twiceIfEvPT_".to_owned())];
    let cubin = CompiledCode::new(CodeKind::Cubin, CUBIN.to_vec(), names.clone());
    let ptx = CompiledCode::new(
        CodeKind::Ptx,
        format!("{PTX}\0").into_bytes(),
        names.clone(),
    );
    let ltoir = CompiledCode::new(CodeKind::LtoIr, vec![9; 16], Vec::new());
    let mut fatbin = builder();
    fatbin.add_compiled(&cubin, "sm_90", "k.cubin").unwrap();
    fatbin.add_compiled(&ptx, "compute_90", "k.ptx").unwrap();
    fatbin.add_compiled(&ltoir, "sm_90", "k.ltoir").unwrap();
    let kinds: Vec<EntryKind> = fatbin.entries.iter().map(|entry| entry.kind).collect();
    assert_eq!(kinds, [EntryKind::Cubin, EntryKind::Ptx, EntryKind::LtoIr]);
    assert_eq!(fatbin.lowered_names, names, "each pair kept once");
    let nested = CompiledCode::new(CodeKind::Fatbin, vec![0x50, 0xed, 0x55, 0xba], Vec::new());
    let text = refusal(fatbin.add_compiled(&nested, "sm_90", "inner.fatbin"));
    assert!(text.contains("no entry of another"), "{text}");
    assert_eq!(fatbin.len(), 3, "a refused entry is not added");
}

#[test]
fn an_empty_builder_and_bad_options_are_refused() {
    let error = builder().build().unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
    assert!(error.to_string().contains("at least one entry"), "{error}");
    let bad = FatbinOptions {
        address_bits: Some(48),
        ..Default::default()
    };
    assert!(matches!(
        FatbinBuilder::new(bad),
        Err(Error::InvalidArgument(_))
    ));
    let options = FatbinOptions {
        address_bits: Some(64),
        compress: Some(true),
        ..Default::default()
    };
    let fatbin = FatbinBuilder::new(options.clone()).unwrap();
    assert_eq!(fatbin.flags(), ["-64", "-compress=true"]);
    assert_eq!(fatbin.options(), &options);
}

#[test]
fn neither_nvrtc_nor_a_link_makes_a_fatbin() {
    let flags = crate::link::LinkerOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
    .to_flags(CodeKind::Fatbin);
    let error = flags.unwrap_err();
    assert!(error.to_string().contains("FatbinBuilder"), "{error}");
    let flags = crate::program::ProgramOptions {
        arch: Some("sm_90".into()),
        ..Default::default()
    }
    .to_flags(CodeKind::Fatbin);
    let error = flags.unwrap_err();
    assert!(error.to_string().contains("FatbinBuilder"), "{error}");
}
