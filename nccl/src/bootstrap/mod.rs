//! Starting a rank under a `torchrun`-style launcher: the job's shape from `RANK`,
//! `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR` and `MASTER_PORT`, and the unique id handed from
//! rank 0 to the others over TCP, to ranks that prove they know the job's secret
//! ([`SECRET`]) and from a rank 0 that proves it too, all within one deadline.
//!
//! The exchange moves 128 opaque bytes (`rank` and `root`: the two sides; `wire`: the
//! messages and their proofs); only this front door makes them an NCCL [`UniqueId`], so the
//! exchange runs, and is tested, without NCCL.

#[cfg(test)]
mod hostile;
mod listen;
mod rank;
mod root;
mod secret;
#[cfg(test)]
mod tests;
mod wire;

use crate::error::bootstrap_error;
use std::time::{Duration, Instant};

use super::binding::{Communicator, UniqueId};
use cuda_safe::Device;
use cuda_safe::Result;

pub use listen::LISTEN_FD;
pub use secret::{JobSecret, SECRET};
use wire::ID_BYTES;

/// The variables a launcher sets for each rank.
pub const RANK: &str = "RANK";
/// The number of ranks.
pub const WORLD_SIZE: &str = "WORLD_SIZE";
/// The rank's place on its host: the GPU it uses.
pub const LOCAL_RANK: &str = "LOCAL_RANK";
/// The host rank 0 listens on.
pub const MASTER_ADDR: &str = "MASTER_ADDR";
/// The port rank 0 listens on.
pub const MASTER_PORT: &str = "MASTER_PORT";

/// The most ranks a job bootstrapped here may have. It bounds every count the exchange keeps
/// (rank 0 remembers each rank it served), far below NCCL's own `int` rank count.
pub const MAX_WORLD_SIZE: usize = 1 << 20;

/// A rank's place in a job, as a launcher describes it.
///
/// ```
/// use cuda_safe_nccl::RankEnv;
///
/// let vars = [("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1"),
///             ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29500")];
/// let env = RankEnv::from_lookup(|name| {
///     vars.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string())
/// })?;
/// assert_eq!((env.rank, env.world_size, env.local_rank), (1, 2, 1));
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankEnv {
    /// This rank (`RANK`).
    pub rank: usize,
    /// How many ranks the job has (`WORLD_SIZE`, at most [`MAX_WORLD_SIZE`]).
    pub world_size: usize,
    /// The GPU of this rank on its host (`LOCAL_RANK`; `RANK` when unset).
    pub local_rank: usize,
    /// Where rank 0 listens (`MASTER_ADDR`).
    pub master_addr: String,
    /// Rank 0's port (`MASTER_PORT`, not 0).
    pub master_port: u16,
}

/// The one deadline of a rendezvous.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    /// `None`: a timeout too long for the clock, so none.
    at: Option<Instant>,
    timeout: Duration,
}

impl Deadline {
    fn after(timeout: Duration) -> Self {
        Self {
            at: Instant::now().checked_add(timeout),
            timeout,
        }
    }

    /// The time left (at least a millisecond, as socket timeouts take no zero), `None` once
    /// the deadline has passed.
    fn remaining(&self) -> Option<Duration> {
        let Some(at) = self.at else {
            return Some(Duration::MAX);
        };
        let left = at.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| left.max(Duration::from_millis(1)))
    }

    /// The time left as a `poll(2)` timeout, rounded up: -1 for none, `None` once passed.
    fn poll_millis(&self) -> Option<libc::c_int> {
        if self.at.is_none() {
            return Some(-1);
        }
        let millis = self.remaining()?.as_micros().div_ceil(1000);
        Some(libc::c_int::try_from(millis).unwrap_or(libc::c_int::MAX))
    }
}

