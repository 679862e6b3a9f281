//! `Communicator`: one rank of an NCCL communicator, bound to one GPU.

mod init;
mod split;

use crate::NcclError;
use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::clique::Clique;
use super::config::{CommConfig, ConfigStrings};
use crate::error::nccl;
use cuda_safe::Context;
use cuda_safe::Device;
use cuda_safe::handle::{Owned, Release};
use cuda_safe::{Error, Result};
use nccl_sys::{NCCL_SPLIT_NOCOLOR, Nccl, ncclComm_t, ncclResult_t};

/// How often a wait polls NCCL and the stream.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_micros(50);

/// The environment variable that makes NCCL's communicators non-blocking (`0`) when their
/// config leaves `blocking` undefined, as `ncclCommInitAll` and `ncclCommInitRank` do.
pub const COMM_BLOCKING: &str = "NCCL_COMM_BLOCKING";

/// Whether a communicator's calls may return `ncclInProgress`, and how long the crate waits
/// for one to be queued before aborting the communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    non_blocking: bool,
    timeout: Option<Duration>,
}

impl Mode {
    /// The mode of a communicator made with `config` (or none): its `blocking` when set,
    /// else what NCCL takes then, `NCCL_COMM_BLOCKING` (read after NCCL's initialisation,
    /// which also loads `nccl.conf` into the environment), else blocking. Only reported
    /// ([`Communicator::is_non_blocking`]): the calls themselves go by NCCL's answer.
    fn of(config: Option<&CommConfig>) -> Self {
        let chosen = config.and_then(|config| config.blocking);
        Self {
            non_blocking: chosen.map_or_else(env_non_blocking, |blocking| !blocking),
            timeout: config.and_then(|config| config.init_timeout),
        }
    }

    /// The mode of a child split with `config`: its settings where set, else this one's.
    fn child(self, config: Option<&CommConfig>) -> Self {
        let Some(config) = config else { return self };
        Self {
            non_blocking: config
                .blocking
                .map_or(self.non_blocking, |blocking| !blocking),
            timeout: config.init_timeout.or(self.timeout),
        }
    }
}

/// Whether `NCCL_COMM_BLOCKING` asks for non-blocking communicators (NCCL reads it as an
/// integer: 0 is non-blocking).
fn env_non_blocking() -> bool {
    std::env::var(COMM_BLOCKING).is_ok_and(|value| value.trim().parse::<i64>() == Ok(0))
}

/// One rank of an NCCL communicator: the handle NCCL calls take, the GPU it runs on, and its
/// rank among the communicator's ranks.
///
/// Made for every GPU of this process at once ([`init_all`](Self::init_all)), or one rank per
/// process from a [`UniqueId`](crate::UniqueId) ([`init_rank`](Self::init_rank),
/// [`init_rank_with`](Self::init_rank_with), or [`from_env`](Self::from_env) under a
/// `torchrun`-style launcher), or split from another ([`split`](Self::split)). Dropping it
/// destroys it (`ncclCommDestroy`); [`close`](Self::close) returns the error,
/// [`finalize`](Self::finalize) first flushes its work, and [`abort`](Self::abort) stops it
/// without waiting.
///
/// It is `Send` but not `Sync`: NCCL does not allow two threads to use one communicator at
/// once. A communicator that a [`group`](super::group) recorded calls on is borrowed by it
/// until the group has made them, so it cannot be dropped, closed or aborted meanwhile; no
/// NCCL group is open while the group's closure runs, so destroying another one there acts at
/// once, as anywhere.
#[must_use = "a communicator is destroyed when dropped"]
pub struct Communicator {
    inner: Owned<CommInner>,
}

