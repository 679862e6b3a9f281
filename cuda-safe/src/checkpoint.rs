//! Process checkpointing: lock another process's CUDA work, save its GPU memory to host
//! memory and release the GPU (`cuCheckpointProcess*`, CUDA 12.8 on, Linux only), then
//! restore and unlock it. A tool such as CRIU can then save the whole process to disk.
//!
//! ```no_run
//! use std::time::Duration;
//! use cuda_safe::checkpoint::{Process, ProcessState};
//!
//! let process = Process::new(4242)?; // a process using CUDA
//! assert_eq!(process.state()?, ProcessState::RUNNING);
//! process.lock(Some(Duration::from_secs(10)))?; // waits for its running work
//! process.checkpoint()?; // its GPU memory moves to host memory; the GPU is released
//! assert_eq!(process.state()?, ProcessState::CHECKPOINTED);
//! process.restore()?; // back on the GPU, still locked
//! process.unlock()?;
//! # Ok::<(), cuda_safe::Error>(())
//! ```
//!
//! # Errors
//!
//! Every call: a driver older than 12.8 (its version, or a missing entry point) and any system
//! other than Linux give [`Error::Unsupported`]. The driver may still refuse an operation with
//! its own code (`CUDA_ERROR_NOT_SUPPORTED`, `CUDA_ERROR_NOT_PERMITTED`, for instance inside a
//! sandbox), returned as [`Error::Cuda`]. The calls that refuse input say so.

use std::fmt;
use std::time::Duration;

use crate::abi;
use crate::driver::{cuda_driver_version, driver};
use crate::error::{Error, Result, cu};
use crate::uuid::Uuid;
use cuda_sys::{
    CUcheckpointCheckpointArgs, CUcheckpointLockArgs, CUcheckpointUnlockArgs, CUprocessState,
    CudaVersion, Driver, LoadError,
};

/// The first driver version with process checkpointing (CUDA 12.8).
pub const MIN_DRIVER_VERSION: CudaVersion = CudaVersion(12080);

/// The feature name in [`Error::Unsupported`].
const FEATURE: &str = "process checkpointing";

/// The checkpoint state of a process (`CUprocessState`), an open newtype: a newer driver may
/// report states this crate does not name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessState(pub CUprocessState);

impl ProcessState {
    /// Running normally.
    pub const RUNNING: Self = Self(CUprocessState::CU_PROCESS_STATE_RUNNING);
    /// Locked: no new CUDA work starts.
    pub const LOCKED: Self = Self(CUprocessState::CU_PROCESS_STATE_LOCKED);
    /// Checkpointed: the GPU memory is saved in host memory and the GPU released.
    pub const CHECKPOINTED: Self = Self(CUprocessState::CU_PROCESS_STATE_CHECKPOINTED);
    /// A checkpoint or restore failed; the process cannot use CUDA any more.
    pub const FAILED: Self = Self(CUprocessState::CU_PROCESS_STATE_FAILED);
    /// A checkpoint is under way (named by the CUDA 13 headers).
    pub const CHECKPOINTING: Self = Self(CUprocessState(4));
    /// A restore is under way (named by the CUDA 13 headers).
    pub const RESTORING: Self = Self(CUprocessState(5));

    /// The state's name (`"locked"`), or `None` for a value this crate does not know.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::RUNNING => "running",
            Self::LOCKED => "locked",
            Self::CHECKPOINTED => "checkpointed",
            Self::FAILED => "failed",
            Self::CHECKPOINTING => "checkpointing",
            Self::RESTORING => "restoring",
            _ => return None,
        })
    }
}

impl fmt::Debug for ProcessState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown state {}", self.0.0),
        }
    }
}

/// A GPU of the checkpointed process (`old`) and the GPU it is restored on (`new`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuPair {
    /// The GPU the process used when it was checkpointed.
    pub old: Uuid,
    /// The GPU to restore its work on.
    pub new: Uuid,
}

/// Another process's CUDA state, by pid. Copying is free: the handle owns nothing.
#[derive(Clone, Copy)]
pub struct Process {
    pid: i32,
    driver: &'static Driver,
}

