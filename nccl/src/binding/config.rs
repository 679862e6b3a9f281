//! Communicator options: `ncclConfig_t`, filled as `NCCL_CONFIG_INITIALIZER` does.

use std::ffi::CString;
use std::sync::Arc;
use std::time::Duration;

use cuda_safe::{Error, Result};
use nccl_sys::{NCCL_CONFIG_UNDEF_INT, NcclVersion, config_initializer, ncclConfig_t};

/// How a communicator is made ([`Communicator::init_rank_with`](super::Communicator::init_rank_with),
/// [`split`](super::Communicator::split)): every field left `None` is NCCL's default (or its
/// environment variable's value). A field newer than the loaded NCCL is ignored by it, without
/// an error: NCCL 2.14 to 2.16 read only `blocking`; the CTA counts, cluster size and network
/// need 2.17, `split_share` 2.18 and `comm_name` 2.27.
///
/// ```
/// use std::time::Duration;
/// use cuda_safe_nccl::CommConfig;
///
/// let config = CommConfig::default()
///     .blocking(false)
///     .max_ctas(16)
///     .net_name("Socket")
///     .init_timeout(Duration::from_secs(30));
/// assert_eq!(config.max_ctas, Some(16));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommConfig {
    /// Whether NCCL calls on the communicator block until done (`true`, NCCL's default) or
    /// return at once and finish in the background (`false`: creation then polls
    /// `ncclCommGetAsyncError`, so it can give up after [`init_timeout`](Self::init_timeout)).
    pub blocking: Option<bool>,
    /// The CUDA thread-block cluster size of NCCL's kernels (sm_90 and later).
    pub cga_cluster_size: Option<u32>,
    /// The fewest thread blocks (channels) NCCL's kernels use.
    pub min_ctas: Option<u32>,
    /// The most thread blocks (channels) NCCL's kernels use.
    pub max_ctas: Option<u32>,
    /// The network module to use (`"IB"`, `"Socket"`).
    pub net_name: Option<String>,
    /// Whether a communicator split from this one shares its resources.
    pub split_share: Option<bool>,
    /// A name for the communicator in NCCL's logs and profiler (NCCL 2.27 and later).
    pub comm_name: Option<String>,
    /// How long creating a non-blocking communicator, and queueing each of its calls (NCCL
    /// answers `ncclInProgress` until it has), may take before it is aborted
    /// ([`NcclError::Timeout`](crate::NcclError::Timeout)); `None` waits as long as it takes. Not an NCCL field.
    pub init_timeout: Option<Duration>,
}

impl CommConfig {
    /// Sets `blocking` to `Some` value (see the field).
    #[must_use]
    pub fn blocking(mut self, blocking: bool) -> Self {
        self.blocking = Some(blocking);
        self
    }

    /// Sets `cga_cluster_size` to `Some` value (see the field).
    #[must_use]
    pub fn cga_cluster_size(mut self, cga_cluster_size: u32) -> Self {
        self.cga_cluster_size = Some(cga_cluster_size);
        self
    }

    /// Sets `min_ctas` to `Some` value (see the field).
    #[must_use]
    pub fn min_ctas(mut self, min_ctas: u32) -> Self {
        self.min_ctas = Some(min_ctas);
        self
    }

    /// Sets `max_ctas` to `Some` value (see the field).
    #[must_use]
    pub fn max_ctas(mut self, max_ctas: u32) -> Self {
        self.max_ctas = Some(max_ctas);
        self
    }

    /// Sets `net_name` to `Some` value (see the field).
    #[must_use]
    pub fn net_name(mut self, net_name: impl Into<String>) -> Self {
        self.net_name = Some(net_name.into());
        self
    }

    /// Sets `split_share` to `Some` value (see the field).
    #[must_use]
    pub fn split_share(mut self, split_share: bool) -> Self {
        self.split_share = Some(split_share);
        self
    }

    /// Sets `comm_name` to `Some` value (see the field).
    #[must_use]
    pub fn comm_name(mut self, comm_name: impl Into<String>) -> Self {
        self.comm_name = Some(comm_name.into());
        self
    }

    /// Sets `init_timeout` to `Some` value (see the field).
    #[must_use]
    pub fn init_timeout(mut self, init_timeout: Duration) -> Self {
        self.init_timeout = Some(init_timeout);
        self
    }
}

/// The C strings a config points into. NCCL keeps the `commName` pointer in the communicator
/// (not a copy): its profiler reads it while the communicator initialises, which for a
/// non-blocking one is after the call returned, and a split with no config of its own copies
/// the pointer into the child. So every communicator holds its config's strings for its life.
pub(crate) type ConfigStrings = Option<Arc<[CString]>>;

/// An `ncclConfig_t` and the C strings its pointers point into (kept alive beside it).
#[derive(Debug)]
pub(crate) struct RawConfig {
    pub(crate) raw: ncclConfig_t,
    strings: ConfigStrings,
}

impl RawConfig {
    /// A pointer for NCCL calls; valid while `self` is alive and not moved.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut ncclConfig_t {
        &mut self.raw
    }

    /// Adapts the config to the loaded NCCL: 2.14 to 2.16 refuse a `blocking` other than 0
    /// or 1 (`ncclInvalidArgument`), so an undefined one becomes their default, 1.
    pub(crate) fn fit(&mut self, loaded: NcclVersion) {
        if loaded < NcclVersion::new(2, 17, 0) && self.raw.blocking == NCCL_CONFIG_UNDEF_INT {
            self.raw.blocking = 1;
        }
    }

    /// The strings the config points into, for the communicator made with it to keep.
    pub(crate) fn strings(&self) -> ConfigStrings {
        self.strings.clone()
    }
}