pub(crate) struct CommInner {
    /// Null once aborted.
    raw: Cell<ncclComm_t>,
    pub(crate) nccl: &'static Nccl,
    /// The device's primary context, which NCCL (through the CUDA runtime) uses: kept retained
    /// while the communicator lives.
    context: Context,
    mode: Mode,
    /// `(rank, ranks)`, read from NCCL on first use.
    shape: Cell<Option<(usize, usize)>>,
    /// The all-GPU clique this rank belongs to, and its rank there.
    pub(crate) clique: Option<(Arc<Clique>, usize)>,
    /// The strings of the config it was made with, which NCCL points into
    /// ([`ConfigStrings`]).
    strings: ConfigStrings,
}

// SAFETY: an NCCL communicator may be used from any thread, one thread at a time; `Cell` keeps
// `CommInner` from being `Sync`, so no two threads share it.
unsafe impl Send for CommInner {}

impl Release for CommInner {
    const WHAT: &'static str = "NCCL communicator";

    fn release(&mut self) -> Result<()> {
        let raw = self.raw.replace(std::ptr::null_mut());
        if raw.is_null() {
            return Ok(());
        }
        // SAFETY: `raw` is a live communicator owned here, destroyed once.
        unsafe { nccl!(self.nccl, ncclCommDestroy(raw)) }
    }
}

impl Communicator {
    /// Owns `raw`, made on `context`'s device with a config pointing into `strings`. It cannot
    /// fail, so a handle NCCL gave is never left unowned (the context was retained before the
    /// communicator was made).
    fn wrap(
        raw: ncclComm_t,
        nccl: &'static Nccl,
        context: Context,
        mode: Mode,
        clique: Option<(Arc<Clique>, usize)>,
        strings: ConfigStrings,
    ) -> Self {
        Self {
            inner: Owned::new(CommInner {
                raw: Cell::new(raw),
                nccl,
                context,
                mode,
                shape: Cell::new(None),
                clique,
                strings,
            }),
        }
    }

    /// The communicator's handle for NCCL calls.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] once the communicator was aborted (by
    /// [`wait_with_timeout`](Self::wait_with_timeout) or an asynchronous error).
    #[inline]
    pub fn as_raw(&self) -> Result<ncclComm_t> {
        self.handle()
    }

    #[inline]
    pub(crate) fn handle(&self) -> Result<ncclComm_t> {
        let raw = self.inner.raw.get();
        if raw.is_null() {
            return Err(Error::invalid_argument(
                "the NCCL communicator was aborted and cannot be used",
            ));
        }
        Ok(raw)
    }

    pub(crate) fn inner(&self) -> &CommInner {
        &self.inner
    }

    /// The GPU this rank runs on.
    pub fn device(&self) -> &Device {
        self.inner.context.device()
    }

    /// This rank's place among the communicator's ranks (`ncclCommUserRank`).
    ///
    #[doc = nccl_sys::api_doc!(ncclCommUserRank)]
    /// # Errors
    ///
    /// NCCL's error (a communicator split inside a group is known only once the group ended).
    #[doc(alias = "ncclCommUserRank")]
    pub fn rank(&self) -> Result<usize> {
        self.shape().map(|(rank, _)| rank)
    }

    /// How many ranks the communicator has (`ncclCommCount`).
    ///
    #[doc = nccl_sys::api_doc!(ncclCommCount)]
    /// # Errors
    ///
    /// As [`rank`](Self::rank).
    #[doc(alias = "ncclCommCount")]
    pub fn size(&self) -> Result<usize> {
        self.shape().map(|(_, ranks)| ranks)
    }

    /// `(rank, ranks)`, asked once.
    pub(crate) fn shape(&self) -> Result<(usize, usize)> {
        if let Some(shape) = self.inner.shape.get() {
            return Ok(shape);
        }
        let raw = self.handle()?;
        let (mut rank, mut ranks) = (0, 0);
        // SAFETY: `raw` is live; both are valid places for an int.
        unsafe {
            nccl!(self.inner.nccl, ncclCommUserRank(raw, &mut rank))?;
            nccl!(self.inner.nccl, ncclCommCount(raw, &mut ranks))?;
        }
        let shape = (
            usize::try_from(rank).map_err(|_| Error::unexpected("ncclCommUserRank", "negative"))?,
            usize::try_from(ranks).map_err(|_| Error::unexpected("ncclCommCount", "negative"))?,
        );
        self.inner.shape.set(Some(shape));
        Ok(shape)
    }