impl Process {
    /// A handle on the process `pid` (which must use CUDA for the calls to succeed).
    ///
    #[doc = cuda_sys::api_doc!(cuDriverGetVersion)]
    /// # Errors
    ///
    /// [`Error::Unsupported`] off Linux and with a driver older than 12.8;
    /// [`Error::InvalidArgument`] for a pid past `i32::MAX`.
    #[doc(alias = "cuDriverGetVersion")]
    pub fn new(pid: u32) -> Result<Self> {
        if !cfg!(target_os = "linux") {
            return Err(Error::unsupported(
                FEATURE,
                "the CUDA driver offers it on Linux only",
            ));
        }
        let pid = i32::try_from(pid)
            .map_err(|_| Error::invalid_argument(format!("pid {pid} is past i32::MAX")))?;
        let version = cuda_driver_version()?;
        if version.0 < MIN_DRIVER_VERSION.0 {
            return Err(Error::unsupported(
                FEATURE,
                format!("it needs a CUDA {MIN_DRIVER_VERSION} driver, this one is {version}"),
            ));
        }
        Ok(Self {
            pid,
            driver: driver()?,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid as u32 // checked non-negative in `new`
    }

    /// The process's checkpoint state.
    #[doc = cuda_sys::api_doc!(cuCheckpointProcessGetState)]
    #[doc(alias = "cuCheckpointProcessGetState")]
    pub fn state(&self) -> Result<ProcessState> {
        let mut state = CUprocessState(u32::MAX);
        // SAFETY: `state` is a valid out-pointer.
        supported(unsafe {
            cu!(
                self.driver,
                cuCheckpointProcessGetState(self.pid, &mut state)
            )
        })?;
        Ok(ProcessState(state))
    }

    /// The id of the thread that performs the process's checkpoint and restore (what CRIU
    /// needs to know).
    #[doc = cuda_sys::api_doc!(cuCheckpointProcessGetRestoreThreadId)]
    #[doc(alias = "cuCheckpointProcessGetRestoreThreadId")]
    pub fn restore_thread_id(&self) -> Result<i32> {
        let mut tid = 0;
        // SAFETY: `tid` is a valid out-pointer.
        supported(unsafe {
            cu!(
                self.driver,
                cuCheckpointProcessGetRestoreThreadId(self.pid, &mut tid)
            )
        })?;
        Ok(tid)
    }

    /// Locks the process: new CUDA calls block and running work is waited for, for at most
    /// `timeout` (`None`: no limit; rounded up to whole milliseconds).
    /// The process moves from running to locked.
    ///
    #[doc = cuda_sys::api_doc!(cuCheckpointProcessLock)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a timeout past `u32::MAX` milliseconds; the driver's
    /// error, also when the work does not drain in time.
    #[doc(alias = "cuCheckpointProcessLock")]
    pub fn lock(&self, timeout: Option<Duration>) -> Result<()> {
        let mut args = CUcheckpointLockArgs {
            timeoutMs: timeout_ms(timeout)?,
            ..Default::default()
        };
        // SAFETY: `args` is a valid, zero-initialised argument struct.
        supported(unsafe { cu!(self.driver, cuCheckpointProcessLock(self.pid, &mut args)) })
    }

    /// Saves the locked process's GPU memory to host memory and releases its GPU resources;
    /// the process moves from locked to checkpointed.
    #[doc = cuda_sys::api_doc!(cuCheckpointProcessCheckpoint)]
    #[doc(alias = "cuCheckpointProcessCheckpoint")]
    pub fn checkpoint(&self) -> Result<()> {
        let mut args = CUcheckpointCheckpointArgs::default();
        // SAFETY: `args` is a valid, zero-initialised argument struct.
        supported(unsafe {
            cu!(
                self.driver,
                cuCheckpointProcessCheckpoint(self.pid, &mut args)
            )
        })
    }

    /// Restores a checkpointed process on the GPUs it used; it moves to locked.
    #[doc = cuda_sys::api_doc!(cuCheckpointProcessRestore)]
    #[doc(alias = "cuCheckpointProcessRestore")]
    pub fn restore(&self) -> Result<()> {
        self.restore_remapped(&[])
    }

    /// Restores a checkpointed process, moving its work from each pair's `old` GPU to its
    /// `new` GPU; the process moves to locked. An empty `pairs` is [`restore`](Self::restore).
    ///
    /// Remapping needs the CUDA 13 ABI (the `cuda-13` feature), whose argument struct has the
    /// pair list.
    ///
    #[doc = cuda_sys::api_doc!(cuCheckpointProcessRestore)]
    /// # Errors
    ///
    /// [`Error::Unsupported`] for pairs under the CUDA 12 ABI; the driver's error.
    #[doc(alias = "cuCheckpointProcessRestore")]
    pub fn restore_remapped(&self, pairs: &[GpuPair]) -> Result<()> {
        let pairs: Vec<([u8; 16], [u8; 16])> =
            pairs.iter().map(|pair| (pair.old.0, pair.new.0)).collect();
        supported(abi::checkpoint_restore(self.driver, self.pid, &pairs))
    }

    /// Unlocks a locked process: its blocked CUDA calls go on. It moves to running.
    #[doc = cuda_sys::api_doc!(cuCheckpointProcessUnlock)]
    #[doc(alias = "cuCheckpointProcessUnlock")]
    pub fn unlock(&self) -> Result<()> {
        let mut args = CUcheckpointUnlockArgs::default();
        // SAFETY: `args` is a valid, zero-initialised argument struct.
        supported(unsafe { cu!(self.driver, cuCheckpointProcessUnlock(self.pid, &mut args)) })
    }
}

impl fmt::Debug for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Process").field("pid", &self.pid).finish()
    }
}

