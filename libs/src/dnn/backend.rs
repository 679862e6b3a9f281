//! [`BackendDescriptor`]: one cuDNN backend descriptor, owned (destroyed when dropped), with
//! typed attribute setters and getters.

use std::ffi::c_void;
use std::fmt;

use crate::dnn::error::cudnn;
use cuda_safe::Result;
use cudnn_sys::{
    Cudnn, cudnnBackendAttributeName_t as Name, cudnnBackendAttributeType_t as Type,
    cudnnBackendDescriptor_t, cudnnBackendDescriptorType_t as Kind, cudnnBackendHeurMode_t,
    cudnnBackendNormFwdPhase_t, cudnnBackendNormMode_t, cudnnConvolutionMode_t, cudnnDataType_t,
    cudnnHandle_t, cudnnNanPropagation_t, cudnnPointwiseMode_t, cudnnReduceTensorOp_t,
    cudnnRngDistribution_t,
};

mod sealed {
    pub trait Value {}
}

/// A value an attribute holds, with the attribute type cuDNN reads it as (sealed: each type's
/// layout is the C type cuDNN reads for its attribute type).
pub trait AttributeValue: sealed::Value + Copy {
    /// cuDNN's name for the type (`CUDNN_TYPE_INT64`).
    const TYPE: Type;
}

/// A value [`BackendDescriptor::get`] can read back: one every bit pattern cuDNN may write is
/// valid for (not `bool`, whose bytes other than 0 and 1 Rust does not allow).
pub trait ReadableValue: AttributeValue {}

macro_rules! values {
    ($($rust:ty => $c:ident),* $(,)?) => {$(
        impl sealed::Value for $rust {}
        impl AttributeValue for $rust {
            const TYPE: Type = Type::$c;
        }
        impl ReadableValue for $rust {}
    )*};
}

impl sealed::Value for bool {}
impl AttributeValue for bool {
    const TYPE: Type = Type::CUDNN_TYPE_BOOLEAN;
}

values! {
    i64 => CUDNN_TYPE_INT64,
    i32 => CUDNN_TYPE_INT32,
    f32 => CUDNN_TYPE_FLOAT,
    f64 => CUDNN_TYPE_DOUBLE,
    cudnnDataType_t => CUDNN_TYPE_DATA_TYPE,
    cudnnPointwiseMode_t => CUDNN_TYPE_POINTWISE_MODE,
    cudnnConvolutionMode_t => CUDNN_TYPE_CONVOLUTION_MODE,
    cudnnBackendHeurMode_t => CUDNN_TYPE_HEUR_MODE,
    cudnnReduceTensorOp_t => CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
    cudnnNanPropagation_t => CUDNN_TYPE_NAN_PROPOGATION,
    cudnnRngDistribution_t => CUDNN_TYPE_RNG_DISTRIBUTION,
    cudnnBackendNormMode_t => CUDNN_TYPE_NORM_MODE,
    cudnnBackendNormFwdPhase_t => CUDNN_TYPE_NORM_FWD_PHASE,
}

/// One cuDNN backend descriptor (`cudnnBackendDescriptor_t`) of a kind
/// (`CUDNN_BACKEND_TENSOR_DESCRIPTOR`, `CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR`, ...), made by
/// [`new`](Self::new) and destroyed when dropped. Attributes are set with typed setters (the
/// attribute type follows the Rust type), then [`finalize`](Self::finalize) freezes it.
/// [`Graph`](super::Graph) builds every descriptor a plan needs; this type is for graphs past
/// what the builder knows.
///
/// `Send`, not `Sync`: a descriptor may move between threads, not be set from two at once.
///
#[doc = cudnn_sys::api_doc!(cudnnBackendCreateDescriptor)]
#[must_use = "a backend descriptor is destroyed when dropped"]
pub struct BackendDescriptor {
    raw: cudnnBackendDescriptor_t,
    kind: Kind,
    cudnn: &'static Cudnn,
}

