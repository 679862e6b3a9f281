//! The unique id every rank of one communicator starts from.

use std::fmt;
use std::str::FromStr;

use crate::error::nccl;
use crate::library::library;
use cuda_safe::__private::hex;
use cuda_safe::{Error, Result};
use nccl_sys::{NCCL_UNIQUE_ID_BYTES, ncclUniqueId};

/// The bytes of an NCCL unique id.
const BYTES: usize = NCCL_UNIQUE_ID_BYTES as usize;

/// The id of one communicator: rank 0 makes it ([`UniqueId::new`]) and hands it to every other
/// rank (as bytes or as a hex string: it is `Display` and `FromStr`), and each rank joins with
/// it ([`Communicator::init_rank`](super::Communicator::init_rank)).
///
/// ```
/// use cuda_safe_nccl::UniqueId;
///
/// let id = UniqueId::from_bytes(&[7u8; 128])?;
/// let text = id.to_string(); // 256 hex digits
/// assert_eq!(text.parse::<UniqueId>()?, id);
/// # Ok::<(), cuda_safe::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId {
    bytes: [u8; BYTES],
}

impl UniqueId {
    /// A new id, from NCCL (it names this host's bootstrap address; the other ranks connect
    /// to it).
    ///
    #[doc = nccl_sys::api_doc!(ncclGetUniqueId)]
    /// # Errors
    ///
    /// NCCL's error ([`NcclError::Call`](crate::NcclError::Call)), or [`Error::Load`] when `libnccl` cannot be loaded.
    #[doc(alias = "ncclGetUniqueId")]
    pub fn new() -> Result<Self> {
        let nccl = library()?;
        let mut raw = ncclUniqueId::default();
        // SAFETY: `raw` is a valid place for an id.
        unsafe { nccl!(nccl, ncclGetUniqueId(&mut raw))? };
        Ok(Self::from_raw(raw))
    }

    /// An id from its 128 bytes (as another rank's [`as_bytes`](Self::as_bytes) gave them).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `bytes` is not 128 bytes long.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bytes = <[u8; BYTES]>::try_from(bytes).map_err(|_| {
            Error::invalid_argument(format!(
                "an NCCL unique id is {BYTES} bytes, not {}",
                bytes.len()
            ))
        })?;
        Ok(Self { bytes })
    }

    /// The id's 128 bytes.
    pub fn as_bytes(&self) -> &[u8; BYTES] {
        &self.bytes
    }

    /// The id as NCCL takes it.
    pub fn as_raw(&self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.bytes.map(|byte| byte as std::ffi::c_char),
        }
    }

    /// An id NCCL made.
    pub fn from_raw(raw: ncclUniqueId) -> Self {
        Self {
            bytes: raw.internal.map(|byte| byte as u8),
        }
    }
}

impl fmt::Display for UniqueId {
    /// The 128 bytes as 256 lowercase hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex::write(f, &self.bytes)
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId({self})")
    }
}

impl FromStr for UniqueId {
    type Err = Error;

    /// Parses 256 hex digits (either case), as [`Display`](fmt::Display) writes them.
    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.len() != 2 * BYTES || !text.is_ascii() {
            return Err(Error::invalid_argument(format!(
                "an NCCL unique id is {} hex digits, got {} characters",
                2 * BYTES,
                text.chars().count()
            )));
        }
        let bytes = hex::decode_array(text)
            .ok_or_else(|| Error::invalid_argument("an NCCL unique id is hex digits only"))?;
        Ok(Self { bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_bytes_hex_and_raw() {
        let bytes: Vec<u8> = (0..=255u8).step_by(2).collect();
        let id = UniqueId::from_bytes(&bytes).unwrap();
        assert_eq!(id.as_bytes().as_slice(), bytes.as_slice());
        let text = id.to_string();
        assert_eq!(text.len(), 256);
        assert!(text.starts_with("00020406"));
        assert_eq!(text.parse::<UniqueId>().unwrap(), id);
        assert_eq!(text.to_uppercase().parse::<UniqueId>().unwrap(), id);
        assert_eq!(UniqueId::from_raw(id.as_raw()), id);
        assert_eq!(id.as_raw().internal[1], 2);
    }

    #[test]
    fn bad_ids_are_refused() {
        assert!(matches!(
            UniqueId::from_bytes(&[0; 127]),
            Err(Error::InvalidArgument(_))
        ));
        assert!("00".parse::<UniqueId>().is_err());
        assert!("zz".repeat(128).parse::<UniqueId>().is_err());
        assert!("é".repeat(128).parse::<UniqueId>().is_err());
    }
}
