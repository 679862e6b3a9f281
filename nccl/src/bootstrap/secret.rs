//! The job's secret: what every rank and rank 0 prove they know before the unique id moves.

use crate::error::bootstrap_error;
use std::fmt;
use std::str::FromStr;

use cuda_safe::__private::hex;
use cuda_safe::{Error, Result};

/// The variable that carries the job's secret to each rank, as hex digits.
pub const SECRET: &str = "CUDA_SAFE_NCCL_SECRET";

/// The secret of one job, shared by its ranks and never sent: rank 0 and each other rank
/// prove to each other that they know it (HMAC-SHA-256 over fresh nonces) before the unique
/// id is handed out, so a process that is not of the job learns nothing from rank 0 and
/// cannot pass itself off as rank 0.
///
/// A [`Launcher`](crate::Launcher) makes one ([`generate`](Self::generate)) and gives it
/// to its ranks in [`SECRET`]; under another launcher, put the same 32 random bytes, as 64
/// hex digits, in every rank's environment (`export CUDA_SAFE_NCCL_SECRET=$(openssl rand -hex
/// 32)` in the job's script), or hand it to
/// [`Communicator::from_env_with_secret`](crate::Communicator::from_env_with_secret).
/// `Debug` does not show it.
///
/// ```
/// use cuda_safe_nccl::JobSecret;
///
/// let secret = JobSecret::generate()?;
/// let again: JobSecret = secret.to_hex().parse()?;
/// assert_eq!(again, secret);
/// assert_eq!(format!("{secret:?}"), "JobSecret(..)");
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Clone)]
pub struct JobSecret {
    bytes: Box<[u8]>,
}

impl JobSecret {
    /// The bytes [`generate`](Self::generate) draws.
    pub const GENERATED_BYTES: usize = 32;
    /// The fewest bytes a secret may have.
    pub const MIN_BYTES: usize = 16;
    /// The most bytes a secret may have (HMAC-SHA-256's block).
    pub const MAX_BYTES: usize = 64;

    /// A new secret of [`GENERATED_BYTES`](Self::GENERATED_BYTES) random bytes, from the
    /// operating system (`getrandom`).
    ///
    /// # Errors
    ///
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when the operating system's random source cannot be read.
    pub fn generate() -> Result<Self> {
        Ok(Self {
            bytes: Box::new(random_bytes::<{ Self::GENERATED_BYTES }>()?),
        })
    }

    /// A secret from its bytes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for fewer than [`MIN_BYTES`](Self::MIN_BYTES) or more than
    /// [`MAX_BYTES`](Self::MAX_BYTES) bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if !(Self::MIN_BYTES..=Self::MAX_BYTES).contains(&bytes.len()) {
            return Err(Error::invalid_argument(format!(
                "a job's secret has {} to {} bytes, not {}",
                Self::MIN_BYTES,
                Self::MAX_BYTES,
                bytes.len()
            )));
        }
        Ok(Self {
            bytes: bytes.into(),
        })
    }

    /// The secret in this process's [`SECRET`] variable.
    ///
    /// # Errors
    ///
    /// As [`from_lookup`](Self::from_lookup).
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The secret in the [`SECRET`] variable, read through `lookup`.
    ///
    /// # Errors
    ///
    /// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when the variable is missing or is not 32 to 128 hex digits.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let value = lookup(SECRET).filter(|value| !value.trim().is_empty());
        let value = value.ok_or_else(|| {
            bootstrap_error(format!(
                "{SECRET} is not set: every rank needs the job's secret (a Launcher sets \
                     it; under another launcher export the same random hex digits to every \
                     rank, e.g. {SECRET}=$(openssl rand -hex 32))"
            ))
        })?;
        value
            .parse()
            .map_err(|error| bootstrap_error(format!("{SECRET} is no secret: {error}")))
    }

    /// The secret as lowercase hex digits, as [`SECRET`] carries it.
    pub fn to_hex(&self) -> String {
        hex::encode(&self.bytes)
    }

    /// The secret's bytes (the HMAC key).
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl FromStr for JobSecret {
    type Err = Error;

    /// Parses hex digits (either case): 32 to 128 of them.
    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        if !text.is_ascii() || !text.len().is_multiple_of(2) {
            return Err(Error::invalid_argument(
                "a job's secret is an even number of hex digits",
            ));
        }
        let bytes = hex::decode(text)
            .ok_or_else(|| Error::invalid_argument("a job's secret is hex digits only"))?;
        Self::from_bytes(&bytes)
    }
}

impl PartialEq for JobSecret {
    /// Compares every byte, whatever the first difference.
    fn eq(&self, other: &Self) -> bool {
        self.bytes.len() == other.bytes.len()
            && self
                .bytes
                .iter()
                .zip(other.bytes.iter())
                .fold(0u8, |differ, (a, b)| differ | (a ^ b))
                == 0
    }
}

impl Eq for JobSecret {}

impl fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobSecret(..)")
    }
}

/// `N` bytes from the operating system's random source.
///
/// # Errors
///
/// [`NcclError::Bootstrap`](crate::NcclError::Bootstrap) when the operating system's source
/// fails (`getrandom`).
pub(super) fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)
        .map_err(|e| bootstrap_error(format!("reading the system's random source: {e}")))?;
    Ok(bytes)
}
