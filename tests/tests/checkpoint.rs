//! Process checkpointing on a real GPU: a child process (this test binary, re-run in child
//! mode) fills GPU memory with a known pattern and waits; the parent locks it, checkpoints it
//! (its GPU memory is released: the device's free memory grows), restores and unlocks it, and
//! the child then finds its data intact.
//!
//! Where the driver refuses checkpointing (a sandbox such as gVisor, a driver older than
//! 12.8), the test prints the error and passes only when it is one of the accepted refusals:
//! [`Error::Unsupported`] (no Linux, a driver older than 12.8 or without the entry points),
//! `CUDA_ERROR_NOT_SUPPORTED` (801) or `CUDA_ERROR_NOT_PERMITTED` (800). Any other error fails.
//! The child is never left locked or running: it is unlocked if needed, then killed and reaped.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use cuda_gpu_tests::{GpuFile, gpu_file};
use cuda_safe::checkpoint::{Process, ProcessState};
use cuda_safe::sys::CUresult;
use cuda_safe::{Device, Error};

/// The test's name, which starts each note.
const TEST: &str = "a_checkpointed_child_gets_its_gpu_memory_back";
/// Set in the child's environment: run the child's part.
const CHILD_ENV: &str = "CUDA_SAFE_CHECKPOINT_CHILD";
/// The child's allocation: large enough that releasing it shows in the free memory.
const CHILD_BYTES: usize = 256 << 20;
/// The child's fill pattern; its first [`PREFIX`] words hold their index instead.
const PATTERN: u32 = 0xC0FF_EE11;
const PREFIX: usize = 4096;

/// Lines the child prints when its data is on the GPU, and when it checked it.
const READY: &str = "CHECKPOINT-CHILD-READY";
const VERIFIED: &str = "CHECKPOINT-CHILD-VERIFIED";

/// Writes a note to stderr, which the run log shows.
fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "{TEST}: {text}");
}

/// Whether `error` is a refusal this test accepts (see the module documentation).
fn is_refusal(error: &Error) -> bool {
    matches!(error, Error::Unsupported { .. })
        || error.cuda_code() == Some(CUresult::CUDA_ERROR_NOT_SUPPORTED)
        || error.cuda_code() == Some(CUresult::CUDA_ERROR_NOT_PERMITTED)
}

/// Passes on an accepted refusal (printing it), fails on anything else.
fn refused(step: &str, error: Error) {
    assert!(
        is_refusal(&error),
        "{step} failed with an error that is not a refusal: {error:?}"
    );
    note(&format!(
        "the driver refused checkpointing at `{step}`: {error} ({error:?}); accepted as a refusal"
    ));
}

/// The child process; dropping it unlocks it when it was left locked, then kills and reaps it.
struct ChildGuard {
    child: Child,
    stdout: BufReader<ChildStdout>,
    locked_by: Option<Process>,
}