    /// Whether calls on this communicator return before they finish: its config's
    /// `blocking`, else (as NCCL decides) `NCCL_COMM_BLOCKING=0` in the environment, else a
    /// split's parent's. The crate does not rely on it: every call that NCCL answers with
    /// `ncclInProgress` is waited for until queued.
    pub fn is_non_blocking(&self) -> bool {
        self.inner.mode.non_blocking
    }

    /// Waits until NCCL has queued the work of a call it answered with `ncclInProgress`,
    /// polling `ncclCommGetAsyncError` for up to the communicator's
    /// [`init_timeout`](CommConfig::init_timeout) (none: as long as it takes); on an error or
    /// the timeout the communicator is aborted, so NCCL queues nothing more for it.
    pub(crate) fn settle(&self) -> Result<()> {
        self.wait_ready(self.inner.mode.timeout)
    }

    /// Polls `ncclCommGetAsyncError` until the communicator is ready (a non-blocking one may
    /// still be connecting), aborting it when `timeout` passes first.
    pub(crate) fn wait_ready(&self, timeout: Option<Duration>) -> Result<()> {
        let start = Instant::now();
        loop {
            match self.poll_async() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) => {
                    self.abort_now()?;
                    return Err(error);
                }
            }
            if let Some(timeout) = timeout
                && start.elapsed() >= timeout
            {
                self.abort_now()?;
                return Err(NcclError::Timeout { waited: timeout }.into());
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// `ncclCommGetAsyncError`: `Ok(true)` when the communicator is fine and idle of pending
    /// operations, `Ok(false)` while a non-blocking call is still in progress.
    pub(crate) fn poll_async(&self) -> Result<bool> {
        let raw = self.handle()?;
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: `raw` is live; `state` is a valid place for a result.
        unsafe { nccl!(self.inner.nccl, ncclCommGetAsyncError(raw, &mut state))? };
        match state {
            ncclResult_t::ncclSuccess => Ok(true),
            ncclResult_t::ncclInProgress => Ok(false),
            code => Err(NcclError::asynchronous(code).into()),
        }
    }

    /// Stops the communicator now (`ncclCommAbort`): its queued work is cancelled and every
    /// later call on it fails.
    pub(crate) fn abort_now(&self) -> Result<()> {
        let raw = self.inner.raw.replace(std::ptr::null_mut());
        if raw.is_null() {
            return Ok(());
        }
        // SAFETY: `raw` was live and is aborted (and freed) once; the handle is cleared.
        unsafe { nccl!(self.inner.nccl, ncclCommAbort(raw)) }
    }

    /// Aborts the communicator (`ncclCommAbort`): frees it without waiting for its work,
    /// which is cancelled. For a rank whose peers are gone.
    ///
    #[doc = nccl_sys::api_doc!(ncclCommAbort)]
    /// # Errors
    ///
    /// NCCL's error.
    #[doc(alias = "ncclCommAbort")]
    pub fn abort(self) -> Result<()> {
        self.abort_now()
    }

    /// Flushes the communicator's work and releases its resources in step with the other
    /// ranks (`ncclCommFinalize`, NCCL 2.14 and later, waited for), then destroys it.
    ///
    #[doc = nccl_sys::api_doc!(ncclCommFinalize)]
    /// # Errors
    ///
    /// NCCL's error, or [`NcclError::Async`](crate::NcclError::Async) when finalizing failed in the background.
    #[doc(alias = "ncclCommFinalize")]
    pub fn finalize(self) -> Result<()> {
        let raw = self.handle()?;
        // SAFETY: `raw` is live.
        unsafe { nccl!(self.inner.nccl, ncclCommFinalize(raw))? };
        self.wait_ready(None)?;
        self.close()
    }

    /// Destroys the communicator (`ncclCommDestroy`), returning NCCL's error (dropping it does
    /// the same and logs the error).
    ///
    #[doc = nccl_sys::api_doc!(ncclCommDestroy)]
    /// # Errors
    ///
    /// NCCL's error.
    #[doc(alias = "ncclCommDestroy")]
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }
}

