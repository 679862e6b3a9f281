//! The in-memory LRU and the two-level cache.

use cuda_safe::cache::{
    CacheKey, CodeKind, CompiledCode, FileStreamProgramCache, InMemoryProgramCache, ProgramCache,
    TieredProgramCache,
};

fn key(n: u8) -> CacheKey {
    CacheKey::from_bytes([n; 32])
}

/// A program of exactly `weight` bytes of code and no names.
fn program(n: u8, weight: usize) -> CompiledCode {
    CompiledCode::new(CodeKind::Cubin, vec![n; weight], Vec::new())
}

fn held(cache: &impl ProgramCache, n: u8) -> bool {
    cache.get(&key(n)).unwrap().is_some()
}

#[test]
fn the_least_recently_used_entry_goes_first() {
    let cache = InMemoryProgramCache::new(300);
    for n in 1..=3 {
        cache.put(&key(n), &program(n, 100)).unwrap();
    }
    assert_eq!(cache.get(&key(1)).unwrap(), Some(program(1, 100)));
    cache.put(&key(4), &program(4, 100)).unwrap();

    let stats = cache.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes, stats.evictions), (3, 300, 1));
    assert!(!held(&cache, 2), "entry 2 was the least recently used");
    assert!(held(&cache, 1) && held(&cache, 3) && held(&cache, 4));

    // The reads above left the order 1, 3, 4 (oldest first); a heavier entry pushes out as
    // many of the oldest as it needs.
    cache.put(&key(5), &program(5, 120)).unwrap();
    let stats = cache.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (2, 220));
    assert!(!held(&cache, 1) && !held(&cache, 3));
    assert!(held(&cache, 4) && held(&cache, 5));
}

#[test]
fn the_byte_cap_counts_code_and_names_and_is_never_exceeded() {
    let named = CompiledCode::new(
        CodeKind::Ptx,
        vec![0; 10],
        vec![("f<int>".to_owned(), "_Z1fIiEvv".to_owned())],
    );
    assert_eq!(named.weight(), 10 + 6 + 9);
    let cache = InMemoryProgramCache::new(50);
    cache.put(&key(1), &named).unwrap();
    cache.put(&key(2), &named).unwrap();
    assert_eq!(cache.stats().unwrap().bytes, 50);
    cache.put(&key(3), &program(3, 1)).unwrap();
    let stats = cache.stats().unwrap();
    assert_eq!((stats.entries, stats.bytes), (2, 26));

    // Replacing an entry charges the new weight only.
    cache.put(&key(3), &program(3, 5)).unwrap();
    assert_eq!(cache.stats().unwrap().bytes, 30);
}

#[test]
fn an_entry_larger_than_the_cap_is_not_stored_and_disturbs_nothing() {
    let cache = InMemoryProgramCache::new(100);
    cache.put(&key(1), &program(1, 60)).unwrap();
    cache.put(&key(2), &program(2, 101)).unwrap();
    assert!(!held(&cache, 2));
    assert!(held(&cache, 1));
    let stats = cache.stats().unwrap();
    assert_eq!(
        (stats.rejected, stats.insertions, stats.evictions),
        (1, 1, 0)
    );

    let none = InMemoryProgramCache::new(100).with_max_entries(0);
    none.put(&key(1), &program(1, 1)).unwrap();
    assert_eq!(none.stats().unwrap().rejected, 1);
    assert!(!held(&none, 1));
}

#[test]
fn the_entry_cap_evicts_in_lru_order() {
    let cache = InMemoryProgramCache::new(u64::MAX).with_max_entries(2);
    assert_eq!(cache.max_entries(), Some(2));
    cache.put(&key(1), &program(1, 1)).unwrap();
    cache.put(&key(2), &program(2, 1)).unwrap();
    assert!(held(&cache, 1));
    cache.put(&key(3), &program(3, 1)).unwrap();
    assert!(!held(&cache, 2));
    assert!(held(&cache, 1) && held(&cache, 3));
}

