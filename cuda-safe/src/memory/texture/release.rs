//! The one release of the wing's objects (texture objects, surface objects, mipmapped arrays):
//! wait for the stream their users are ordered on, then destroy them in its context; when that
//! fails, what they read is leaked with them.

use std::sync::Arc;

use crate::error::{Result, cu};
use crate::handle::Release;
use crate::stream::Stream;
use cuda_sys::{CUmipmappedArray, CUsurfObject, CUtexObject, Driver};

/// A kind of object of the wing: its raw handle and the call that destroys it.
///
/// # Safety
///
/// `Raw` is a handle the driver accepts from any thread, so that a [`StreamObject`] of the kind
/// may be `Send` and `Sync`.
pub(super) unsafe trait Kind {
    /// The raw handle.
    type Raw: Copy;

    /// What the object is, for the log line of a failed release on drop.
    const WHAT: &'static str;

    /// The driver's destroy call for `raw`.
    ///
    /// # Safety
    ///
    /// `raw` came from the kind's create call and is destroyed once, with its context current,
    /// after the work of its users was done; what it reads is still alive.
    unsafe fn destroy(driver: &Driver, raw: Self::Raw) -> Result<()>;
}

/// Declares each kind: `Name: raw handle type = "what it is", destroy call;`.
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident: $raw:ty = $what:literal, $destroy:ident;)+) => {$(
        $(#[$doc])*
        pub(super) enum $kind {}

        // SAFETY: each kind below is a handle the driver accepts from any thread (texture and
        // surface objects are 64-bit values; a `CUmipmappedArray` may be used from any thread).
        unsafe impl Kind for $kind {
            type Raw = $raw;
            const WHAT: &'static str = $what;

            unsafe fn destroy(driver: &Driver, raw: $raw) -> Result<()> {
                // SAFETY: the caller's promise (the `Kind` contract).
                unsafe { cu!(driver, $destroy(raw)) }
            }
        }
    )+};
}

kinds! {
    /// A [`TextureObject`](super::TextureObject)'s handle.
    Texture: CUtexObject = "texture object", cuTexObjectDestroy;
    /// A [`SurfaceObject`](super::SurfaceObject)'s handle.
    Surface: CUsurfObject = "surface object", cuSurfObjectDestroy;
    /// A [`MipmappedArray`](super::MipmappedArray)'s handle, destroyed once every level and
    /// texture made from it (which keep it) is gone.
    Mipmap: CUmipmappedArray = "mipmapped array", cuMipmappedArrayDestroy;
}

/// An object of kind `K`, owned (through [`Owned`](crate::handle::Owned)): its handle, the
/// stream its users are ordered on, and what it reads, which outlives it.
pub(super) struct StreamObject<K: Kind> {
    /// The raw handle.
    pub(super) raw: K::Raw,
    /// The stream its users (launches, copies) are ordered on, which its release waits for.
    pub(super) stream: Stream,
    /// What it reads (a share of the resource's handle), released after it; none for a
    /// mipmapped array, which what reads it keeps instead.
    keep: Option<Arc<dyn Send + Sync>>,
}

impl<K: Kind> StreamObject<K> {
    /// The object `raw`, ordered on `stream`, reading what `keep` holds.
    pub(super) fn new(raw: K::Raw, stream: &Stream, keep: Option<Arc<dyn Send + Sync>>) -> Self {
        Self {
            raw,
            stream: stream.clone(),
            keep,
        }
    }
}

impl<K: Kind> Release for StreamObject<K> {
    const WHAT: &'static str = K::WHAT;

    fn release(&mut self) -> Result<()> {
        let destroyed = self.stream.drain().and_then(|()| {
            let _current = self.stream.context().scoped()?;
            // SAFETY: made by the kind's create call, destroyed once (by `Owned`), after its
            // users' stream drained, in its context; what it reads is still alive (held until
            // after this).
            unsafe { K::destroy(self.stream.driver(), self.raw) }
        });
        if destroyed.is_err()
            && let Some(keep) = &self.keep
        {
            // The object may still be in use (its stream did not drain) or still exist: what
            // it reads must outlive it, so that is leaked with it.
            std::mem::forget(Arc::clone(keep));
        }
        destroyed
    }
}

// SAFETY: the raw handle is one the driver accepts from any thread (the `Kind` contract) and is
// never changed after creation; the stream and what is kept are `Send + Sync`.
unsafe impl<K: Kind> Send for StreamObject<K> {}
// SAFETY: as above.
unsafe impl<K: Kind> Sync for StreamObject<K> {}