// SAFETY: a backend descriptor is host memory of cuDNN's, usable from any thread one thread at
// a time; `&mut self` setters and the lack of `Sync` keep it so.
unsafe impl Send for BackendDescriptor {}

impl BackendDescriptor {
    /// A new, empty descriptor of `kind`.
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendCreateDescriptor)]
    /// # Errors
    ///
    /// [`Error::Load`](cuda_safe::Error::Load) when cuDNN cannot be loaded; cuDNN's error.
    #[doc(alias = "cudnnBackendCreateDescriptor")]
    pub fn new(kind: Kind) -> Result<Self> {
        let cudnn = cudnn_sys::cudnn()?;
        let mut raw: cudnnBackendDescriptor_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        unsafe { cudnn!(cudnn, cudnnBackendCreateDescriptor(kind, &mut raw)) }?;
        Ok(Self { raw, kind, cudnn })
    }

    /// The descriptor's kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The raw descriptor, valid while this one lives.
    pub fn as_raw(&self) -> cudnnBackendDescriptor_t {
        self.raw
    }

    /// Sets attribute `name` to `values` (one or more of one type).
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendSetAttribute)]
    /// # Errors
    ///
    /// cuDNN's error (an attribute this kind lacks, a type it does not take, a finalized
    /// descriptor).
    #[doc(alias = "cudnnBackendSetAttribute")]
    pub fn set<T: AttributeValue>(&mut self, name: Name, values: &[T]) -> Result<()> {
        // SAFETY: `values` holds `len` values of the C type `T::TYPE` names (the sealed trait's
        // promise); cuDNN copies them.
        unsafe { self.set_raw(name, T::TYPE, values.len(), values.as_ptr().cast()) }
    }

    /// Sets attribute `name` to other descriptors (`CUDNN_TYPE_BACKEND_DESCRIPTOR`).
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendSetAttribute)]
    /// # Errors
    ///
    /// As [`set`](Self::set).
    ///
    /// # Safety
    ///
    /// cuDNN may keep references to `values` rather than copies: each must stay alive (not be
    /// dropped) as long as this descriptor, and whatever is made from it, is used.
    #[doc(alias = "cudnnBackendSetAttribute")]
    pub unsafe fn set_descriptors(
        &mut self,
        name: Name,
        values: &[&BackendDescriptor],
    ) -> Result<()> {
        let raw: Vec<cudnnBackendDescriptor_t> = values.iter().map(|each| each.raw).collect();
        let kind = Type::CUDNN_TYPE_BACKEND_DESCRIPTOR;
        // SAFETY: `raw` holds live descriptors; the caller keeps them alive as long as cuDNN
        // may read them through this one.
        unsafe { self.set_raw(name, kind, raw.len(), raw.as_ptr().cast()) }
    }

    /// Sets a `CUDNN_TYPE_HANDLE` attribute.
    pub(crate) fn set_handle(&mut self, name: Name, handle: cudnnHandle_t) -> Result<()> {
        let kind = Type::CUDNN_TYPE_HANDLE;
        // SAFETY: one live handle.
        unsafe { self.set_raw(name, kind, 1, (&raw const handle).cast()) }
    }

    /// Sets a `CUDNN_TYPE_VOID_PTR` attribute (device addresses of a variant pack).
    pub(crate) fn set_pointers(&mut self, name: Name, pointers: &[*mut c_void]) -> Result<()> {
        let kind = Type::CUDNN_TYPE_VOID_PTR;
        // SAFETY: `pointers` holds `len` pointers; cuDNN copies them.
        unsafe { self.set_raw(name, kind, pointers.len(), pointers.as_ptr().cast()) }
    }

    /// # Safety
    ///
    /// `values` points to `count` values of the C type `kind` names.
    unsafe fn set_raw(
        &mut self,
        name: Name,
        kind: Type,
        count: usize,
        values: *const c_void,
    ) -> Result<()> {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        // SAFETY: a live descriptor; the caller's promise on `values`.
        unsafe {
            cudnn!(
                self.cudnn,
                cudnnBackendSetAttribute(self.raw, name, kind, count, values)
            )
        }
    }

    /// Finalizes the descriptor: cuDNN checks its attributes, and it can be used.
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendFinalize)]
    /// # Errors
    ///
    /// cuDNN's error (a missing or inconsistent attribute, an engine that cannot run here).
    #[doc(alias = "cudnnBackendFinalize")]
    pub fn finalize(&mut self) -> Result<()> {
        // SAFETY: a live descriptor.
        unsafe { cudnn!(self.cudnn, cudnnBackendFinalize(self.raw)) }
    }

    /// Reads attribute `name` (up to `max` values of type `T`).
    ///
    #[doc = cudnn_sys::api_doc!(cudnnBackendGetAttribute)]
    /// # Errors
    ///
    /// cuDNN's error.
    #[doc(alias = "cudnnBackendGetAttribute")]
    pub fn get<T: ReadableValue + Default>(&self, name: Name, max: usize) -> Result<Vec<T>> {
        let mut values = vec![T::default(); max];
        let mut count = 0i64;
        let requested = i64::try_from(max).unwrap_or(i64::MAX);
        // SAFETY: a live descriptor; `values` has room for `max` values of `T::TYPE`'s C type.
        unsafe {
            cudnn!(
                self.cudnn,
                cudnnBackendGetAttribute(
                    self.raw,
                    name,
                    T::TYPE,
                    requested,
                    &mut count,
                    values.as_mut_ptr().cast()
                )
            )
        }?;
        values.truncate(usize::try_from(count).unwrap_or(0).min(max));
        Ok(values)
    }

    /// How many values of type `kind` attribute `name` holds.
    pub(crate) fn count(&self, name: Name, kind: Type) -> Result<usize> {
        let mut count = 0i64;
        // SAFETY: a live descriptor; asking for 0 elements writes none.
        unsafe {
            cudnn!(
                self.cudnn,
                cudnnBackendGetAttribute(self.raw, name, kind, 0, &mut count, std::ptr::null_mut())
            )
        }?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// Reads a descriptor-typed attribute into `count` new descriptors of `kind`.
    pub(crate) fn get_descriptors(
        &self,
        name: Name,
        kind: Kind,
        count: usize,
    ) -> Result<Vec<BackendDescriptor>> {
        let made: Vec<BackendDescriptor> = (0..count)
            .map(|_| BackendDescriptor::new(kind))
            .collect::<Result<_>>()?;
        let mut raw: Vec<cudnnBackendDescriptor_t> = made.iter().map(|each| each.raw).collect();
        let mut got = 0i64;
        let requested = i64::try_from(count).unwrap_or(i64::MAX);
        // SAFETY: a live descriptor; `raw` holds `count` live descriptors of `kind`, which
        // cuDNN fills.
        unsafe {
            cudnn!(
                self.cudnn,
                cudnnBackendGetAttribute(
                    self.raw,
                    name,
                    Type::CUDNN_TYPE_BACKEND_DESCRIPTOR,
                    requested,
                    &mut got,
                    raw.as_mut_ptr().cast()
                )
            )
        }?;
        let mut made = made;
        made.truncate(usize::try_from(got).unwrap_or(0).min(count));
        Ok(made)
    }
}

impl Drop for BackendDescriptor {
    fn drop(&mut self) {
        // SAFETY: made by cudnnBackendCreateDescriptor, destroyed once.
        if let Err(error) = unsafe { cudnn!(self.cudnn, cudnnBackendDestroyDescriptor(self.raw)) } {
            log::error!("cuda-safe: destroying a cuDNN backend descriptor failed ({error})");
        }
    }
}

impl fmt::Debug for BackendDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendDescriptor")
            .field("kind", &self.kind.0)
            .field("raw", &self.raw)
            .finish()
    }
}
