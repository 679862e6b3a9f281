//! Green contexts made by another library (PyTorch, a C++ engine, a runtime's green context),
//! and their streams, wrapped without ownership: the crate launches into them, makes its own
//! streams on them and never destroys them.

use std::any::Any;
use std::sync::Arc;

use crate::context::{Context, GreenOwner};
use crate::device::Device;
use crate::error::{Error, Result, cu};
use crate::stream::Stream;
use cuda_sys::{CUcontext, CUdevResource, CUdevResourceType, CUdevice, CUgreenCtx, CUstream};

impl Context {
    /// Wraps a green context another library made, without owning it: the last handle (and
    /// the streams, events and buffers made on it, which keep one) lets go of the wrapper and
    /// destroys nothing.
    ///
    /// It makes three kinds of calls, none of which changes the green context: the conversion
    /// to its `CUcontext` (`cuCtxFromGreenCtx`), its SM count (`cuGreenCtxGetDevResource`),
    /// and its device, read with the context current for a moment (the thread's current
    /// context is restored).
    ///
    #[doc = cuda_sys::api_doc!(cuCtxFromGreenCtx)]
    #[doc = cuda_sys::api_doc!(cuGreenCtxGetDevResource)]
    /// # Safety
    ///
    /// `green` must be a live green context, and it must stay alive (the other library must
    /// not destroy it) for as long as the returned context or anything made from it lives:
    /// its clones, the streams and events created on it, buffers whose stream is one of them,
    /// [`DeviceResources`](super::DeviceResources) read from it. Prefer
    /// [`from_raw_green_with_owner`](Self::from_raw_green_with_owner), which keeps the other
    /// library's handle alive exactly that long.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a null handle or a green context of another device than
    /// `device`; the driver's error.
    #[doc(alias = "cuCtxFromGreenCtx", alias = "cuGreenCtxGetDevResource")]
    pub unsafe fn from_raw_green(green: CUgreenCtx, device: &Device) -> Result<Context> {
        // SAFETY: the caller's promise, passed on.
        unsafe { wrap(green, device, None) }
    }

    /// Wraps a green context another library made, without owning it, and keeps `owner` (that
    /// library's handle to it, such as a struct whose `Drop` destroys it) alive for as long as
    /// the wrapper or anything made from it lives. The crate never destroys the green
    /// context; the last handle drops `owner`, which may destroy it then.
    ///
    #[doc = cuda_sys::api_doc!(cuCtxFromGreenCtx)]
    /// # Safety
    ///
    /// `green` must be a live green context for as long as `owner` lives.
    ///
    /// # Errors
    ///
    /// As [`from_raw_green`](Self::from_raw_green); on an error `owner` is dropped.
    #[doc(alias = "cuCtxFromGreenCtx")]
    pub unsafe fn from_raw_green_with_owner(
        green: CUgreenCtx,
        device: &Device,
        owner: Arc<dyn Any + Send + Sync>,
    ) -> Result<Context> {
        // SAFETY: the caller's promise, passed on.
        unsafe { wrap(green, device, Some(owner)) }
    }
}

impl Stream {
    /// Wraps a stream of a green context, both made by another library, without owning either:
    /// the green context is the stream's own (`cuStreamGetGreenCtx`), wrapped as
    /// [`Context::from_raw_green`] wraps it. For a library handed only a stream.
    ///
    #[doc = cuda_sys::api_doc!(cuStreamGetGreenCtx)]
    /// # Safety
    ///
    /// `raw` must be a live stream of a green context, and the stream and its green context
    /// must stay alive while the returned stream, its clones and the buffers whose stream it
    /// is live (the green context also while the context handle it holds is used elsewhere).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a null or special handle (`CU_STREAM_LEGACY`,
    /// `CU_STREAM_PER_THREAD`, which name no stream of their own) or a stream of no green
    /// context; as [`Context::from_raw_green`].
    #[doc(alias = "cuStreamGetGreenCtx")]
    pub unsafe fn from_raw_green(raw: CUstream, device: &Device) -> Result<Stream> {
        if raw.is_null()
            || raw == cuda_sys::CU_STREAM_LEGACY
            || raw == cuda_sys::CU_STREAM_PER_THREAD
        {
            return Err(Error::invalid_argument(
                "a null or special stream handle names no green context's stream",
            ));
        }
        let mut green: CUgreenCtx = std::ptr::null_mut();
        // SAFETY: a live stream (the caller's promise) and a valid out-pointer.
        unsafe { cu!(device.driver(), cuStreamGetGreenCtx(raw, &mut green)) }?;
        if green.is_null() {
            return Err(Error::invalid_argument(
                "the stream belongs to no green context (wrap it with Stream::from_raw)",
            ));
        }
        // SAFETY: the caller's promise covers the stream's green context.
        let context = unsafe { wrap(green, device, None) }?;
        // SAFETY: `raw` is a live stream of `context`, alive as long as the wrapper (promised).
        Ok(unsafe { Stream::from_raw(raw, &context) })
    }
}

/// The wrapper of [`Context::from_raw_green`], keeping `owner`.
///
/// # Safety
///
/// `green` is a live green context while the result (or `owner`, when given) lives.
unsafe fn wrap(
    green: CUgreenCtx,
    device: &Device,
    owner: Option<Arc<dyn Any + Send + Sync>>,
) -> Result<Context> {
    if green.is_null() {
        return Err(Error::invalid_argument(
            "a null green context cannot be wrapped",
        ));
    }
    let driver = device.driver();
    let mut raw: CUcontext = std::ptr::null_mut();
    // SAFETY: a live green context (the caller's promise) and a valid out-pointer.
    unsafe { cu!(driver, cuCtxFromGreenCtx(&mut raw, green)) }?;
    let mut sm = CUdevResource::default();
    let kind = CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM;
    // SAFETY: as above; `sm` is a valid out-pointer for one resource.
    unsafe { cu!(driver, cuGreenCtxGetDevResource(green, &mut sm, kind)) }?;
    // SAFETY: an SM resource (the type asked) stores its fields in the `sm` variant.
    let sm_count = unsafe { sm.__bindgen_anon_1.sm.smCount };
    let context = Context::wrap_green(device, raw, green, sm_count, GreenOwner::Foreign(owner));
    let actual = {
        let _current = context.scoped()?;
        let mut actual: CUdevice = 0;
        // SAFETY: the green context is current on this thread; valid out-pointer.
        unsafe { cu!(driver, cuCtxGetDevice(&mut actual)) }?;
        actual
    };
    if actual != device.as_raw() {
        return Err(Error::invalid_argument(format!(
            "the green context belongs to device {actual}, not device {}",
            device.ordinal()
        )));
    }
    Ok(context)
}
