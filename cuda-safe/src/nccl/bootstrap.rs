//! Starting a rank under a `torchrun`-style launcher: the job's shape from `RANK`,
//! `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR` and `MASTER_PORT`, and the unique id handed from
//! rank 0 to the others over TCP.

use std::borrow::Cow;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::binding::{Communicator, UniqueId};
use crate::device::Device;
use crate::error::{Error, Result};

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

/// A rank's place in a job, as a launcher describes it.
///
/// ```
/// use cuda_safe::nccl::RankEnv;
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
    /// How many ranks the job has (`WORLD_SIZE`).
    pub world_size: usize,
    /// The GPU of this rank on its host (`LOCAL_RANK`; `RANK` when unset).
    pub local_rank: usize,
    /// Where rank 0 listens (`MASTER_ADDR`).
    pub master_addr: String,
    /// Rank 0's port (`MASTER_PORT`).
    pub master_port: u16,
}

fn bootstrap_error(text: impl Into<Cow<'static, str>>) -> Error {
    Error::NcclBootstrap(text.into())
}

impl RankEnv {
    /// Reads the launcher's variables from this process's environment.
    ///
    /// # Errors
    ///
    /// [`Error::NcclBootstrap`] naming the variable that is missing or invalid.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the launcher's variables through `lookup`.
    ///
    /// # Errors
    ///
    /// As [`from_env`](Self::from_env).
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

    /// Refuses a rank outside the world (the fields are public, so a hand-made one is checked
    /// again before use).
    fn check_shape(&self) -> Result<()> {
        let (rank, world_size) = (self.rank, self.world_size);
        if world_size == 0 || rank >= world_size {
            return Err(bootstrap_error(format!(
                "{RANK}={rank} with {WORLD_SIZE}={world_size}: a rank is below the world size"
            )));
        }
        Ok(())
    }

    /// The communicator's unique id, handed from rank 0 to every other rank: rank 0 makes it,
    /// listens on `MASTER_ADDR:MASTER_PORT` and sends it to each of the other ranks as they
    /// connect; the others connect (retrying until rank 0 listens) and read it. Gives up after
    /// `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::NcclBootstrap`] when the address does not resolve, the port cannot be bound,
    /// or the exchange did not finish in time, or for a rank outside the world size; NCCL's
    /// error from making the id.
    pub fn exchange_unique_id(&self, timeout: Duration) -> Result<UniqueId> {
        self.check_shape()?;
        let deadline = Instant::now() + timeout;
        if self.rank == 0 {
            let id = UniqueId::new()?;
            serve_id(&self.address(), &id, self.world_size - 1, deadline)?;
            Ok(id)
        } else {
            fetch_id(&self.address(), deadline)
        }
    }

    fn address(&self) -> String {
        format!("{}:{}", self.master_addr, self.master_port)
    }
}

impl Communicator {
    /// This process's rank of a job started by a `torchrun`-style launcher: reads
    /// [`RankEnv::from_env`], takes the GPU `LOCAL_RANK`, exchanges the unique id with rank 0
    /// ([`RankEnv::exchange_unique_id`], within `timeout`) and joins
    /// ([`init_rank`](Self::init_rank)).
    ///
    /// # Errors
    ///
    /// [`Error::NcclBootstrap`] for missing or invalid variables or a failed exchange; the
    /// driver's error for the device; NCCL's.
    pub fn from_env(timeout: Duration) -> Result<Self> {
        let env = RankEnv::from_env()?;
        let device = Device::new(env.local_rank)?;
        let id = env.exchange_unique_id(timeout)?;
        Self::init_rank(&device, env.world_size, env.rank, &id)
    }
}