impl RankEnv {
    /// Reads the launcher's variables from this process's environment.
    ///
    /// # Errors
    ///
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) naming the variable that is missing or invalid.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the launcher's variables through `lookup`.
    ///
    /// # Errors
    ///
    /// As [`from_env`](Self::from_env): also for `WORLD_SIZE` above [`MAX_WORLD_SIZE`] and
    /// `MASTER_PORT=0`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |name: &str| {
            lookup(name)
                .filter(|value| !value.trim().is_empty())
                .ok_or_else(|| {
                    bootstrap_error(format!(
                        "{name} is not set (a launcher sets {RANK}, {WORLD_SIZE}, {LOCAL_RANK}, \
                         {MASTER_ADDR} and {MASTER_PORT} for each rank)"
                    ))
                })
        };
        let number = |name: &str, value: String| -> Result<usize> {
            value.trim().parse().map_err(|_| {
                bootstrap_error(format!("{name}={value:?} is not a non-negative integer"))
            })
        };
        let rank = number(RANK, get(RANK)?)?;
        let world_size = number(WORLD_SIZE, get(WORLD_SIZE)?)?;
        let local_rank = match lookup(LOCAL_RANK).filter(|value| !value.trim().is_empty()) {
            Some(value) => number(LOCAL_RANK, value)?,
            None => rank,
        };
        let master_addr = get(MASTER_ADDR)?.trim().to_owned();
        let port = get(MASTER_PORT)?;
        let master_port = port
            .trim()
            .parse()
            .map_err(|_| bootstrap_error(format!("{MASTER_PORT}={port:?} is not a port number")))?;
        let env = Self {
            rank,
            world_size,
            local_rank,
            master_addr,
            master_port,
        };
        env.check_shape()?;
        Ok(env)
    }

    /// Refuses a rank outside the world, a world past [`MAX_WORLD_SIZE`] and port 0 (the
    /// fields are public, so a hand-made one is checked again before use).
    fn check_shape(&self) -> Result<()> {
        let (rank, world_size) = (self.rank, self.world_size);
        if world_size == 0 || rank >= world_size {
            return Err(bootstrap_error(format!(
                "{RANK}={rank} with {WORLD_SIZE}={world_size}: a rank is below the world size"
            )));
        }
        if world_size > MAX_WORLD_SIZE {
            return Err(bootstrap_error(format!(
                "{WORLD_SIZE}={world_size}: a job has at most {MAX_WORLD_SIZE} ranks"
            )));
        }
        if self.master_port == 0 {
            return Err(bootstrap_error(format!(
                "{MASTER_PORT}=0: rank 0 listens on a port the others know, not one the system \
                 picks"
            )));
        }
        Ok(())
    }

    /// The communicator's unique id, handed from rank 0 to every other rank, with the job's
    /// secret from this process's [`SECRET`] variable
    /// ([`exchange_unique_id_with`](Self::exchange_unique_id_with)).
    ///
    /// # Errors
    ///
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when [`SECRET`] is missing or invalid; as
    /// [`exchange_unique_id_with`](Self::exchange_unique_id_with).
    pub fn exchange_unique_id(&self, timeout: Duration) -> Result<UniqueId> {
        self.check_shape()?;
        self.exchange_unique_id_with(&JobSecret::from_env()?, timeout)
    }

    /// The communicator's unique id, handed from rank 0 to every other rank that proves it
    /// knows `secret`: rank 0 makes it and serves it on `MASTER_ADDR:MASTER_PORT` (on the
    /// socket its launcher handed down in [`LISTEN_FD`], else one it binds), until every other
    /// rank has it; the others connect (again while rank 0 is not listening yet), prove
    /// themselves, and take the id only with rank 0's proof over it. The whole exchange has one
    /// deadline, `timeout` from now, which no slow or trickling peer extends; a connection
    /// that fails its proof learns nothing and takes no rank's place.
    ///
    /// # Errors
    ///
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) for a shape [`check_shape`](Self::from_lookup) refuses, when
    /// the address does not resolve, the port cannot be bound, or the exchange did not finish
    /// in time (saying how far it got); NCCL's error from making the id.
    pub fn exchange_unique_id_with(
        &self,
        secret: &JobSecret,
        timeout: Duration,
    ) -> Result<UniqueId> {
        let bytes = self.exchange_bytes(secret, Deadline::after(timeout), || {
            UniqueId::new().map(|id| *id.as_bytes())
        })?;
        UniqueId::from_bytes(&bytes)
    }

    /// The exchange of 128 opaque bytes that rank 0 makes with `make` (once it listens).
    fn exchange_bytes(
        &self,
        secret: &JobSecret,
        deadline: Deadline,
        make: impl FnOnce() -> Result<[u8; ID_BYTES]>,
    ) -> Result<[u8; ID_BYTES]> {
        self.check_shape()?;
        // Both fit: check_shape bounds them by MAX_WORLD_SIZE.
        let (rank, world_size) = (self.rank as u32, self.world_size as u32);
        if rank != 0 {
            return rank::fetch(&self.address(), secret, rank, world_size, &deadline);
        }
        if world_size == 1 {
            return make();
        }
        let listener = listen::rank_zero_listener(&self.address(), self.master_port)?;
        let bytes = make()?;
        root::serve(&listener, secret, world_size, &bytes, &deadline)?;
        Ok(bytes)
    }

    /// `MASTER_ADDR:MASTER_PORT`, an IPv6 address in brackets.
    fn address(&self) -> String {
        let host = &self.master_addr;
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{}", self.master_port)
        } else {
            format!("{host}:{}", self.master_port)
        }
    }
}

impl Communicator {
    /// This process's rank of a job started by a `torchrun`-style launcher: reads
    /// [`RankEnv::from_env`] and the job's secret ([`JobSecret::from_env`]), then as
    /// [`from_env_with_secret`](Self::from_env_with_secret).
    ///
    /// # Errors
    ///
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) for missing or invalid variables ([`SECRET`] included) or a
    /// failed exchange; the driver's error for the device; NCCL's.
    pub fn from_env(timeout: Duration) -> Result<Self> {
        let env = RankEnv::from_env()?;
        Self::join(&env, &JobSecret::from_env()?, timeout)
    }

    /// This process's rank of a job whose secret the caller supplies: reads
    /// [`RankEnv::from_env`], takes the GPU `LOCAL_RANK`, exchanges the unique id with rank 0
    /// ([`RankEnv::exchange_unique_id_with`], within `timeout`) and joins
    /// ([`init_rank`](Self::init_rank)).
    ///
    /// # Errors
    ///
    /// As [`from_env`](Self::from_env), [`SECRET`] aside.
    pub fn from_env_with_secret(secret: &JobSecret, timeout: Duration) -> Result<Self> {
        Self::join(&RankEnv::from_env()?, secret, timeout)
    }

    fn join(env: &RankEnv, secret: &JobSecret, timeout: Duration) -> Result<Self> {
        let device = Device::new(env.local_rank)?;
        let id = env.exchange_unique_id_with(secret, timeout)?;
        Self::init_rank(&device, env.world_size, env.rank, &id)
    }
}
