//! Making communicators: every GPU of this process at once, or one rank of a job from its
//! unique id, with or without a config.

use std::sync::Arc;

use super::super::clique::Clique;
use super::super::config::CommConfig;
use super::super::id::UniqueId;
use super::{Communicator, Mode, c_int, check_devices, check_rank};
use crate::error::nccl;
use crate::library::library;
use cuda_safe::Device;
use cuda_safe::{Error, Result};
use nccl_sys::ncclComm_t;

impl Communicator {
    /// One communicator per device, all in this process, ranked in the order given
    /// (`ncclCommInitAll`). Collectives on them are then made from one thread inside
    /// [`group`](crate::group), and each rank's calls are checked against the others' (the
    /// same collective, count, type, operator and root) before they reach NCCL.
    ///
    #[doc = nccl_sys::api_doc!(ncclCommInitAll)]
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
    #[doc = nccl_sys::api_doc!(ncclCommInitRank)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `rank >= ranks`; NCCL's error; [`NcclError::Async`](crate::NcclError::Async) when
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
    #[doc = nccl_sys::api_doc!(ncclCommInitRankConfig)]
    /// # Errors
    ///
    /// As [`init_rank`](Self::init_rank); [`NcclError::Timeout`](crate::NcclError::Timeout) when the timeout passed;
    /// [`NcclError::Async`](crate::NcclError::Async) when creation failed in the background; a missing entry point
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
        raw_config.fit(crate::library::version()?);
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
}
