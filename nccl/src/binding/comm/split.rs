//! Splitting communicators: one rank's split, or every rank of an all-GPU clique at once.

use std::sync::Arc;

use super::super::clique::Clique;
use super::super::config::{CommConfig, ConfigStrings, RawConfig};
use super::super::state::{in_group, nccl_group};
use super::{Communicator, split_color};
use crate::error::nccl;
use cuda_safe::{Error, Result};
use nccl_sys::ncclComm_t;

impl Communicator {
    /// Splits this communicator (`ncclCommSplit`, NCCL 2.18 and later): the ranks that pass
    /// the same `color` form a new communicator, ranked by `key` (then by their rank here);
    /// `None` (`NCCL_SPLIT_NOCOLOR`) takes no part and gets `None`. Every rank of this
    /// communicator must call it, each in its own process or thread; ranks driven by one
    /// thread (all-GPU communicators) split together with [`split_all`](Self::split_all).
    /// `config` of `None` inherits this communicator's. A non-blocking communicator's split is
    /// waited for (NCCL hands the new communicator over only when it is done).
    ///
    #[doc = nccl_sys::api_doc!(ncclCommSplit)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a color past `i32::MAX`, or inside a
    /// [`group`](crate::group) (NCCL hands the new communicator back only when the group
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
    #[doc = nccl_sys::api_doc!(ncclCommSplit)]
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `splits` and `comms` differ in length, for a color past
    /// `i32::MAX` (before any rank splits), or inside a [`group`](crate::group); NCCL's error
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
}