/// Rank 0's side: sends the id to `peers` connections on `address`.
fn serve_id(address: &str, id: &UniqueId, peers: usize, deadline: Instant) -> Result<()> {
    let listener = TcpListener::bind(address)
        .map_err(|e| bootstrap_error(format!("rank 0 cannot listen on {address}: {e}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| bootstrap_error(format!("listening on {address}: {e}")))?;
    let mut served = 0;
    while served < peers {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let sent = stream
                    .set_nonblocking(false)
                    .and_then(|()| stream.set_write_timeout(Some(remaining(deadline))))
                    .and_then(|()| stream.write_all(id.as_bytes()));
                match sent {
                    Ok(()) => served += 1,
                    Err(e) => log::warn!("nccl bootstrap: sending the id to a rank failed: {e}"),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(bootstrap_error(format!(
                        "rank 0 handed the id to {served} of {peers} ranks on {address} before \
                         the timeout"
                    )));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(bootstrap_error(format!("accepting on {address}: {e}"))),
        }
    }
    Ok(())
}

/// Another rank's side: connects to rank 0 (retrying while it is not listening yet) and reads
/// the id.
fn fetch_id(address: &str, deadline: Instant) -> Result<UniqueId> {
    let mut last_error = String::from("no attempt");
    while Instant::now() < deadline {
        let targets = address
            .to_socket_addrs()
            .map_err(|e| bootstrap_error(format!("{address} does not resolve: {e}")))?;
        for target in targets {
            let attempt =
                TcpStream::connect_timeout(&target, remaining(deadline)).and_then(|mut stream| {
                    stream.set_read_timeout(Some(remaining(deadline)))?;
                    let mut bytes = [0u8; 128];
                    stream.read_exact(&mut bytes)?;
                    Ok(bytes)
                });
            match attempt {
                Ok(bytes) => return UniqueId::from_bytes(&bytes),
                Err(e) => last_error = e.to_string(),
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(bootstrap_error(format!(
        "no unique id from rank 0 at {address} before the timeout (last error: {last_error})"
    )))
}

/// The time left until `deadline`, at least a millisecond (a zero timeout means "none").
fn remaining(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn reads_the_launcher_variables() {
        let env = RankEnv::from_lookup(lookup(&[
            (RANK, "3"),
            (WORLD_SIZE, "4"),
            (MASTER_ADDR, "10.0.0.1"),
            (MASTER_PORT, "29500"),
        ]))
        .unwrap();
        assert_eq!(env.rank, 3);
        assert_eq!(env.local_rank, 3, "LOCAL_RANK defaults to RANK");
        assert_eq!(env.address(), "10.0.0.1:29500");
    }

    #[test]
    fn missing_and_invalid_variables_are_named() {
        let missing = RankEnv::from_lookup(lookup(&[(RANK, "0")])).unwrap_err();
        assert!(
            matches!(&missing, Error::NcclBootstrap(text) if text.contains("WORLD_SIZE is not set")),
            "{missing}"
        );
        let bad_rank = RankEnv::from_lookup(lookup(&[
            (RANK, "two"),
            (WORLD_SIZE, "4"),
            (MASTER_ADDR, "h"),
            (MASTER_PORT, "1"),
        ]))
        .unwrap_err();
        assert!(bad_rank.to_string().contains("RANK=\"two\""), "{bad_rank}");
        let bad_port = RankEnv::from_lookup(lookup(&[
            (RANK, "0"),
            (WORLD_SIZE, "1"),
            (MASTER_ADDR, "h"),
            (MASTER_PORT, "70000"),
        ]))
        .unwrap_err();
        assert!(bad_port.to_string().contains("not a port"), "{bad_port}");
        let outside = RankEnv::from_lookup(lookup(&[
            (RANK, "2"),
            (WORLD_SIZE, "2"),
            (MASTER_ADDR, "h"),
            (MASTER_PORT, "1"),
        ]))
        .unwrap_err();
        assert!(
            outside.to_string().contains("below the world size"),
            "{outside}"
        );
    }

    #[test]
    fn a_hand_made_env_outside_the_world_is_refused_before_the_exchange() {
        let mut env = RankEnv {
            rank: 0,
            world_size: 0,
            local_rank: 0,
            master_addr: "127.0.0.1".into(),
            master_port: 1,
        };
        // Rank 0 of no ranks once served `world_size - 1` peers: an overflow panic.
        let error = env
            .exchange_unique_id(Duration::from_millis(10))
            .unwrap_err();
        assert!(
            matches!(&error, Error::NcclBootstrap(text) if text.contains("below the world size")),
            "{error}"
        );
        env.world_size = 2;
        env.rank = 2;
        assert!(env.exchange_unique_id(Duration::from_millis(10)).is_err());
    }

    #[test]
    fn the_id_travels_from_rank_zero_to_the_others() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        drop(listener);
        let id = UniqueId::from_bytes(&[42; 128]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let fetchers: Vec<_> = (0..2)
            .map(|_| {
                let address = address.clone();
                std::thread::spawn(move || fetch_id(&address, deadline))
            })
            .collect();
        serve_id(&address, &id, 2, deadline).unwrap();
        for fetcher in fetchers {
            assert_eq!(fetcher.join().unwrap().unwrap(), id);
        }
    }

    #[test]
    fn a_missing_rank_zero_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        drop(listener);
        let error = fetch_id(&address, Instant::now() + Duration::from_millis(100)).unwrap_err();
        assert!(
            error.to_string().contains("no unique id from rank 0"),
            "{error}"
        );
    }
}
