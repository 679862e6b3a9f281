//! Several processes hammering one on-disk cache with a small cap.
//!
//! `multi_process_stress` starts this test binary again, `WORKERS` times, running only the
//! ignored `stress_worker` test with environment variables that make it one worker. Each worker
//! mixes gets, puts, removes and listings over keys shared by all workers and keys of its own,
//! and checks every entry it reads against what that key must hold.

use std::process::{Command, Stdio};

use cuda_safe::cache::{CacheKey, CodeKind, CompiledCode, FileStreamProgramCache, ProgramCache};

const WORKERS: u32 = 4;
const OPS_PER_WORKER: u32 = 500;
const SHARED_KEYS: u32 = 12;
const OWN_KEYS: u32 = 6;
const CAP: u64 = 48 * 1024;
const DIR_VAR: &str = "CUDA_SAFE_CACHE_STRESS_DIR";
const WORKER_VAR: &str = "CUDA_SAFE_CACHE_STRESS_WORKER";

/// The key of program number `n`.
fn key(n: u32) -> CacheKey {
    CacheKey::builder(&format!("// program {n}"))
        .compiler("stress", "1.0")
        .target(CodeKind::Cubin, "sm_90")
        .build()
        .expect("a valid key")
}

/// What program number `n` holds: 1 to 8 KiB of code made from `n`, and one lowered name.
fn program(n: u32) -> CompiledCode {
    let len = 1024 + (n as usize * 2_731) % 7_168;
    let code: Vec<u8> = (0..len)
        .map(|i| (i as u32 ^ n.wrapping_mul(97)) as u8)
        .collect();
    CompiledCode::new(
        CodeKind::Cubin,
        code,
        vec![(format!("kernel<{n}>"), format!("_Z6kernelILi{n}EEvv"))],
    )
}

/// The numbers of every program a worker may write: the shared ones, then each worker's own.
fn all_programs() -> Vec<u32> {
    (0..SHARED_KEYS)
        .chain((0..WORKERS).flat_map(|w| (0..OWN_KEYS).map(move |i| 100 * (w + 1) + i)))
        .collect()
}

/// The largest entry file any worker writes.
fn largest_entry_file() -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let probe = FileStreamProgramCache::new(dir.path());
    all_programs()
        .into_iter()
        .map(|n| {
            probe.clear().unwrap();
            probe.put(&key(n), &program(n)).unwrap();
            probe.stats().unwrap().bytes
        })
        .max()
        .unwrap()
}

#[test]
fn multi_process_stress() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WORKERS)
        .map(|worker| {
            Command::new(&exe)
                .args(["stress_worker", "--exact", "--ignored", "--nocapture"])
                .env(DIR_VAR, dir.path())
                .env(WORKER_VAR, worker.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (worker, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "worker {worker} failed ({}):\n{stdout}\n{stderr}",
            output.status
        );
        println!("worker {worker}: {}", stdout.trim());
        assert!(
            stdout.contains("stress worker done"),
            "worker {worker} did no work:\n{stdout}"
        );
    }

    // Within the cap, allowing the documented slack of one entry per concurrent writer.
    let cache = FileStreamProgramCache::new(dir.path()).with_max_bytes(CAP);
    let after = cache.stats().unwrap();
    let slack = u64::from(WORKERS) * largest_entry_file();
    assert!(after.bytes <= CAP + slack, "{after:?}, slack {slack}");
    assert!(after.entries > 0, "{after:?}");

    // Every entry left verifies and holds what its key must.
    let mut found = 0;
    for n in all_programs() {
        if let Some(program_n) = cache.get(&key(n)).unwrap() {
            assert_eq!(program_n, program(n), "entry {n}");
            found += 1;
        }
    }
    assert_eq!(
        found, after.entries,
        "every file is an entry of a known key"
    );
    assert_eq!(cache.stats().unwrap().corrupt_entries, 0);
    assert!(
        !dir.path().join("tmp").read_dir().unwrap().any(|_| true),
        "temp files left behind"
    );

    // Alone again, one put brings the store within the cap exactly.
    cache.put(&key(0), &program(0)).unwrap();
    assert!(cache.stats().unwrap().bytes <= CAP);
}

/// One worker of `multi_process_stress`; does nothing unless started by it.
#[test]
#[ignore = "a worker process of multi_process_stress, which runs it"]
fn stress_worker() {
    let (Some(dir), Some(worker)) = (std::env::var_os(DIR_VAR), std::env::var_os(WORKER_VAR))
    else {
        eprintln!("stress_worker runs only as a child of multi_process_stress");
        return;
    };
    let worker: u32 = worker.to_str().unwrap().parse().unwrap();
    let cache = FileStreamProgramCache::new(dir).with_max_bytes(CAP);
    let mut state = 0x9e37_79b9_u32.wrapping_mul(worker + 1);
    let mut random = move |below: u32| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state % below
    };
    let (mut hits, mut puts) = (0, 0);
    for _ in 0..OPS_PER_WORKER {
        let n = if random(3) == 0 {
            100 * (worker + 1) + random(OWN_KEYS)
        } else {
            random(SHARED_KEYS)
        };
        match random(20) {
            0..=8 => {
                if let Some(found) = cache.get(&key(n)).unwrap() {
                    assert_eq!(found, program(n), "a torn or foreign read of entry {n}");
                    hits += 1;
                }
            }
            9..=17 => {
                cache.put(&key(n), &program(n)).unwrap();
                puts += 1;
            }
            18 => cache.remove(&key(n)).unwrap(),
            _ => {
                for entry in cache.entries().unwrap() {
                    assert!(entry.bytes > 0);
                }
            }
        }
    }
    let stats = cache.stats().unwrap();
    assert_eq!(stats.corrupt_entries, 0, "{stats:?}");
    println!("stress worker done: {hits} hits, {puts} puts, {stats:?}");
}