impl ChildGuard {
    fn spawn() -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdout,
            locked_by: None,
        }
    }

    /// Reads the child's output until the line `marker`; the child exiting first fails the
    /// test.
    fn wait_for(&mut self, marker: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).unwrap();
            if read == 0 {
                let status = self.child.wait().unwrap();
                panic!("the child exited ({status}) before printing {marker}");
            }
            if line.trim_end() == marker {
                return;
            }
        }
    }

    fn tell(&mut self, command: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(process) = self.locked_by.take()
            && let Err(error) = process.unlock()
        {
            note(&format!(
                "unlocking the child on the way out failed: {error}"
            ));
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The child: fills GPU memory, says so, waits for the parent, checks the memory.
fn child_main() {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    let mut buffer = pool.allocate(CHILD_BYTES, &stream).unwrap();
    buffer.fill::<u32>(PATTERN).unwrap();
    let prefix: Vec<u32> = (0..PREFIX as u32).collect();
    buffer
        .as_mut_slice::<u32>()
        .unwrap()
        .slice_mut(..PREFIX)
        .unwrap()
        .copy_from_host(&prefix)
        .unwrap();
    stream.sync().unwrap();
    println!("{READY}");
    std::io::stdout().flush().unwrap();

    let mut command = String::new();
    std::io::stdin().read_line(&mut command).unwrap();
    assert_eq!(command.trim(), "VERIFY", "the parent's command");
    let words = buffer.to_vec::<u32>().unwrap();
    assert_eq!(&words[..PREFIX], &prefix[..], "the prefix survived");
    let bad = words[PREFIX..]
        .iter()
        .filter(|&&word| word != PATTERN)
        .count();
    assert_eq!(bad, 0, "{bad} words lost the pattern");
    println!("{VERIFIED}");
    std::io::stdout().flush().unwrap();
}

fn a_checkpointed_child_gets_its_gpu_memory_back() {
    let device = Device::new(0).unwrap();
    device.set_current().unwrap(); // the parent's own context, made up front (and kept)
    let mut child = ChildGuard::spawn();
    child.wait_for(READY);

    let process = match Process::new(child.child.id()) {
        Ok(process) => process,
        Err(error) => return refused("Process::new", error),
    };
    match process.state() {
        Ok(state) => assert_eq!(state, ProcessState::RUNNING),
        Err(error) => return refused("state", error),
    }
    match process.restore_thread_id() {
        Ok(tid) => {
            assert!(tid > 0, "restore thread id {tid}");
            note(&format!("the child's restore thread is {tid}"));
        }
        Err(error) => return refused("restore_thread_id", error),
    }

    let free_before = device.mem_info().unwrap().free;
    if let Err(error) = process.lock(Some(Duration::from_secs(30))) {
        return refused("lock", error);
    }
    child.locked_by = Some(process);
    assert_eq!(process.state().unwrap(), ProcessState::LOCKED);

    if let Err(error) = process.checkpoint() {
        refused("checkpoint", error);
        process.unlock().unwrap();
        child.locked_by = None;
        child.tell("VERIFY");
        child.wait_for(VERIFIED);
        return;
    }
    assert_eq!(process.state().unwrap(), ProcessState::CHECKPOINTED);
    let free_checkpointed = device.mem_info().unwrap().free;
    note(&format!(
        "free device memory: {free_before} bytes with the child running, {free_checkpointed} \
         with it checkpointed"
    ));
    assert!(
        free_checkpointed >= free_before + CHILD_BYTES / 2,
        "checkpointing the child released {} bytes, less than half its {CHILD_BYTES}",
        free_checkpointed.saturating_sub(free_before)
    );

    process.restore().unwrap();
    assert_eq!(process.state().unwrap(), ProcessState::LOCKED);
    let free_restored = device.mem_info().unwrap().free;
    note(&format!(
        "free device memory after the restore: {free_restored} bytes"
    ));
    assert!(
        free_restored < free_checkpointed,
        "the restore took the memory back"
    );
    process.unlock().unwrap();
    child.locked_by = None;
    assert_eq!(process.state().unwrap(), ProcessState::RUNNING);

    child.tell("VERIFY");
    child.wait_for(VERIFIED);
    let status = child.child.wait().unwrap();
    assert!(status.success(), "the child exited with {status}");
}

/// The child's part when [`CHILD_ENV`] is set, before the harness (which would probe the GPU
/// and print); the test otherwise.
/// This file's tests.
pub(crate) const FILE: GpuFile = gpu_file![a_checkpointed_child_gets_its_gpu_memory_back,];

/// The child's part, when this process is this file's child ([`CHILD_ENV`] set): its exit
/// code; `None` otherwise. `main` asks before the harness runs.
pub(crate) fn child_part() -> Option<std::process::ExitCode> {
    std::env::var_os(CHILD_ENV)?;
    child_main();
    Some(std::process::ExitCode::SUCCESS)
}