/// `value` as a C `int`.
fn c_int(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::invalid_argument(format!("{what} {value} is past i32::MAX")))
}

/// The `int` color `ncclCommSplit` takes: `NCCL_SPLIT_NOCOLOR` for none.
fn split_color(color: Option<u32>) -> Result<i32> {
    color.map_or(Ok(NCCL_SPLIT_NOCOLOR), |color| {
        i32::try_from(color)
            .map_err(|_| Error::invalid_argument(format!("color {color} is past i32::MAX")))
    })
}

fn check_rank(rank: usize, ranks: usize) -> Result<()> {
    if ranks == 0 || rank >= ranks {
        return Err(Error::invalid_argument(format!(
            "rank {rank} of {ranks}: a rank is below the rank count, which is at least 1"
        )));
    }
    Ok(())
}

fn check_devices(devices: &[Device]) -> Result<()> {
    if devices.is_empty() {
        return Err(Error::invalid_argument(
            "ncclCommInitAll needs at least one device",
        ));
    }
    for (index, device) in devices.iter().enumerate() {
        if devices[..index]
            .iter()
            .any(|other| other.ordinal() == device.ordinal())
        {
            return Err(Error::invalid_argument(format!(
                "device {} is listed twice: NCCL needs one rank per GPU",
                device.ordinal()
            )));
        }
    }
    Ok(())
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("raw", &self.inner.raw.get())
            .field("device", &self.inner.context.device().ordinal())
            .field("shape", &self.inner.shape.get())
            .field("non_blocking", &self.inner.mode.non_blocking)
            .finish()
    }
}

impl fmt::Debug for CommInner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommInner")
            .field("raw", &self.raw.get())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_counts_are_checked() {
        assert!(check_rank(0, 1).is_ok());
        assert!(check_rank(3, 4).is_ok());
        assert!(matches!(check_rank(4, 4), Err(Error::InvalidArgument(_))));
        assert!(check_rank(0, 0).is_err());
        assert!(c_int(1 << 40, "rank").is_err());
        assert!(check_devices(&[]).is_err());
    }

    #[test]
    fn split_colors_are_checked_before_nccl() {
        assert_eq!(split_color(None).unwrap(), NCCL_SPLIT_NOCOLOR);
        assert_eq!(split_color(Some(7)).unwrap(), 7);
        assert_eq!(split_color(Some(i32::MAX as u32)).unwrap(), i32::MAX);
        let past = split_color(Some(1 << 31)).unwrap_err();
        assert!(matches!(&past, Error::InvalidArgument(text) if text.contains("past i32::MAX")));
    }

    #[test]
    fn the_mode_follows_the_config_then_the_parent() {
        let timeout = Some(Duration::from_secs(3));
        let chosen = CommConfig {
            blocking: Some(false),
            init_timeout: timeout,
            ..CommConfig::default()
        };
        let mode = Mode::of(Some(&chosen));
        assert_eq!(
            mode,
            Mode {
                non_blocking: true,
                timeout
            }
        );
        // A child without a config, or with blocking left undefined, keeps the parent's.
        assert_eq!(mode.child(None), mode);
        assert_eq!(mode.child(Some(&CommConfig::default())), mode);
        let blocking = CommConfig {
            blocking: Some(true),
            ..CommConfig::default()
        };
        assert_eq!(
            mode.child(Some(&blocking)),
            Mode {
                non_blocking: false,
                timeout
            }
        );
        assert!(!Mode::of(Some(&blocking)).non_blocking);
    }

    #[test]
    fn a_communicator_is_send_not_sync() {
        fn send<T: Send>() {}
        send::<Communicator>();
    }
}
