use std::cmp::Ordering;
use std::path::PathBuf;

use super::{
    NEW_ENTRY, NEW_HEADER, NEW_MAGIC, OLD_MAGIC, OWN_FLAGS, OWN_ORDER, library_order, lookup,
    new_start, string_at, u32_at,
};

/// One entry of a made-up cache: flags, name, file, OS version, hwcap.
type Entry<'a> = (i32, &'a str, &'a str, u32, u64);

/// A cache in the new format holding `entries`, sorted as `ldconfig` sorts them (names in
/// descending order; entries of one name in the order given).
fn new_cache(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut sorted = entries.to_vec();
    sorted.sort_by(|a, b| library_order(b.1.as_bytes(), a.1.as_bytes()));
    unsorted_cache(&sorted)
}

/// A cache in the new format holding `entries`, in order.
fn unsorted_cache(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut strings: Vec<u8> = Vec::new();
    let strings_at = NEW_HEADER_LEN + entries.len() * 24;
    let mut table = Vec::new();
    for (flags, name, file, os_version, hwcap) in entries {
        let mut offset = |text: &str| {
            let at = (strings_at + strings.len()) as u32;
            strings.extend_from_slice(text.as_bytes());
            strings.push(0);
            at
        };
        let (key, value) = (offset(name), offset(file));
        table.extend_from_slice(&flags.to_ne_bytes());
        table.extend_from_slice(&key.to_ne_bytes());
        table.extend_from_slice(&value.to_ne_bytes());
        table.extend_from_slice(&os_version.to_ne_bytes());
        table.extend_from_slice(&hwcap.to_ne_bytes());
    }
    let mut cache = NEW_MAGIC.to_vec();
    cache.extend_from_slice(&(entries.len() as u32).to_ne_bytes());
    cache.extend_from_slice(&(strings.len() as u32).to_ne_bytes());
    cache.push(OWN_ORDER);
    cache.resize(NEW_HEADER_LEN, 0);
    cache.extend_from_slice(&table);
    cache.extend_from_slice(&strings);
    cache
}

const NEW_HEADER_LEN: usize = 48;

fn own() -> i32 {
    OWN_FLAGS.unwrap_or(3)
}

#[test]
fn a_name_maps_to_the_first_entry_of_this_architecture() {
    if OWN_FLAGS.is_none() {
        return; // no cache tag known here: every lookup says nothing
    }
    let cache = new_cache(&[
        (
            0x0a03 ^ 0x0303 ^ own(),
            "libfake.so.1",
            "/other-arch/libfake.so.1",
            0,
            0,
        ),
        (own(), "libfake.so.1", "/lib/libfake.so.1", 0, 0),
        (own(), "libfake.so.1", "/usr/lib/libfake.so.1", 0, 0),
        (own(), "libother.so.2", "/lib/libother.so.2", 0, 0),
    ]);
    assert_eq!(
        lookup(&cache, b"libfake.so.1"),
        Some(Some(PathBuf::from("/lib/libfake.so.1")))
    );
    assert_eq!(
        lookup(&cache, b"libother.so.02"),
        Some(Some(PathBuf::from("/lib/libother.so.2"))),
        "digits compare by value, as the loader's"
    );
    assert_eq!(lookup(&cache, b"libnone.so.1"), Some(None));

    // An old-format cache before the new one is skipped.
    let mut both = OLD_MAGIC.to_vec();
    both.push(0);
    both.extend_from_slice(&1u32.to_ne_bytes());
    both.extend_from_slice(&[0; 12]);
    both.extend_from_slice(&cache);
    assert_eq!(
        lookup(&both, b"libfake.so.1"),
        Some(Some(PathBuf::from("/lib/libfake.so.1")))
    );
}

#[test]
fn what_the_loader_could_choose_otherwise_says_nothing() {
    if OWN_FLAGS.is_none() {
        return;
    }
    for (os_version, hwcap) in [(0, 1u64 << 62 | 3), (0, 1), (0x030200, 0)] {
        let cache = new_cache(&[
            (
                own(),
                "libfake.so.1",
                "/lib/glibc-hwcaps/x86-64-v3/libfake.so.1",
                os_version,
                hwcap,
            ),
            (own(), "libfake.so.1", "/lib/libfake.so.1", 0, 0),
        ]);
        assert_eq!(
            lookup(&cache, b"libfake.so.1"),
            None,
            "{os_version} {hwcap}"
        );
    }
    let mut other_order = new_cache(&[(own(), "libfake.so.1", "/lib/libfake.so.1", 0, 0)]);
    other_order[28] = 5 - OWN_ORDER;
    assert_eq!(lookup(&other_order, b"libfake.so.1"), None);
    assert_eq!(lookup(b"ld.so-1.7.0\0", b"libfake.so.1"), None);
    assert_eq!(lookup(b"something else", b"libfake.so.1"), None);
}

