//! Starting ranks as processes, `torchrun`-style: each gets the job's variables and its
//! secret and inherits the rest of the parent's environment, NCCL's variables included, so
//! NCCL's defaults hold unless the caller changes them (`docs/collectives.md` says how to turn
//! NVLink SHARP off). The launcher binds rank 0's port itself and hands the listening socket
//! to rank 0, so the port is never free for another process to take.

use crate::error::bootstrap_error;
use std::ffi::OsStr;
use std::io;
use std::net::{TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::Arc;

use super::bootstrap::{
    JobSecret, LISTEN_FD, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, MAX_WORLD_SIZE, RANK, SECRET,
    WORLD_SIZE,
};
use cuda_safe::{Error, Result};

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
/// `RANK`, `WORLD_SIZE`, `LOCAL_RANK` (its GPU), `MASTER_ADDR`, `MASTER_PORT` and the job's
/// secret ([`SECRET`], which [`Communicator::from_env`](super::Communicator::from_env)
/// requires), and inherits the rest of this process's environment unchanged (NCCL's
/// variables included: the crate sets none of them).
///
/// The launcher binds rank 0's port when it is made and keeps it: rank 0 inherits the
/// listening socket (its descriptor number in [`LISTEN_FD`]) and serves the unique id on it,
/// so no other process can take the port in between. The secret is random, one per launcher
/// ([`JobSecret::generate`]); the environment of a process is readable by its own user only
/// (and root).
///
/// ```no_run
/// use cuda_safe_nccl::Launcher;
///
/// let launcher = Launcher::local(2)?; // 127.0.0.1, a port the system picks, kept bound
/// let mut ranks = launcher.spawn(std::env::current_exe().unwrap(), ["--child"])?;
/// for rank in &mut ranks {
///     assert!(rank.wait().unwrap().success());
/// }
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Launcher {
    /// How many ranks (at most [`MAX_WORLD_SIZE`]).
    pub world_size: usize,
    /// Where rank 0 listens.
    pub master_addr: String,
    /// Rank 0's port. Rank 0 inherits the launcher's socket only while this is its port.
    pub master_port: u16,
    /// The job's secret.
    secret: JobSecret,
    /// Rank 0's listening socket, bound by [`bind`](Self::bind) and kept.
    listener: Option<Arc<TcpListener>>,
}

impl Launcher {
    /// A job of `world_size` ranks on this host: rank 0 listens on 127.0.0.1, on a port the
    /// system picks, which the launcher binds now and keeps ([`bind`](Self::bind)).
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind).
    pub fn local(world_size: usize) -> Result<Self> {
        Self::bind(world_size, "127.0.0.1:0")
    }

    /// A job of `world_size` ranks whose rank 0 listens on `address` (port 0: one the system
    /// picks), bound now and kept until rank 0 takes it over, with a new secret.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for no rank or more than [`MAX_WORLD_SIZE`];
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when the address cannot be bound or no secret can be drawn.
    pub fn bind(world_size: usize, address: impl ToSocketAddrs) -> Result<Self> {
        check_world_size(world_size)?;
        let bound = TcpListener::bind(address).and_then(|listener| {
            let local = listener.local_addr()?;
            Ok((listener, local))
        });
        let (listener, local) =
            bound.map_err(|e| bootstrap_error(format!("binding rank 0's port: {e}")))?;
        Ok(Self {
            world_size,
            master_addr: local.ip().to_string(),
            master_port: local.port(),
            secret: JobSecret::generate()?,
            listener: Some(Arc::new(listener)),
        })
    }

    /// The same job with `secret` as its secret (to share it with ranks started elsewhere).
    pub fn with_secret(mut self, secret: JobSecret) -> Self {
        self.secret = secret;
        self
    }

    /// The job's secret, which every rank gets in [`SECRET`].
    pub fn secret(&self) -> &JobSecret {
        &self.secret
    }

    /// The command that starts rank `rank` of `program`, with the job's variables and secret
    /// set; rank 0's also inherits the launcher's listening socket.
    pub fn command(&self, program: impl AsRef<OsStr>, rank: usize) -> Command {
        let mut command = Command::new(program);
        command
            .env(RANK, rank.to_string())
            .env(WORLD_SIZE, self.world_size.to_string())
            .env(LOCAL_RANK, rank.to_string())
            .env(MASTER_ADDR, &self.master_addr)
            .env(MASTER_PORT, self.master_port.to_string())
            .env(SECRET, self.secret.to_hex());
        if let Some(listener) = self.listener.as_ref().filter(|_| rank == 0) {
            let listens_on_port = listener
                .local_addr()
                .is_ok_and(|address| address.port() == self.master_port);
            if listens_on_port {
                command.env(LISTEN_FD, listener.as_raw_fd().to_string());
                let listener = Arc::clone(listener);
                // SAFETY: the hook runs in the child between fork and exec; it allocates
                // nothing and makes one async-signal-safe call (fcntl) on a descriptor the
                // `Arc` it holds keeps open.
                unsafe { command.pre_exec(move || inherit(listener.as_raw_fd())) };
            }
        }
        command
    }

    /// Starts every rank of `program` with `args`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a world size of 0 or past [`MAX_WORLD_SIZE`];
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when a rank cannot be started (those already started are
    /// killed and reaped).
    pub fn spawn<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Result<Vec<Child>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        check_world_size(self.world_size)?;
        let args: Vec<S> = args.into_iter().collect();
        let mut children: Vec<Child> = Vec::new();
        for rank in 0..self.world_size {
            match self.command(program.as_ref(), rank).args(&args).spawn() {
                Ok(child) => children.push(child),
                Err(error) => {
                    for child in &mut children {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                    return Err(bootstrap_error(format!("starting rank {rank}: {error}")));
                }
            }
        }
        Ok(children)
    }
}

impl PartialEq for Launcher {
    /// The same job: shape, address, secret, and the same listening socket (or none).
    fn eq(&self, other: &Self) -> bool {
        let same_listener = match (&self.listener, &other.listener) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        self.world_size == other.world_size
            && self.master_addr == other.master_addr
            && self.master_port == other.master_port
            && self.secret == other.secret
            && same_listener
    }
}

impl Eq for Launcher {}

/// Refuses no rank and more than [`MAX_WORLD_SIZE`].
fn check_world_size(world_size: usize) -> Result<()> {
    if world_size == 0 || world_size > MAX_WORLD_SIZE {
        return Err(Error::invalid_argument(format!(
            "a job has 1 to {MAX_WORLD_SIZE} ranks, not {world_size}"
        )));
    }
    Ok(())
}

/// Lets `fd` survive `exec` (in the child, after `fork`).
fn inherit(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on an open descriptor, clearing its close-on-exec flag.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A TCP port on 127.0.0.1 that was free when asked (the system picks it).
///
/// # Errors
///
/// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when nothing can be bound.
#[deprecated(
    since = "0.2.0",
    note = "a port free a moment ago can be taken before it is used; Launcher::local and \
            Launcher::bind bind the port and keep it"
)]
pub fn free_port() -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| bootstrap_error(format!("finding a free port: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh` prints for `script` in rank `rank` started by `launcher`.
    fn seen_by_a_rank(launcher: &Launcher, rank: usize, script: &str) -> String {
        let output = launcher
            .command("sh", rank)
            .args(["-c", script])
            .output()
            .expect("sh runs");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    #[test]
    fn a_launched_rank_gets_the_job_variables_and_secret() {
        let launcher = Launcher::local(2).unwrap();
        assert_eq!(
            seen_by_a_rank(
                &launcher,
                1,
                "echo $RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $MASTER_PORT"
            ),
            format!("1 2 1 127.0.0.1 {}", launcher.master_port)
        );
        assert_eq!(
            seen_by_a_rank(&launcher, 1, "echo $CUDA_SAFE_NCCL_SECRET"),
            launcher.secret().to_hex()
        );
        assert_ne!(Launcher::local(2).unwrap().secret(), launcher.secret());
        let chosen = JobSecret::from_bytes(&[1; 16]).unwrap();
        let shared = launcher.clone().with_secret(chosen.clone());
        assert_eq!(shared.secret(), &chosen);
        assert_ne!(shared, launcher);
        assert_eq!(launcher.clone(), launcher);
    }

    #[test]
    fn rank_zero_alone_inherits_the_bound_port_which_no_one_else_can_take() {
        let launcher = Launcher::local(2).unwrap();
        // The port is held from the launcher's start: nothing else binds it.
        assert!(TcpListener::bind(("127.0.0.1", launcher.master_port)).is_err());
        let open = "if [ -n \"$CUDA_SAFE_NCCL_LISTEN_FD\" ] && \
                    [ -e /proc/$$/fd/$CUDA_SAFE_NCCL_LISTEN_FD ]; then echo open; else echo no; fi";
        assert_eq!(seen_by_a_rank(&launcher, 0, open), "open");
        assert_eq!(seen_by_a_rank(&launcher, 1, open), "no");
        // Moved to another port by hand: rank 0 binds that one itself.
        let mut moved = launcher.clone();
        moved.master_port = moved.master_port.wrapping_add(1).max(1);
        assert_eq!(seen_by_a_rank(&moved, 0, open), "no");
    }

    #[test]
    fn world_sizes_are_bounded_without_panicking() {
        for world_size in [0, MAX_WORLD_SIZE + 1] {
            assert!(matches!(
                Launcher::local(world_size),
                Err(Error::InvalidArgument(_))
            ));
        }
        let mut launcher = Launcher::local(1).unwrap();
        for world_size in [usize::MAX, 1 << 40, 0] {
            launcher.world_size = world_size;
            let error = launcher
                .spawn("true", std::iter::empty::<&str>())
                .unwrap_err();
            assert!(
                matches!(&error, Error::InvalidArgument(text) if text.contains("1 to 1048576 ranks")),
                "{error}"
            );
        }
    }

    #[test]
    fn a_launched_rank_inherits_the_parents_environment_nccl_variables_included() {
        let launcher = Launcher::local(2).unwrap();
        // Variables the test's parent set (PATH always; NCCL_NVLS_ENABLE where the job's
        // scripts export it) reach the rank unchanged, and one the parent lacks stays unset:
        // the launcher adds only the job's own variables.
        for name in ["PATH", "HOME", "NCCL_NVLS_ENABLE", "NCCL_DEBUG"] {
            let expected = std::env::var(name).unwrap_or_else(|_| "unset".to_owned());
            let seen = seen_by_a_rank(&launcher, 1, &format!("echo \"${{{name}-unset}}\""));
            assert_eq!(seen, expected, "{name}");
        }
        let children = launcher
            .spawn("sh", ["-c", "test -n \"$RANK\" && test -n \"$PATH\""])
            .unwrap();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
    }
}