impl CommConfig {
    /// The `ncclConfig_t` of these options: the header's size, magic and version, these fields,
    /// and `NCCL_CONFIG_UNDEF_INT`/null for the others.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a count past `i32::MAX` or a name with a NUL byte.
    pub(crate) fn to_raw(&self) -> Result<RawConfig> {
        let mut raw = config_initializer();
        let mut strings = Vec::new();
        let flag = |value: Option<bool>| value.map_or(NCCL_CONFIG_UNDEF_INT, i32::from);
        let count = |name: &str, value: Option<u32>| -> Result<i32> {
            value.map_or(Ok(NCCL_CONFIG_UNDEF_INT), |value| {
                i32::try_from(value).map_err(|_| {
                    Error::invalid_argument(format!("{name} of {value} is past i32::MAX"))
                })
            })
        };
        raw.blocking = flag(self.blocking);
        raw.splitShare = flag(self.split_share);
        raw.cgaClusterSize = count("cga_cluster_size", self.cga_cluster_size)?;
        raw.minCTAs = count("min_ctas", self.min_ctas)?;
        raw.maxCTAs = count("max_ctas", self.max_ctas)?;
        let mut c_string =
            |what: &str, value: &Option<String>| -> Result<*const std::ffi::c_char> {
                let Some(value) = value else {
                    return Ok(std::ptr::null());
                };
                let text = CString::new(value.as_str()).map_err(|_| {
                    Error::invalid_argument(format!("the {what} {value:?} holds a NUL byte"))
                })?;
                let pointer = text.as_ptr();
                // The CString's heap buffer does not move when the CString moves into the vector.
                strings.push(text);
                Ok(pointer)
            };
        raw.netName = c_string("network name", &self.net_name)?;
        raw.commName = c_string("communicator name", &self.comm_name)?;
        Ok(RawConfig {
            raw,
            // The CStrings' heap buffers stay where they are when the vector is moved.
            strings: (!strings.is_empty()).then(|| Arc::from(strings)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_initializer() {
        let raw = CommConfig::default().to_raw().unwrap().raw;
        let initializer = config_initializer();
        assert_eq!(raw.size, size_of::<ncclConfig_t>());
        assert_eq!(raw.magic, 0xcafe_beef);
        assert_eq!(raw.version, initializer.version);
        assert_eq!(raw.blocking, NCCL_CONFIG_UNDEF_INT);
        assert_eq!(raw.maxCTAs, NCCL_CONFIG_UNDEF_INT);
        assert!(raw.netName.is_null() && raw.commName.is_null());
    }

    #[test]
    fn fields_are_filled_and_strings_kept() {
        let config = CommConfig {
            blocking: Some(false),
            cga_cluster_size: Some(2),
            min_ctas: Some(4),
            max_ctas: Some(16),
            net_name: Some("Socket".into()),
            split_share: Some(true),
            comm_name: Some("ranks".into()),
            init_timeout: None,
        };
        let raw = config.to_raw().unwrap();
        assert_eq!(
            (
                raw.raw.blocking,
                raw.raw.cgaClusterSize,
                raw.raw.minCTAs,
                raw.raw.maxCTAs
            ),
            (0, 2, 4, 16)
        );
        assert_eq!(raw.raw.splitShare, 1);
        // SAFETY: the pointers point into the CStrings `raw` keeps.
        let net = unsafe { std::ffi::CStr::from_ptr(raw.raw.netName) };
        assert_eq!(net.to_str().unwrap(), "Socket");
        // SAFETY: as above.
        let name = unsafe { std::ffi::CStr::from_ptr(raw.raw.commName) };
        assert_eq!(name.to_str().unwrap(), "ranks");
    }

    #[test]
    fn an_undefined_blocking_is_blocking_for_nccl_before_2_17() {
        let mut old = CommConfig::default().to_raw().unwrap();
        old.fit(NcclVersion::new(2, 16, 2));
        assert_eq!(old.raw.blocking, 1);
        let mut chosen = CommConfig {
            blocking: Some(false),
            ..CommConfig::default()
        }
        .to_raw()
        .unwrap();
        chosen.fit(NcclVersion::new(2, 14, 3));
        assert_eq!(chosen.raw.blocking, 0);
        let mut new = CommConfig::default().to_raw().unwrap();
        new.fit(NcclVersion::new(2, 17, 1));
        assert_eq!(new.raw.blocking, NCCL_CONFIG_UNDEF_INT);
    }

    #[test]
    fn the_strings_outlive_the_config_for_the_communicator() {
        let config = CommConfig {
            comm_name: Some("kept".into()),
            ..CommConfig::default()
        };
        let raw = config.to_raw().unwrap();
        let name = raw.raw.commName;
        let kept = raw.strings();
        drop(raw);
        assert!(kept.is_some());
        // SAFETY: `kept` holds the CString `name` points into.
        let text = unsafe { std::ffi::CStr::from_ptr(name) };
        assert_eq!(text.to_str().unwrap(), "kept");
        assert!(CommConfig::default().to_raw().unwrap().strings().is_none());
    }

    #[test]
    fn bad_fields_are_refused() {
        let too_many = CommConfig {
            max_ctas: Some(u32::MAX),
            ..CommConfig::default()
        };
        assert!(matches!(too_many.to_raw(), Err(Error::InvalidArgument(_))));
        let nul = CommConfig {
            net_name: Some("a\0b".into()),
            ..CommConfig::default()
        };
        assert!(matches!(nul.to_raw(), Err(Error::InvalidArgument(_))));
    }
}
