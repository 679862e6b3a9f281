//! `Communicator`: one rank of an NCCL communicator, bound to one GPU.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::clique::Clique;
use super::config::{CommConfig, ConfigStrings, RawConfig};
use super::group::{in_group, nccl_group};
use super::id::UniqueId;
use super::library::library;
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result, nccl};
use crate::handle::{Owned, Release};
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
/// process from a [`UniqueId`] ([`init_rank`](Self::init_rank),
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

    /// One communicator per device, all in this process, ranked in the order given
    /// (`ncclCommInitAll`). Collectives on them are then made from one thread inside
    /// [`group`](super::group), and each rank's calls are checked against the others' (the
    /// same collective, count, type, operator and root) before they reach NCCL.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for no device or one listed twice; NCCL's error.
    #[doc(alias = "ncclCommInitAll")]
    pub fn init_all(devices: &[Device]) -> Result<Vec<Self>> {
        check_devices(devices)?;
        let nccl = library()?;
        let ordinals = devices
            .iter()
            .map(|device| c_int(device.ordinal(), "device ordinal"))
            .collect::<Result<Vec<i32>>>()?;
        let count = c_int(devices.len(), "device count")?;
        // Every primary context exists (and stays retained) before NCCL makes its streams in
        // them.
        let contexts = devices
            .iter()
            .map(Device::context)
            .collect::<Result<Vec<_>>>()?;
        let mut raw = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `raw` has room for `count` handles and `ordinals` lists `count` devices.
        unsafe {
            nccl!(
                nccl,
                ncclCommInitAll(raw.as_mut_ptr(), count, ordinals.as_ptr())
            )?
        };
        let clique = Arc::new(Clique::new(devices.len()));
        let mode = Mode::of(None);
        let mut communicators = Vec::with_capacity(devices.len());
        for (rank, (handle, context)) in raw.into_iter().zip(contexts).enumerate() {
            let communicator = Self::wrap(
                handle,
                nccl,
                context,
                mode,
                Some((clique.clone(), rank)),
                None,
            );
            communicator.inner.shape.set(Some((rank, devices.len())));
            communicators.push(communicator);
        }
        // Non-blocking under NCCL_COMM_BLOCKING=0: ready only once NCCL says so (one query
        // each when blocking).
        for communicator in &communicators {
            communicator.wait_ready(None)?;
        }
        Ok(communicators)
    }

    /// This process's rank `rank` of `ranks`, on `device`, joining the communicator `id` names
    /// (`ncclCommInitRank`). Every rank must call it, each in its own process or thread; it
    /// returns when all have joined (and, non-blocking under `NCCL_COMM_BLOCKING=0`, once
    /// NCCL reports the communicator ready).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `rank >= ranks`; NCCL's error; [`Error::NcclAsync`] when
    /// a non-blocking creation failed in the background.
    #[doc(alias = "ncclCommInitRank")]
    pub fn init_rank(device: &Device, ranks: usize, rank: usize, id: &UniqueId) -> Result<Self> {
        check_rank(rank, ranks)?;
        let nccl = library()?;
        let (c_ranks, c_rank) = (c_int(ranks, "rank count")?, c_int(rank, "rank")?);
        let context = device.context()?;
        let _current = context.scoped()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` is a valid place for the handle; the device's primary context is
        // current, which is how NCCL learns the device.
        let called = unsafe {
            nccl!(
                nccl,
                ncclCommInitRank(&mut raw, c_ranks, id.as_raw(), c_rank)
            )
        };
        let communicator = Self::own_created(raw, called, "ncclCommInitRank", |raw| {
            Self::wrap(raw, nccl, context.clone(), Mode::of(None), None, None)
        })?;
        communicator.wait_ready(None)?;
        Ok(communicator)
    }

    /// Owns the handle a creation call (`api`, answering `called`) wrote into `raw`: a failed
    /// non-blocking creation may still have handed one out, which is then destroyed.
    fn own_created(
        raw: ncclComm_t,
        called: Result<()>,
        api: &'static str,
        wrap: impl FnOnce(ncclComm_t) -> Self,
    ) -> Result<Self> {
        if raw.is_null() {
            called?;
            return Err(Error::unexpected(api, "succeeded without a communicator"));
        }
        let communicator = wrap(raw);
        called?;
        Ok(communicator)
    }

    /// [`init_rank`](Self::init_rank) with options (`ncclCommInitRankConfig`, NCCL 2.14 and
    /// later). A non-blocking communicator (`blocking: Some(false)`) is polled until it is
    /// ready, and aborted when [`CommConfig::init_timeout`] passes first.
    ///
    /// # Errors
    ///
    /// As [`init_rank`](Self::init_rank); [`Error::NcclTimeout`] when the timeout passed;
    /// [`Error::NcclAsync`] when creation failed in the background; a missing entry point
    /// ([`Error::is_not_supported`]) before NCCL 2.14.
    #[doc(alias = "ncclCommInitRankConfig")]
    pub fn init_rank_with(
        device: &Device,
        ranks: usize,
        rank: usize,
        id: &UniqueId,
        config: &CommConfig,
    ) -> Result<Self> {
        check_rank(rank, ranks)?;
        let nccl = library()?;
        let (c_ranks, c_rank) = (c_int(ranks, "rank count")?, c_int(rank, "rank")?);
        let mut raw_config = config.to_raw()?;
        raw_config.fit(super::library::version()?);
        let context = device.context()?;
        let _current = context.scoped()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` is a valid place for the handle; the config and its strings live
        // until the call returns (NCCL copies it); the device's context is current.
        let called = unsafe {
            nccl!(
                nccl,
                ncclCommInitRankConfig(
                    &mut raw,
                    c_ranks,
                    id.as_raw(),
                    c_rank,
                    raw_config.as_mut_ptr()
                )
            )
        };
        let communicator = Self::own_created(raw, called, "ncclCommInitRankConfig", |raw| {
            let strings = raw_config.strings();
            Self::wrap(
                raw,
                nccl,
                context.clone(),
                Mode::of(Some(config)),
                None,
                strings,
            )
        })?;
        communicator.wait_ready(config.init_timeout)?;
        Ok(communicator)
    }

    /// Splits this communicator (`ncclCommSplit`, NCCL 2.18 and later): the ranks that pass
    /// the same `color` form a new communicator, ranked by `key` (then by their rank here);
    /// `None` (`NCCL_SPLIT_NOCOLOR`) takes no part and gets `None`. Every rank of this
    /// communicator must call it, each in its own process or thread; ranks driven by one
    /// thread (all-GPU communicators) split together with [`split_all`](Self::split_all).
    /// `config` of `None` inherits this communicator's. A non-blocking communicator's split is
    /// waited for (NCCL hands the new communicator over only when it is done).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a color past `i32::MAX`, or inside a
    /// [`group`](super::group) (NCCL hands the new communicator back only when the group
    /// ends: use [`split_all`](Self::split_all)); NCCL's error; a missing entry point
    /// ([`Error::is_not_supported`]) before NCCL 2.18.
    #[doc(alias = "ncclCommSplit")]
    pub fn split(
        &self,
        color: Option<u32>,
        key: i32,
        config: Option<&CommConfig>,
    ) -> Result<Option<Self>> {
        if in_group() {
            return Err(Error::invalid_argument(
                "Communicator::split inside a group: NCCL gives the new communicator only at \
                 the group's end; split ranks of one thread together with Communicator::split_all",
            ));
        }
        let color = split_color(color)?;
        let mut raw_config = config.map(CommConfig::to_raw).transpose()?;
        let mut raw = std::ptr::null_mut();
        self.split_into(color, key, raw_config.as_mut(), &mut raw)?;
        let settled = self.settle_split();
        let child = if raw.is_null() {
            None
        } else {
            Some(Self::wrap(
                raw,
                self.inner.nccl,
                self.inner.context.clone(),
                self.inner.mode.child(config),
                None,
                self.child_strings(raw_config.as_ref()),
            ))
        };
        settled?;
        Ok(child)
    }

    /// The strings a child split with `config` points into: its own config's, or with none
    /// this communicator's (NCCL copies the parent's config, pointers and all).
    fn child_strings(&self, config: Option<&RawConfig>) -> ConfigStrings {
        config.map_or_else(|| self.inner.strings.clone(), RawConfig::strings)
    }

    /// Waits for this communicator's split to finish: a non-blocking parent splits in NCCL's
    /// background thread, which writes the new handle only when done (the parent answers
    /// `ncclInProgress` until then), so the handle's place (and the config) must outlive it.
    fn settle_split(&self) -> Result<()> {
        self.wait_ready(None)
    }

    /// Splits every communicator of `comms` (ranks this thread drives, such as those of
    /// [`init_all`](Self::init_all)) at once, in one group: `splits[i]` is the color and key
    /// of `comms[i]`, as for [`split`](Self::split). Returns each rank's new communicator
    /// (`None` for a `None` color). The new communicators of one color that came from one
    /// all-GPU clique are a clique again, so their collectives are checked against each other.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `splits` and `comms` differ in length, for a color past
    /// `i32::MAX` (before any rank splits), or inside a [`group`](super::group); NCCL's error
    /// (from a split, the group's end, or a non-blocking split finishing).
    #[doc(alias = "ncclCommSplit")]
    pub fn split_all(
        comms: &[Communicator],
        splits: &[(Option<u32>, i32)],
        config: Option<&CommConfig>,
    ) -> Result<Vec<Option<Self>>> {
        if comms.len() != splits.len() {
            return Err(Error::invalid_argument(format!(
                "{} communicators but {} (color, key) pairs",
                comms.len(),
                splits.len()
            )));
        }
        if in_group() {
            return Err(Error::invalid_argument(
                "Communicator::split_all inside a group: NCCL gives the new communicators only \
                 at the outermost group's end",
            ));
        }
        // Everything is checked before the group: a refusal inside it would leave the ranks
        // already queued to split without the others, hanging at the group's end.
        let colors = splits
            .iter()
            .map(|&(color, _)| split_color(color))
            .collect::<Result<Vec<i32>>>()?;
        let mut raw_configs = comms
            .iter()
            .map(|_| config.map(CommConfig::to_raw).transpose())
            .collect::<Result<Vec<_>>>()?;
        let mut raws = vec![std::ptr::null_mut(); comms.len()];
        let Some(first) = comms.first() else {
            return Ok(Vec::new());
        };
        // Crate code only between the group's start and end (see `nccl_group`).
        nccl_group(first.inner.nccl, || {
            let places = raws.iter_mut().zip(&mut raw_configs);
            for (((comm, &(_, key)), &color), (raw, raw_config)) in
                comms.iter().zip(splits).zip(&colors).zip(places)
            {
                comm.split_into(color, key, raw_config.as_mut(), raw)?;
            }
            Ok(false)
        })?;
        // Every parent, even after one failed: NCCL may still be writing the others' handles.
        let settled = comms
            .iter()
            .map(Communicator::settle_split)
            .fold(Ok(()), Result::and);
        let mut children = Vec::with_capacity(comms.len());
        for ((comm, raw), raw_config) in comms.iter().zip(raws).zip(&raw_configs) {
            children.push(if raw.is_null() {
                None
            } else {
                Some(Self::wrap(
                    raw,
                    comm.inner.nccl,
                    comm.inner.context.clone(),
                    comm.inner.mode.child(config),
                    None,
                    comm.child_strings(raw_config.as_ref()),
                ))
            });
        }
        settled?;
        // One clique per color among the new communicators, sized by their count.
        let mut cliques: Vec<(u32, Arc<Clique>)> = Vec::new();
        for ((comm, &(color, _)), child) in comms.iter().zip(splits).zip(&mut children) {
            let (Some(color), Some(child)) = (color, child.as_mut()) else {
                continue;
            };
            if comm.inner.clique.is_some() {
                let members = splits
                    .iter()
                    .filter(|(other, _)| *other == Some(color))
                    .count();
                let clique = match cliques.iter().find(|(known, _)| *known == color) {
                    Some((_, clique)) => clique.clone(),
                    None => {
                        let clique = Arc::new(Clique::new(members));
                        cliques.push((color, clique.clone()));
                        clique
                    }
                };
                let rank = child.rank()?;
                child.set_clique(clique, rank);
            }
        }
        Ok(children)
    }

    /// Makes this communicator rank `rank` of `clique`, whose calls are checked together.
    fn set_clique(&mut self, clique: Arc<Clique>, rank: usize) {
        self.inner.clique = Some((clique, rank));
    }

    /// Calls `ncclCommSplit` for this rank, the new handle into `raw` (null for no color; set
    /// only at the group's end inside one, and only once [`settle_split`](Self::settle_split)
    /// returns for a non-blocking parent). `raw` and `config` must stay put until then.
    fn split_into(
        &self,
        color: i32,
        key: i32,
        config: Option<&mut RawConfig>,
        raw: &mut ncclComm_t,
    ) -> Result<()> {
        let parent = self.handle()?;
        let config_ptr = config.map_or(std::ptr::null_mut(), RawConfig::as_mut_ptr);
        // SAFETY: `parent` is live; `raw` is a valid place for the handle and the config (or
        // null) a valid config, both kept by the caller until NCCL has finished the split (the
        // group's end, then `settle_split`).
        unsafe {
            nccl!(
                self.inner.nccl,
                ncclCommSplit(parent, color, key, raw, config_ptr)
            )
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
    /// # Errors
    ///
    /// NCCL's error (a communicator split inside a group is known only once the group ended).
    #[doc(alias = "ncclCommUserRank")]
    pub fn rank(&self) -> Result<usize> {
        self.shape().map(|(rank, _)| rank)
    }

    /// How many ranks the communicator has (`ncclCommCount`).
    ///
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
                return Err(Error::NcclTimeout { waited: timeout });
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
            code => Err(Error::nccl_async(code)),
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
    /// # Errors
    ///
    /// NCCL's error, or [`Error::NcclAsync`] when finalizing failed in the background.
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
