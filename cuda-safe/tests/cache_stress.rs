//! Several processes hammering one on-disk cache with a small cap.
//!
//! `multi_process_stress` starts this test binary again, `WORKERS` times, running only the
//! ignored `stress_worker` test with environment variables that make it one worker. Each worker
//! mixes gets, puts, removes and listings over keys shared by all workers and keys of its own,
//! and checks every entry it reads against what that key must hold.
//!
//! `killed_writers_leave_no_wrong_entry_and_no_lasting_temp_files` starts writers the same
//! way and kills them with SIGKILL in the middle of their `put`s.

use std::fs;
use std::io::{BufRead, BufReader, ErrorKind};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    let probe = FileStreamProgramCache::new(dir.path()).unwrap();
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
    let cache = FileStreamProgramCache::new(dir.path())
        .unwrap()
        .with_max_bytes(CAP);
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
    let cache = FileStreamProgramCache::new(dir)
        .unwrap()
        .with_max_bytes(CAP);
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

const KILL_DIR_VAR: &str = "CUDA_SAFE_CACHE_KILL_DIR";
const KILL_CAP: u64 = 8 << 20;
const KILL_KEYS: u32 = 6;
const WRITERS: usize = 3;
const KILLS: u64 = 30;

/// What big program number `n` holds: 1 to 2 MiB of the byte `n`, slow enough to write that
/// a kill often lands mid-write.
fn big_program(n: u32) -> CompiledCode {
    let len = (1 << 20) + (n as usize * 171_717) % (1 << 20);
    CompiledCode::new(CodeKind::Cubin, vec![n as u8; len], Vec::new())
}

/// Writer processes of `killed_writers_...`, killed when dropped (also when the test fails).
struct Writers {
    dir: std::path::PathBuf,
    children: Vec<Child>,
}

impl Writers {
    /// A new writer, once it is about to write.
    fn spawn(&self) -> Child {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["kill_worker", "--exact", "--ignored", "--nocapture"])
            .env(KILL_DIR_VAR, &self.dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let ready = BufReader::new(stdout)
            .lines()
            .any(|line| line.is_ok_and(|line| line == "writing"));
        assert!(ready, "a writer did not start");
        child
    }

    /// `kill -9` of writer `index` (wherever it is in a `put`), and a new writer in its place.
    fn kill_and_replace(&mut self, index: usize) {
        let replacement = self.spawn();
        let mut killed = std::mem::replace(&mut self.children[index], replacement);
        killed.kill().unwrap();
        killed.wait().unwrap();
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The files in `dir` and their total size. A live writer may rename a file away between the
/// listing and its `stat`: such a file is gone, and not counted.
fn files_in(dir: &Path) -> (usize, u64) {
    fs::read_dir(dir)
        .unwrap()
        .fold((0, 0), |(count, bytes), item| {
            match item.unwrap().metadata() {
                Ok(metadata) => (count + 1, bytes + metadata.len()),
                Err(error) if error.kind() == ErrorKind::NotFound => (count, bytes),
                Err(error) => panic!("stat in {}: {error}", dir.display()),
            }
        })
}

/// Writers killed with SIGKILL mid-`put`: no wrong entry is ever read, and the next `put` reaps
/// their temp files at once (a dead writer's lock is free), never counting them; a file killed
/// before its first byte holds nothing and goes once stale. (They used to stay outside the cap
/// for an hour: 39 files, 44 MB, beside 22.6 MB of entries; then five minutes inside it,
/// evicting good entries.)
#[test]
fn killed_writers_leave_no_wrong_entry_and_no_lasting_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut writers = Writers {
        dir: dir.path().to_path_buf(),
        children: Vec::new(),
    };
    writers.children = (0..WRITERS).map(|_| writers.spawn()).collect();
    let tmp = dir.path().join("tmp");
    // `KILLS` kills while the others write (their puts reap the dead writers' files as they
    // go), then every writer killed at once: what those leave, nobody has reaped.
    for kills in 0..KILLS {
        std::thread::sleep(Duration::from_millis(5 + (kills * 37) % 50));
        writers.kill_and_replace(kills as usize % WRITERS);
    }
    drop(writers);

    let (left, left_bytes) = files_in(&tmp);
    println!("{KILLS} kills and the last ones left {left} temp files, {left_bytes} bytes");
    let cache = FileStreamProgramCache::new(dir.path())
        .unwrap()
        .with_max_bytes(KILL_CAP);
    for n in 0..KILL_KEYS {
        if let Some(found) = cache.get(&key(n)).unwrap() {
            assert!(found == big_program(n), "a wrong entry {n}");
        }
    }
    assert_eq!(cache.stats().unwrap().corrupt_entries, 0);

    // Dead writers' files are never counted, and the next put reaps every one with bytes.
    let entry_bytes: u64 = cache.entries().unwrap().iter().map(|e| e.bytes).sum();
    assert_eq!(cache.stats().unwrap().bytes, entry_bytes);
    cache.put(&key(0), &big_program(0)).unwrap();
    let stats = cache.stats().unwrap();
    let entry_bytes: u64 = cache.entries().unwrap().iter().map(|e| e.bytes).sum();
    assert_eq!(stats.bytes, entry_bytes, "{stats:?}");
    // (A grave an evictor left when it was killed is no temp file: it goes once stale.)
    let temp_bytes: u64 = fs::read_dir(&tmp)
        .unwrap()
        .filter_map(|item| item.ok())
        .filter(|item| item.file_name().to_string_lossy().ends_with(".tmp"))
        .filter_map(|item| item.metadata().ok())
        .map(|metadata| metadata.len())
        .sum();
    assert_eq!(temp_bytes, 0, "{left_bytes} bytes of temp files left");
    assert!(stats.bytes <= KILL_CAP || stats.entries == 1, "{stats:?}");

    // Once stale, one put sweeps them all.
    let cache = cache.with_stale_temp_age(Duration::from_millis(500));
    std::thread::sleep(Duration::from_millis(600));
    cache.put(&key(1), &big_program(1)).unwrap();
    assert_eq!(files_in(&tmp), (0, 0));
    assert!(cache.stats().unwrap().bytes <= KILL_CAP);
}

/// A writer of `killed_writers_...`: puts big programs until killed (or, orphaned, for at
/// most a minute).
#[test]
#[ignore = "a worker process of killed_writers_leave_no_wrong_entry_and_no_lasting_temp_files"]
fn kill_worker() {
    let Some(dir) = std::env::var_os(KILL_DIR_VAR) else {
        return;
    };
    let cache = FileStreamProgramCache::new(dir)
        .unwrap()
        .with_max_bytes(KILL_CAP);
    let programs: Vec<_> = (0..KILL_KEYS).map(big_program).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut n = std::process::id() % KILL_KEYS;
    println!("writing");
    while Instant::now() < deadline {
        cache.put(&key(n), &programs[n as usize]).unwrap();
        n = (n + 1) % KILL_KEYS;
    }
}
