//! Starting ranks as processes, `torchrun`-style: each gets the job's variables and inherits
//! the rest of the parent's environment, NCCL's variables included, so NCCL's defaults hold
//! unless the caller changes them (`docs/collectives.md` says how to turn NVLink SHARP off).

use std::ffi::OsStr;
use std::net::TcpListener;
use std::process::{Child, Command};

use super::bootstrap::{LOCAL_RANK, MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE};
use crate::error::{Error, Result};

/// NCCL's switch for NVLink SHARP (multicast objects).
#[deprecated(
    since = "0.2.0",
    note = "the crate follows NCCL's defaults; set NCCL_NVLS_ENABLE in the environment yourself"
)]
pub const NVLS_ENABLE: &str = "NCCL_NVLS_ENABLE";

/// Whether this process's environment has NVLS off (`NCCL_NVLS_ENABLE=0`).
#[deprecated(
    since = "0.2.0",
    note = "the crate follows NCCL's defaults; read NCCL_NVLS_ENABLE yourself"
)]
pub fn nvls_disabled() -> bool {
    std::env::var_os("NCCL_NVLS_ENABLE").is_some_and(|value| value == "0")
}

/// Sets `NCCL_NVLS_ENABLE=0` in this process's environment, before NCCL reads it (at its first
/// communicator).
///
/// # Safety
///
/// No other thread may read or write the environment while this runs ([`std::env::set_var`]'s
/// rule): call it first thing in `main`, before any thread starts.
#[deprecated(
    since = "0.2.0",
    note = "the crate follows NCCL's defaults; export NCCL_NVLS_ENABLE=0 before the process starts"
)]
#[allow(deprecated)]
pub unsafe fn disable_nvls_in_process() {
    if !nvls_disabled() {
        // SAFETY: the caller promises no other thread touches the environment now.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
}

/// Starts the ranks of a job on this host as processes, the way `torchrun` does: each gets
/// `RANK`, `WORLD_SIZE`, `LOCAL_RANK` (its GPU), `MASTER_ADDR` and `MASTER_PORT`, and inherits
/// the rest of this process's environment unchanged (NCCL's variables included: the crate
/// sets none of them).
///
/// ```no_run
/// use cuda_safe::nccl::Launcher;
///
/// let launcher = Launcher::local(2)?; // 127.0.0.1 and a free port
/// let mut ranks = launcher.spawn(std::env::current_exe().unwrap(), ["--child"])?;
/// for rank in &mut ranks {
///     assert!(rank.wait().unwrap().success());
/// }
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// How many ranks.
    pub world_size: usize,
    /// Where rank 0 listens.
    pub master_addr: String,
    /// Rank 0's port.
    pub master_port: u16,
}

impl Launcher {
    /// A job of `world_size` ranks on this host: rank 0 listens on 127.0.0.1, on a port that
    /// was free a moment ago.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for no rank; [`Error::NcclBootstrap`] when no port can be had.
    pub fn local(world_size: usize) -> Result<Self> {
        if world_size == 0 {
            return Err(Error::invalid_argument("a job needs at least one rank"));
        }
        Ok(Self {
            world_size,
            master_addr: "127.0.0.1".to_owned(),
            master_port: free_port()?,
        })
    }

    /// The command that starts rank `rank` of `program`, with the job's variables set.
    pub fn command(&self, program: impl AsRef<OsStr>, rank: usize) -> Command {
        let mut command = Command::new(program);
        command
            .env(RANK, rank.to_string())
            .env(WORLD_SIZE, self.world_size.to_string())
            .env(LOCAL_RANK, rank.to_string())
            .env(MASTER_ADDR, &self.master_addr)
            .env(MASTER_PORT, self.master_port.to_string());
        command
    }

    /// Starts every rank of `program` with `args`.
    ///
    /// # Errors
    ///
    /// [`Error::NcclBootstrap`] when a rank cannot be started (those already started are
    /// killed and reaped).
    pub fn spawn<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Result<Vec<Child>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<S> = args.into_iter().collect();
        let mut children: Vec<Child> = Vec::with_capacity(self.world_size);
        for rank in 0..self.world_size {
            match self.command(program.as_ref(), rank).args(&args).spawn() {
                Ok(child) => children.push(child),
                Err(error) => {
                    for child in &mut children {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                    return Err(Error::NcclBootstrap(
                        format!("starting rank {rank}: {error}").into(),
                    ));
                }
            }
        }
        Ok(children)
    }
}

/// A TCP port on 127.0.0.1 that was free when asked (the system picks it).
///
/// # Errors
///
/// [`Error::NcclBootstrap`] when nothing can be bound.
pub fn free_port() -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| Error::NcclBootstrap(format!("finding a free port: {e}").into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh` prints for `$name` in a rank started by `launcher`: its value, or `unset`.
    fn seen_by_a_rank(launcher: &Launcher, script: &str) -> String {
        let output = launcher
            .command("sh", 1)
            .args(["-c", script])
            .output()
            .expect("sh runs");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    #[test]
    fn a_launched_rank_gets_the_job_variables() {
        let launcher = Launcher {
            world_size: 2,
            master_addr: "127.0.0.1".into(),
            master_port: 29511,
        };
        assert_eq!(
            seen_by_a_rank(
                &launcher,
                "echo $RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $MASTER_PORT"
            ),
            "1 2 1 127.0.0.1 29511"
        );
    }

    #[test]
    fn a_launched_rank_inherits_the_parents_environment_nccl_variables_included() {
        let launcher = Launcher::local(2).unwrap();
        // Variables the test's parent set (PATH always; NCCL_NVLS_ENABLE where the job's
        // scripts export it) reach the rank unchanged, and one the parent lacks stays unset:
        // the launcher adds only the job's own variables.
        for name in ["PATH", "HOME", "NCCL_NVLS_ENABLE", "NCCL_DEBUG"] {
            let expected = std::env::var(name).unwrap_or_else(|_| "unset".to_owned());
            let seen = seen_by_a_rank(&launcher, &format!("echo \"${{{name}-unset}}\""));
            assert_eq!(seen, expected, "{name}");
        }
        let children = launcher
            .spawn("sh", ["-c", "test -n \"$RANK\" && test -n \"$PATH\""])
            .unwrap();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        assert!(Launcher::local(0).is_err());
    }
}