/// The lock timeout in milliseconds, rounded up: 0 for none, else at least 1.
fn timeout_ms(timeout: Option<Duration>) -> Result<u32> {
    let Some(timeout) = timeout else {
        return Ok(0);
    };
    u32::try_from(timeout.as_nanos().div_ceil(1_000_000).max(1)).map_err(|_| {
        Error::invalid_argument(format!(
            "a lock timeout of {timeout:?} is past u32::MAX milliseconds"
        ))
    })
}

/// A driver call's outcome, with a missing entry point turned into [`Error::Unsupported`].
fn supported(result: Result<()>) -> Result<()> {
    match result {
        Err(Error::Load(LoadError::SymbolMissing { symbol, .. })) => Err(Error::unsupported(
            FEATURE,
            format!("the driver lacks {symbol}: it needs a CUDA {MIN_DRIVER_VERSION} driver"),
        )),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuda_sys::CUresult;
    use cuda_sys::Introduced;
    use std::path::PathBuf;

    #[test]
    fn states_are_named_and_unknown_ones_kept() {
        assert_eq!(ProcessState::RUNNING.name(), Some("running"));
        assert_eq!(ProcessState::CHECKPOINTED.name(), Some("checkpointed"));
        assert_eq!(ProcessState(CUprocessState(3)), ProcessState::FAILED);
        let unknown = ProcessState(CUprocessState(77));
        assert_eq!(unknown.name(), None);
        assert_eq!(format!("{unknown:?}"), "unknown state 77");
        assert_eq!(format!("{:?}", ProcessState::LOCKED), "locked");
    }

    #[test]
    fn lock_timeouts_round_up_to_milliseconds() {
        assert_eq!(timeout_ms(None).unwrap(), 0);
        assert_eq!(timeout_ms(Some(Duration::from_micros(1))).unwrap(), 1);
        assert_eq!(timeout_ms(Some(Duration::ZERO)).unwrap(), 1);
        assert_eq!(timeout_ms(Some(Duration::from_secs(10))).unwrap(), 10_000);
        let too_long = timeout_ms(Some(Duration::from_secs(u64::from(u32::MAX))));
        assert!(matches!(too_long, Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn missing_entry_points_are_unsupported() {
        let missing = LoadError::SymbolMissing {
            library: "the CUDA driver (libcuda)",
            path: PathBuf::from("libcuda.so.1"),
            symbol: "cuCheckpointProcessLock",
            since: Some(Introduced::Cuda(CudaVersion(12080))),
        };
        let error = supported(Err(Error::Load(missing))).unwrap_err();
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        assert!(error.to_string().contains("12.8"), "{error}");
        let refused = supported(Err(Error::cuda(
            "cuCheckpointProcessLock",
            CUresult::CUDA_ERROR_NOT_SUPPORTED,
        )));
        assert_eq!(
            refused.unwrap_err().cuda_code(),
            Some(CUresult::CUDA_ERROR_NOT_SUPPORTED)
        );
    }

    #[test]
    fn pids_past_i32_are_refused_before_the_driver() {
        if cfg!(target_os = "linux") {
            let error = Process::new(u32::MAX).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error}");
        }
    }
}
