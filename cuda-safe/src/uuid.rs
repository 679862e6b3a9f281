//! GPU UUIDs: the 16 bytes the CUDA driver gives (`cuDeviceGetUuid_v2`) and NVML's text
//! (`GPU-5e1b2c3d-…`), so a CUDA device and an NVML device can be matched.
//!
//! ```
//! use cuda_safe::Uuid;
//! use cuda_safe::system::{uuid_bytes, uuid_string};
//!
//! let bytes = [0x5e, 0x1b, 0x2c, 0x3d, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb];
//! let text = uuid_string("GPU", &bytes);
//! assert_eq!(text, "GPU-5e1b2c3d-0001-0203-0405-060708090a0b");
//! assert_eq!(uuid_bytes(&text), Some(bytes));
//! assert_eq!(Uuid(bytes).to_string(), text);
//! assert_eq!(text.parse::<Uuid>(), Ok(Uuid(bytes)));
//! ```

use std::fmt;
use std::str::FromStr;

use crate::hex;

/// A device's 16-byte UUID, displayed as NVIDIA tools do (`GPU-xxxxxxxx-xxxx-...`) and parsed
/// from that form (`GPU-` or `MIG-`, either case of hex).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Uuid(pub [u8; 16]);

/// As its text (`"GPU-xxxxxxxx-..."`).
#[cfg(feature = "serde")]
impl serde::Serialize for Uuid {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The same 16 bytes as a `uuid::Uuid` (its text drops NVIDIA's `GPU-` prefix).
#[cfg(feature = "uuid")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
impl From<Uuid> for uuid::Uuid {
    fn from(gpu: Uuid) -> Self {
        uuid::Uuid::from_bytes(gpu.0)
    }
}

/// The same 16 bytes as a GPU UUID (displayed with the `GPU-` prefix).
#[cfg(feature = "uuid")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
impl From<uuid::Uuid> for Uuid {
    fn from(uuid: uuid::Uuid) -> Self {
        Uuid(uuid.into_bytes())
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&uuid_string(GPU_UUID_PREFIX, &self.0))
    }
}

/// The error of parsing a [`Uuid`] from text that is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UuidParseError;

impl fmt::Display for UuidParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a GPU UUID of the form GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
    }
}

impl std::error::Error for UuidParseError {}

impl FromStr for Uuid {
    type Err = UuidParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        uuid_bytes(text).map(Uuid).ok_or(UuidParseError)
    }
}

/// The prefix NVML gives a whole GPU's UUID.
pub const GPU_UUID_PREFIX: &str = "GPU";
/// The prefix NVML gives a MIG device's UUID.
pub const MIG_UUID_PREFIX: &str = "MIG";

/// The lengths, in hex digits, of a UUID's dash-separated groups.
const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];

/// `bytes` in NVML's form: `PREFIX-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase hex.
pub fn uuid_string(prefix: &str, bytes: &[u8; 16]) -> String {
    let digits = hex::encode(bytes);
    let mut text = String::with_capacity(prefix.len() + 37);
    text.push_str(prefix);
    let mut start = 0;
    for group in GROUPS {
        text.push('-');
        text.push_str(&digits[start..start + group]);
        start += group;
    }
    text
}

/// The 16 bytes of a UUID in NVML's form (`GPU-…` or `MIG-…`, either case of hex), or
/// `None` when `text` is not one.
pub fn uuid_bytes(text: &str) -> Option<[u8; 16]> {
    let (prefix, rest) = text.trim().split_once('-')?;
    if prefix != GPU_UUID_PREFIX && prefix != MIG_UUID_PREFIX {
        return None;
    }
    let mut digits = String::with_capacity(32);
    let mut groups = rest.split('-');
    for expected in GROUPS {
        let group = groups.next()?;
        if group.len() != expected {
            return None;
        }
        digits.push_str(group);
    }
    if groups.next().is_some() {
        return None;
    }
    hex::decode_array(&digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 16] = [
        0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x00, 0x11, 0x22,
        0xff,
    ];

    #[test]
    fn uuid_displays_like_nvidia_smi_and_parses_back() {
        let uuid = Uuid([
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ]);
        assert_eq!(uuid.to_string(), "GPU-12345678-9abc-def0-0123-456789abcdef");
        assert_eq!(uuid.to_string().parse(), Ok(uuid));
        assert_eq!("GPU-1234".parse::<Uuid>(), Err(UuidParseError));
    }

    #[cfg(feature = "uuid")]
    #[test]
    fn converts_to_and_from_the_uuid_crate() {
        let gpu = Uuid(BYTES);
        let plain = uuid::Uuid::from(gpu);
        assert_eq!(plain.as_bytes(), &BYTES);
        assert_eq!(plain.to_string(), "deadbeef-0123-4567-89ab-cdef001122ff");
        assert_eq!(gpu.to_string(), format!("GPU-{plain}"));
        assert_eq!(Uuid::from(plain), gpu);
    }

    #[test]
    fn formats_like_nvml() {
        let text = uuid_string(GPU_UUID_PREFIX, &BYTES);
        assert_eq!(text, "GPU-deadbeef-0123-4567-89ab-cdef001122ff");
        assert_eq!(text.len(), 40);
        assert_eq!(
            uuid_string(MIG_UUID_PREFIX, &[0; 16]),
            "MIG-00000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn parses_what_it_formats_and_upper_case() {
        assert_eq!(
            uuid_bytes("GPU-deadbeef-0123-4567-89ab-cdef001122ff"),
            Some(BYTES)
        );
        assert_eq!(
            uuid_bytes("MIG-DEADBEEF-0123-4567-89AB-CDEF001122FF"),
            Some(BYTES)
        );
        for bytes in [[0u8; 16], [0xff; 16], BYTES] {
            assert_eq!(uuid_bytes(&uuid_string("GPU", &bytes)), Some(bytes));
        }
    }

    #[test]
    fn refuses_other_forms() {
        for bad in [
            "",
            "GPU-",
            "deadbeef-0123-4567-89ab-cdef001122ff",
            "XYZ-deadbeef-0123-4567-89ab-cdef001122ff",
            "GPU-deadbeef-0123-4567-89ab-cdef001122f",
            "GPU-deadbeef-0123-4567-89ab-cdef001122ff-00",
            "GPU-deadbeef0123-4567-89ab-cdef001122ff",
            "GPU-deadbeeg-0123-4567-89ab-cdef001122ff",
            "GPU-+eadbeef-0123-4567-89ab-cdef001122ff",
            "MIG-GPU-deadbeef-0123-4567-89ab-cdef001122ff/1/0",
            "GPU-dé-0123-4567-89ab-cdef001122ff",
        ] {
            assert_eq!(uuid_bytes(bad), None, "{bad:?}");
        }
    }
}