#[test]
fn remove_and_clear_empty_the_cache_and_counters_count() {
    let cache = InMemoryProgramCache::new(1000);
    for n in 1..=3 {
        cache.put(&key(n), &program(n, 10)).unwrap();
    }
    cache.remove(&key(2)).unwrap();
    cache.remove(&key(9)).unwrap();
    assert!(!held(&cache, 2));
    assert!(held(&cache, 1));
    cache.clear().unwrap();
    assert!(!held(&cache, 1) && !held(&cache, 3));
    let stats = cache.stats().unwrap();
    assert_eq!(
        (
            stats.entries,
            stats.bytes,
            stats.hits,
            stats.misses,
            stats.insertions
        ),
        (0, 0, 1, 3, 3)
    );
}

#[test]
fn threads_sharing_a_small_cache_see_only_whole_entries() {
    let cache = InMemoryProgramCache::new(2_000);
    std::thread::scope(|scope| {
        for thread in 0..8u32 {
            let cache = &cache;
            scope.spawn(move || {
                let mut state = thread.wrapping_mul(2_654_435_761).wrapping_add(1);
                for _ in 0..2_000 {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    let n = (state >> 16) as u8 % 32;
                    let expected = program(n, 50 + usize::from(n) * 10);
                    if state & 1 == 0 {
                        cache.put(&key(n), &expected).unwrap();
                    } else if let Some(found) = cache.get(&key(n)).unwrap() {
                        assert_eq!(found, expected);
                    }
                }
            });
        }
    });
    let stats = cache.stats().unwrap();
    assert!(stats.bytes <= 2_000, "{stats:?}");
    assert!(stats.hits > 0 && stats.evictions > 0, "{stats:?}");
}

#[test]
fn a_disk_hit_fills_memory_and_writes_reach_both_levels() {
    let dir = tempfile::tempdir().unwrap();
    let disk = FileStreamProgramCache::new(dir.path()).unwrap();
    disk.put(&key(1), &program(1, 40)).unwrap();

    let cache = TieredProgramCache::new(
        InMemoryProgramCache::new(1 << 20),
        FileStreamProgramCache::new(dir.path()).unwrap(),
    );
    assert!(!held(cache.front(), 1));
    assert_eq!(cache.get(&key(1)).unwrap(), Some(program(1, 40)));
    assert_eq!(cache.front().get(&key(1)).unwrap(), Some(program(1, 40)));
    assert_eq!(cache.back().stats().unwrap().hits, 1);
    assert_eq!(cache.get(&key(1)).unwrap(), Some(program(1, 40)));
    assert_eq!(cache.back().stats().unwrap().hits, 1, "served from memory");

    cache.put(&key(2), &program(2, 8)).unwrap();
    assert!(held(cache.front(), 2));
    assert!(held(&disk, 2));

    assert!(!held(&cache, 3));
    let stats = cache.stats().unwrap();
    // Hits: one from disk, three from memory (two of them read through `front()`).
    assert_eq!((stats.entries, stats.hits, stats.misses), (2, 4, 1));

    cache.remove(&key(2)).unwrap();
    assert!(!held(cache.front(), 2) && !held(&disk, 2));
    cache.clear().unwrap();
    assert!(!held(cache.front(), 1) && !held(&disk, 1));
}

#[test]
fn any_two_caches_can_be_tiered() {
    let cache = TieredProgramCache::new(
        InMemoryProgramCache::new(100),
        InMemoryProgramCache::new(1_000),
    );
    for n in 1..=5 {
        cache.put(&key(n), &program(n, 60)).unwrap();
    }
    assert_eq!(cache.front().stats().unwrap().entries, 1);
    assert_eq!(cache.back().stats().unwrap().entries, 5);
    assert_eq!(cache.get(&key(1)).unwrap(), Some(program(1, 60)));
    assert!(held(cache.front(), 1) && !held(cache.front(), 5));
}