#[test]
fn damaged_caches_never_panic() {
    let cache = new_cache(&[
        (own(), "libfake.so.1", "/lib/libfake.so.1", 0, 0),
        (own(), "libother.so.2", "/lib/libother.so.2", 0, 0),
    ]);
    for at in 0..cache.len() {
        let _ = lookup(&cache[..at], b"libother.so.2");
        for flip in [0x01u8, 0x80, 0xff] {
            let mut damaged = cache.clone();
            damaged[at] ^= flip;
            let _ = lookup(&damaged, b"libother.so.2");
        }
    }
}

#[test]
fn library_names_compare_as_the_loader_compares_them() {
    let equal = |a: &[u8], b: &[u8]| library_order(a, b) == Ordering::Equal;
    assert!(equal(b"libz.so.1", b"libz.so.1"));
    assert!(equal(b"libz.so.01", b"libz.so.1"));
    assert!(equal(b"", b""));
    assert!(equal(
        b"x99999999999999999999999",
        b"x99999999999999999999999"
    ));
    let less = |a: &[u8], b: &[u8]| {
        library_order(a, b) == Ordering::Less && library_order(b, a) == Ordering::Greater
    };
    assert!(less(b"libz.so.1", b"libz.so.10"), "digits by value");
    assert!(less(b"libz.so.9", b"libz.so.10"), "digits by value");
    assert!(less(b"libz.so.1", b"libz.so.1.2"), "a shorter name first");
    assert!(less(b"libz.so", b"libz.so.1"));
    assert!(
        less(b"libz.so.a", b"libz.so.1"),
        "a digit after any other byte"
    );
    assert!(less(b"liba.so", b"libb.so"));
}

#[test]
fn a_cache_out_of_order_is_searched_as_the_loader_searches_it() {
    if OWN_FLAGS.is_none() {
        return;
    }
    // Out of order, the loader's binary search can miss a name that is there; so does this
    // module, rather than claim a file the loader would not open.
    let names = [
        "liba.so.1",
        "libb.so.1",
        "libc.so.1",
        "libd.so.1",
        "libe.so.1",
    ];
    let entries: Vec<Entry<'_>> = names.iter().map(|n| (own(), *n, "/lib/x", 0, 0)).collect();
    let ascending = unsorted_cache(&entries);
    assert_eq!(
        lookup(&ascending, b"libc.so.1"),
        Some(Some("/lib/x".into()))
    );
    assert_eq!(lookup(&ascending, b"liba.so.1"), Some(None));
    let sorted = new_cache(&entries);
    for name in names {
        assert_eq!(
            lookup(&sorted, name.as_bytes()),
            Some(Some("/lib/x".into()))
        );
    }
}

/// This machine's own cache, where there is one: sorted in the order this module searches,
/// and every name in it found.
#[test]
fn this_machines_cache_is_in_the_order_searched() {
    let Ok(cache) = std::fs::read("/etc/ld.so.cache") else {
        return; // no cache on this machine
    };
    let Some(start) = new_start(&cache) else {
        return; // another format: every lookup says nothing (checked above)
    };
    let table = &cache[start..];
    let count = u32_at(table, 20).unwrap() as usize;
    let entries: Vec<(&[u8], i32)> = (0..count)
        .map(|index| {
            let entry = &table[NEW_HEADER + index * NEW_ENTRY..];
            let flags = i32::from_ne_bytes(entry[..4].try_into().unwrap());
            (string_at(table, u32_at(entry, 4).unwrap()).unwrap(), flags)
        })
        .collect();
    assert!(!entries.is_empty());
    let keys: Vec<&[u8]> = entries.iter().map(|(key, _)| *key).collect();
    for pair in keys.windows(2) {
        assert_ne!(
            library_order(pair[0], pair[1]),
            Ordering::Less,
            "{:?} before {:?}",
            String::from_utf8_lossy(pair[0]),
            String::from_utf8_lossy(pair[1])
        );
    }
    for (key, flags) in entries {
        if Some(flags) == OWN_FLAGS {
            assert_ne!(lookup(&cache, key), Some(None), "{key:?} missed");
        }
    }
}
