//! Macros of `nccl.h` that bindgen drops (they expand to `INT_MIN`, `NULL` or a struct
//! initializer), written by hand; the tests check them against the generated layout.

use crate::{NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, ncclConfig_t};

/// `NCCL_CONFIG_UNDEF_INT`: an integer field of `ncclConfig_t` left to NCCL's default.
pub const NCCL_CONFIG_UNDEF_INT: i32 = i32::MIN;

/// The `magic` that `NCCL_CONFIG_INITIALIZER` puts in `ncclConfig_t` (NCCL refuses a config
/// without it).
pub const NCCL_CONFIG_MAGIC: u32 = 0xcafe_beef;

/// `NCCL_VERSION(major, minor, patch)`: the code of a version, in the encoding of the NCCL
/// release (`1000 * major + ...` before 2.9, `10000 * major + ...` from 2.9 on).
pub const fn nccl_version(major: u32, minor: u32, patch: u32) -> u32 {
    cuda_loader::NcclVersion::new(major, minor, patch).0
}

/// A config as `NCCL_CONFIG_INITIALIZER` makes it: this header's size, magic and version, and
/// every attribute undefined (`NCCL_CONFIG_UNDEF_INT`, null), so NCCL uses its defaults.
///
/// An NCCL older than this header reads the fields it knows: from 2.17 on it copies at most its
/// own `sizeof(ncclConfig_t)` (and checks `version` before reading fields older than it);
/// 2.14 to 2.16 read `blocking` alone and refuse any value but 0 or 1 (their initializer wrote
/// 1; `NCCL_CONFIG_UNDEF_INT` came with 2.17), so set it before calling one of them.
pub const fn config_initializer() -> ncclConfig_t {
    ncclConfig_t {
        size: size_of::<ncclConfig_t>(),
        magic: NCCL_CONFIG_MAGIC,
        version: nccl_version(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),
        blocking: NCCL_CONFIG_UNDEF_INT,
        cgaClusterSize: NCCL_CONFIG_UNDEF_INT,
        minCTAs: NCCL_CONFIG_UNDEF_INT,
        maxCTAs: NCCL_CONFIG_UNDEF_INT,
        netName: std::ptr::null(),
        splitShare: NCCL_CONFIG_UNDEF_INT,
        trafficClass: NCCL_CONFIG_UNDEF_INT,
        commName: std::ptr::null(),
        collnetEnable: NCCL_CONFIG_UNDEF_INT,
        CTAPolicy: NCCL_CONFIG_UNDEF_INT,
        shrinkShare: NCCL_CONFIG_UNDEF_INT,
        nvlsCTAs: NCCL_CONFIG_UNDEF_INT,
        nChannelsPerNetPeer: NCCL_CONFIG_UNDEF_INT,
        nvlinkCentricSched: NCCL_CONFIG_UNDEF_INT,
    }
}
