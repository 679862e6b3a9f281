//! The channel against a descriptor flood (issue 44): a peer that declares more
//! virtual-memory chunks than the process can hold descriptors for, and a descriptor that comes
//! when the process has none free. Each case lowers the open-file soft limit, so it runs in a
//! child process: the test re-runs this binary on an ignored worker with [`WORKER_VAR`] set.

use std::fs::File;
use std::os::fd::AsFd;
use std::process::Command;
use std::time::{Duration, Instant};

use super::tests::memfd_with;
use super::wire::Kind;
use super::{Channel, MAX_VMM_CHUNKS};
use crate::IpcError;
use crate::error::ipc_error;
use cuda_safe::Uuid;
use cuda_safe::VmmShareDescriptor;
use cuda_safe::ipc::{ExportedPool, PoolHandle};

/// Set in a worker's environment: a worker run without it (`cargo test -- --ignored`) does
/// nothing, so it never lowers the limit of a process that runs other tests.
const WORKER_VAR: &str = "CUDA_SAFE_IPC_FLOOD_WORKER";

/// What a worker prints last when all its checks passed.
const WORKER_DONE: &str = "flood worker: done";

/// Runs the ignored test `worker` (its full path) alone in a child process of this binary and
/// checks that it ran to its end.
fn run_worker(worker: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            worker,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WORKER_VAR, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(WORKER_DONE),
        "the worker failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

/// Whether this process is a worker (else the worker returns at once).
fn is_worker() -> bool {
    std::env::var_os(WORKER_VAR).is_some()
}

/// Lowers this process's open-file soft limit to `soft` (the usual default is 1,024).
fn lower_soft_limit(soft: libc::rlim_t) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid place for the answer.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(got, 0);
    limit.rlim_cur = soft.min(limit.rlim_max);
    // SAFETY: `limit` is a valid limit, its soft value within its hard one.
    let set = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    assert_eq!(set, 0);
}

/// Opens `count` unrelated files, as the rest of the process would, and says how many failed.
fn unrelated_opens_failing(count: usize) -> usize {
    let opened: Vec<_> = (0..count).map(|_| File::open("/dev/null")).collect();
    opened.iter().filter(|file| file.is_err()).count()
}

#[test]
fn a_declared_flood_of_chunks_is_refused_before_any_descriptor_comes() {
    run_worker("flood::declared_flood_worker");
}

#[test]
#[ignore = "a worker: run in a child process by the test that needs it"]
fn declared_flood_worker() {
    if !is_worker() {
        return;
    }
    lower_soft_limit(1024);
    let (receiver, flooder) = Channel::pair().unwrap();
    receiver.set_timeout(Some(Duration::from_secs(30))).unwrap();
    flooder.set_timeout(Some(Duration::from_secs(30))).unwrap();
    // The attack: the largest count the protocol allows, then one chunk after another, each
    // with a descriptor of the same memfd (each arrives here as a new descriptor).
    let peer = std::thread::spawn(move || {
        let fd = memfd_with(b"chunk");
        let mib2 = 2 << 20;
        let descriptor = VmmShareDescriptor::test_chunk(0, 0, mib2, mib2).to_bytes();
        let count = (MAX_VMM_CHUNKS as u32).to_le_bytes();
        let mut sent = 0;
        if flooder.send(Kind::VmmChunks, &count, None).is_ok() {
            while sent < MAX_VMM_CHUNKS
                && flooder
                    .send(Kind::VmmChunk, &descriptor, Some(fd.as_fd()))
                    .is_ok()
            {
                sent += 1;
            }
        }
        sent
    });
    let started = Instant::now();
    let error = receiver.recv_vmm_chunks().unwrap_err();
    let took = started.elapsed();
    let text = error.to_string();
    assert!(
        text.contains("65536") && text.contains("ulimit -n"),
        "not the descriptor limit: {text}"
    );
    assert!(
        matches!(
            ipc_error(&error),
            Some(IpcError::DescriptorLimit { declared: 65536, affordable, soft_limit: 1024, .. })
                if *affordable < 1024 * 3 / 4
        ),
        "{error:?}"
    );
    assert!(took < Duration::from_secs(5), "refused late: {took:?}");
    // The rest of the sequence was never read: the channel is out of step.
    assert!(receiver.is_poisoned());
    // The process is not starved: the 64 unrelated opens of the attack all succeed.
    assert_eq!(unrelated_opens_failing(64), 0);
    drop(receiver);
    let sent = peer.join().unwrap();
    println!("the peer sent {sent} chunks before the channel closed");
    assert!(sent < MAX_VMM_CHUNKS);
    assert_eq!(unrelated_opens_failing(64), 0);
    // A count the process can afford still crosses under the same limit.
    let (sender, receiver) = Channel::pair().unwrap();
    let mib2 = 2 << 20;
    let chunks: Vec<_> = (0..3)
        .map(|index| {
            let descriptor =
                VmmShareDescriptor::test_chunk(index, u64::from(index) * mib2, mib2, 3 * mib2);
            (memfd_with(b"chunk"), descriptor)
        })
        .collect();
    sender.send_vmm_chunks(&chunks).unwrap();
    assert_eq!(receiver.recv_vmm_chunks().unwrap().len(), 3);
    println!("{WORKER_DONE}");
}

#[test]
fn a_descriptor_that_comes_with_none_free_names_emfile() {
    run_worker("flood::no_descriptor_free_worker");
}

#[test]
#[ignore = "a worker: run in a child process by the test that needs it"]
fn no_descriptor_free_worker() {
    if !is_worker() {
        return;
    }
    lower_soft_limit(128);
    let (sender, receiver) = Channel::pair().unwrap();
    receiver.set_timeout(Some(Duration::from_secs(5))).unwrap();
    let pool = ExportedPool::new(PoolHandle::PosixFd(memfd_with(b"pool")), Uuid([5; 16]));
    // Every descriptor of the process in use, then a pool (a descriptor beside its message).
    let mut fillers = Vec::new();
    let full = loop {
        match File::open("/dev/null") {
            Ok(file) => fillers.push(file),
            Err(error) => break error,
        }
    };
    assert_eq!(full.raw_os_error(), Some(libc::EMFILE), "{full}");
    sender.send_exported_pool(&pool).unwrap();
    let error = receiver.recv_exported_pool().unwrap_err();
    drop(fillers);
    let text = error.to_string();
    assert!(
        text.contains("Too many open files") && text.contains("ulimit -n"),
        "not named as the process's limit: {text}"
    );
    assert!(
        matches!(
            ipc_error(&error).and_then(IpcError::io_error),
            Some(source) if source.raw_os_error() == Some(libc::EMFILE)
        ),
        "{error:?}"
    );
    // The message's bytes were read and its descriptor lost: the channel is out of step.
    assert!(receiver.is_poisoned());
    assert_eq!(unrelated_opens_failing(64), 0);
    println!("{WORKER_DONE}");
}
