//! Workqueue configurations (CUDA 13.1 drivers, `cuda-13` ABI): how many stream-ordered
//! workloads a green context expects to run at once, and whether it shares the device's
//! workqueues with other contexts.

use std::fmt;

use crate::abi;
use crate::error::{Error, Result};
use cuda_sys::CUdevResource;

/// A workqueue configuration for a green context (CUDA 13.1 drivers on): read from a device or
/// context ([`DeviceResources::workqueue_config`](super::DeviceResources::workqueue_config)),
/// adjusted, and given to
/// [`GreenContextOptions::workqueue`](super::GreenContextOptions::workqueue).
#[derive(Clone, Copy)]
pub struct WorkqueueConfig {
    raw: CUdevResource,
}

/// Whether a green context's work shares the device's workqueues (`CUdevWorkqueueConfigScope`;
/// a newer driver's value is kept as its number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkqueueScope(pub u32);

impl WorkqueueScope {
    /// `CU_WORKQUEUE_SCOPE_DEVICE_CTX`: every context shares all of the device's workqueues
    /// (the driver's default).
    pub const DEVICE_CONTEXT: Self = Self(0);
    /// `CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED`: where it can, the driver gives this green
    /// context workqueues no other balanced green context uses, so their submissions do not
    /// queue behind each other.
    pub const GREEN_CONTEXT_BALANCED: Self = Self(1);
}

impl WorkqueueConfig {
    /// A configuration read from the driver (`raw` is a workqueue configuration resource).
    pub(super) fn from_raw(raw: CUdevResource) -> Self {
        Self {
            raw: crate::abi::unlinked(raw),
        }
    }

    /// The raw `CUdevResource`.
    pub fn as_raw(&self) -> &CUdevResource {
        &self.raw
    }

    /// The expected maximum number of stream-ordered workloads running at once
    /// (`wqConcurrencyLimit`; read from a device, the driver's cap, which
    /// `CUDA_DEVICE_MAX_CONNECTIONS` sets).
    pub fn concurrency_limit(&self) -> u32 {
        abi::workqueue_fields(&self.raw).map_or(0, |(limit, _)| limit)
    }

    /// Whether the workqueues are shared (`sharingScope`).
    pub fn sharing_scope(&self) -> WorkqueueScope {
        abi::workqueue_fields(&self.raw).map_or(WorkqueueScope::DEVICE_CONTEXT, |(_, scope)| {
            WorkqueueScope(scope)
        })
    }

    /// This configuration expecting at most `limit` stream-ordered workloads at once. A limit
    /// above the driver's cap is accepted (the driver then no longer promises that
    /// submissions do not overlap).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a limit of 0.
    pub fn with_concurrency_limit(self, limit: u32) -> Result<Self> {
        if limit == 0 {
            return Err(Error::invalid_argument(
                "a workqueue concurrency limit must be at least 1",
            ));
        }
        self.with_fields(limit, self.sharing_scope())
    }

    /// This configuration with the sharing scope `scope` (a value this crate does not name is
    /// passed on: the driver refuses one it does not know when the green context is made).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] under the `cuda-12` ABI (which has no workqueue configurations
    /// to begin with).
    pub fn with_sharing_scope(self, scope: WorkqueueScope) -> Result<Self> {
        self.with_fields(self.concurrency_limit(), scope)
    }

    fn with_fields(mut self, limit: u32, scope: WorkqueueScope) -> Result<Self> {
        abi::set_workqueue_fields(&mut self.raw, limit, scope.0)?;
        Ok(self)
    }
}

impl fmt::Debug for WorkqueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueConfig")
            .field("concurrency_limit", &self.concurrency_limit())
            .field("sharing_scope", &self.sharing_scope())
            .finish()
    }
}

// SAFETY: the raw resource is plain data describing workqueues; no pointer in it is
// dereferenced by this crate (the `nextResource` link is cleared when it is made).
unsafe impl Send for WorkqueueConfig {}
// SAFETY: as above.
unsafe impl Sync for WorkqueueConfig {}

#[cfg(test)]
mod tests {
    use super::WorkqueueScope;

    /// The scopes are the header's values (the CUDA 13 headers; the CUDA 12 ones have none).
    #[test]
    fn scopes_match_the_header() {
        cuda_sys::if_abi13! {
            use cuda_sys::CUdevWorkqueueConfigScope as Scope;
            assert_eq!(
                WorkqueueScope::DEVICE_CONTEXT.0,
                Scope::CU_WORKQUEUE_SCOPE_DEVICE_CTX.0
            );
            assert_eq!(
                WorkqueueScope::GREEN_CONTEXT_BALANCED.0,
                Scope::CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED.0
            );
        }
        assert_ne!(
            WorkqueueScope::DEVICE_CONTEXT,
            WorkqueueScope::GREEN_CONTEXT_BALANCED
        );
    }
}
