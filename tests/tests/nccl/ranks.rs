//! The two-process side of the NCCL tests: this binary started as two rank processes through
//! the crate's launcher, and what each rank process runs.

use std::process::{Child, ExitCode};
use std::time::{Duration, Instant};

use cuda_safe_nccl::{Communicator, Launcher, NcclError, ReduceOp};

use super::{TIMEOUT, element};

/// Set in a rank process's environment: the scenario it runs.
const CHILD_ENV: &str = "CUDA_SAFE_NCCL_TEST_CHILD";
/// The dead-peer scenario's wait: short, so the test shows the abort.
const DEAD_PEER_TIMEOUT: Duration = Duration::from_secs(10);
/// The variable through which a rank learns the parent's `NCCL_NVLS_ENABLE`.
const PARENT_NVLS_ENV: &str = "CUDA_GPU_TESTS_PARENT_NVLS";

/// This process's `NCCL_NVLS_ENABLE`, or `unset`.
fn parent_nvls() -> String {
    std::env::var("NCCL_NVLS_ENABLE").unwrap_or_else(|_| "unset".to_owned())
}

/// Starts this binary as two rank processes running `scenario`, and waits for both.
pub(super) fn run_ranks(scenario: &str) -> Vec<std::process::ExitStatus> {
    let launcher = Launcher::local(2).unwrap();
    let program = std::env::current_exe().unwrap();
    let mut children: Vec<Child> = (0..2)
        .map(|rank| {
            launcher
                .command(&program, rank)
                .env(CHILD_ENV, scenario)
                .env(PARENT_NVLS_ENV, parent_nvls())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + TIMEOUT;
    let mut statuses = Vec::new();
    for child in &mut children {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                statuses.push(status);
                break;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                statuses.push(child.wait().unwrap());
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    statuses
}

/// The rank process's part, when this process is one ([`CHILD_ENV`] naming the scenario):
/// joins through the launcher's variables, runs the scenario and gives its exit code; `None`
/// otherwise. `main` asks before the harness runs.
pub(crate) fn child_part() -> Option<ExitCode> {
    let scenario = std::env::var(CHILD_ENV).ok()?;
    Some(rank_process(&scenario))
}

/// A rank process: joins through the launcher's variables, then runs `scenario`.
fn rank_process(scenario: &str) -> ExitCode {
    if std::env::var(PARENT_NVLS_ENV).ok() != Some(parent_nvls()) {
        eprintln!("rank process did not inherit the parent's NCCL_NVLS_ENABLE");
        return ExitCode::FAILURE;
    }
    let comm = Communicator::from_env(TIMEOUT).expect("joining the job");
    let (rank, ranks) = (comm.rank().unwrap(), comm.size().unwrap());
    let device = *comm.device();
    let stream = device.create_stream(Default::default()).unwrap();
    let pool = device.default_memory_resource().unwrap();
    match scenario {
        "collectives" => {
            let values: Vec<f32> = (0..1001).map(|i| element(rank, i) as f32).collect();
            let mut buffer = pool.allocate_from_host(&values, &stream).unwrap();
            comm.all_reduce_in_place::<f32>(&mut buffer, ReduceOp::Sum, &stream)
                .unwrap();
            let mut root = pool
                .allocate_from_host(&[rank as i64 + 100; 3], &stream)
                .unwrap();
            comm.broadcast_in_place::<i64>(&mut root, 1, &stream)
                .unwrap();
            comm.wait_with_timeout(&stream, TIMEOUT).unwrap();
            let sum: Vec<f32> = (0..1001)
                .map(|i| (0..ranks).map(|r| element(r, i)).sum::<u32>() as f32)
                .collect();
            assert_eq!(buffer.to_vec::<f32>().unwrap(), sum);
            assert_eq!(root.to_vec::<i64>().unwrap(), [101; 3]);
            comm.finalize().unwrap();
            ExitCode::SUCCESS
        }
        "dead-peer" => {
            // One collective together, so every connection is up; then rank 1 leaves. (On the
            // heap: as an array, the 4 MiB of ones would be read-only data of the binary.)
            let mut buffer = pool
                .allocate_from_host(&vec![1.0f32; 1 << 20], &stream)
                .unwrap();
            comm.all_reduce_in_place::<f32>(&mut buffer, ReduceOp::Sum, &stream)
                .unwrap();
            comm.wait_with_timeout(&stream, TIMEOUT).unwrap();
            if rank == 1 {
                // Gone mid-way, without a word to rank 0.
                std::process::exit(0);
            }
            let waited = comm
                .all_reduce_in_place::<f32>(&mut buffer, ReduceOp::Sum, &stream)
                .and_then(|()| comm.wait_with_timeout(&stream, DEAD_PEER_TIMEOUT));
            match waited {
                Err(error)
                    if matches!(
                        error.library_error::<NcclError>(),
                        Some(
                            NcclError::Timeout { .. }
                                | NcclError::Async { .. }
                                | NcclError::Call { .. }
                        )
                    ) =>
                {
                    eprintln!("rank 0 saw its peer die: {error}");
                    ExitCode::SUCCESS
                }
                other => {
                    eprintln!("rank 0 expected an NCCL error or a timeout, got {other:?}");
                    ExitCode::FAILURE
                }
            }
        }
        other => {
            eprintln!("unknown scenario {other}");
            ExitCode::FAILURE
        }
    }
}
