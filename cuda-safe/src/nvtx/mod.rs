//! NVTX annotations for Nsight Systems and Nsight Compute: ranges ([`range`], pushed and popped
//! on one thread; [`range_start`], started and ended anywhere), marks ([`mark`]), domains
//! ([`Domain`]) with their registered strings and named categories, colours, categories and
//! payloads ([`EventAttributes`]), all as RAII guards.
//!
//! ```
//! use cuda_safe::nvtx::{self, Domain, EventAttributes};
//!
//! let _step = nvtx::range("step"); // popped when `_step` drops
//! nvtx::mark("checkpoint");
//! let solver = Domain::new("solver");
//! let name = solver.register_string("iterate");
//! {
//!     let _iteration = solver.range_with(&EventAttributes::new(name).color(0xff76b900));
//! }
//! ```
//!
//! # Design: the injection protocol, not `libnvToolsExt`
//!
//! NVTX v3 is header-only: a C program carries the NVTX client in its own code, and a tool
//! attaches by setting `NVTX_INJECTION64_PATH` to its injection library before the program
//! starts (Nsight Systems and Nsight Compute do). On the first NVTX call the client opens that
//! library, calls its `InitializeInjectionNvtx2` with the client's `nvtxGetExportTable`, and
//! the tool fills the client's tables of function slots (module `NVTX_CB_MODULE_CORE` for the
//! default domain's calls, `NVTX_CB_MODULE_CORE2` for domains). This module is such a client,
//! written in Rust from the protocol of NVIDIA's public headers (`nvtxDetail/nvtxInit.h`,
//! `nvtxImpl.h`, `nvtxTypes.h`): no NVTX header, no C compiler, and no library of NVIDIA's to
//! find. The alternative, opening the NVTX v2 library `libnvToolsExt.so.1`, would find nothing
//! on CUDA 12.9 and 13 machines, which no longer ship it. The tool's library is opened through
//! `cuda-loader` from the variable's path only (never searched for; a relative path with a
//! folder is refused, as every library override is) and kept loaded for the process.
//!
//! # Cost
//!
//! Without a tool (the variable unset, or its library missing or refusing to attach, which
//! are logged once through `log`), every call is one relaxed atomic load and a branch: no string is copied, nothing allocates, and a guard's drop tests a field. The first
//! call of the process reads the variable, so it must be set before the process makes it (a
//! profiler sets it before it starts the program).
//!
//! With a tool attached, each call copies its name into a NUL-terminated buffer on the stack
//! when shorter than 256 bytes, and allocates one for a longer name; [`Domain::register_string`]
//! saves even that (the tool keeps the text, the call passes a handle). A NUL inside a name
//! ends it there. Then the call is the tool's function: that is what the tool costs.
//!
//! The tool is loaded inside the first NVTX call, under a `std::sync::Once`: a tool whose
//! `InitializeInjectionNvtx2` called back into this module's API would wait for itself (no
//! known tool does; NVTX's C client spins likewise).
//!
//! Ranges pushed by [`range`] belong to the thread that pushed them (NVTX keeps one stack per
//! thread), so a [`Range`] is neither `Send` nor `Sync`; a [`StartedRange`] may end on any
//! thread.

mod domain;
mod inject;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;

pub use domain::{Domain, RegisteredString};

use inject::{
    COLOR_ARGB, Handle, MESSAGE_ASCII, MESSAGE_REGISTERED, NVTX_VERSION, RawAttributes, RawPayload,
    Tool,
};

/// Whether a tool (Nsight Systems, Nsight Compute) is attached, so that NVTX calls reach it.
///
/// The first NVTX call of the process (this one, or any other) looks for the tool named by
/// `NVTX_INJECTION64_PATH`; later calls cost one relaxed atomic load.
pub fn is_enabled() -> bool {
    inject::tool().is_some()
}

/// The text of an event: a name copied at each call, or a string registered with a domain.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Message<'a> {
    /// Text, copied into a C string at each call when a tool is attached.
    Text(&'a str),
    /// A string registered once with [`Domain::register_string`]; use it with that domain.
    Registered(RegisteredString<'a>),
}

impl<'a> From<&'a str> for Message<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(text)
    }
}

impl<'a> From<RegisteredString<'a>> for Message<'a> {
    fn from(registered: RegisteredString<'a>) -> Self {
        Self::Registered(registered)
    }
}

/// A number attached to an event, shown by the tool with it (`nvtxEventAttributes_t`'s
/// payload).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Payload {
    /// `NVTX_PAYLOAD_TYPE_UNSIGNED_INT64`.
    U64(u64),
    /// `NVTX_PAYLOAD_TYPE_INT64`.
    I64(i64),
    /// `NVTX_PAYLOAD_TYPE_DOUBLE`.
    F64(f64),
    /// `NVTX_PAYLOAD_TYPE_UNSIGNED_INT32`.
    U32(u32),
    /// `NVTX_PAYLOAD_TYPE_INT32`.
    I32(i32),
    /// `NVTX_PAYLOAD_TYPE_FLOAT`.
    F32(f32),
}

/// What an event carries besides its message: colour, category and payload
/// (`nvtxEventAttributes_t`). Build it with [`new`](Self::new) and the setters, or with its
/// fields.
///
/// ```
/// use cuda_safe::nvtx::{EventAttributes, Payload};
///
/// let attributes = EventAttributes::new("copy")
///     .color(0xff00_80ff)
///     .category(2)
///     .payload(Payload::U64(1 << 20));
/// assert_eq!(attributes.color, Some(0xff00_80ff));
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct EventAttributes<'a> {
    /// The event's text.
    pub message: Message<'a>,
    /// Its colour as ARGB (`0xffrrggbb`: alpha first), or the tool's choice.
    pub color: Option<u32>,
    /// Its category (named with [`name_category`] or [`Domain::name_category`]), or none (0).
    pub category: Option<u32>,
    /// A number shown with it.
    pub payload: Option<Payload>,
}

crate::setters::setters! {
    impl EventAttributes<'a> {
        message: into Message<'a>,
    }
}

impl<'a> EventAttributes<'a> {
    /// An event with this text (a `&str` or a [`RegisteredString`]), no colour, category or
    /// payload.
    pub fn new(message: impl Into<Message<'a>>) -> Self {
        Self {
            message: message.into(),
            color: None,
            category: None,
            payload: None,
        }
    }

    /// With this ARGB colour (`0xffrrggbb`).
    #[must_use]
    pub fn color(mut self, argb: u32) -> Self {
        self.color = Some(argb);
        self
    }

    /// In this category.
    #[must_use]
    pub fn category(mut self, category: u32) -> Self {
        self.category = Some(category);
        self
    }

    /// With this payload.
    #[must_use]
    pub fn payload(mut self, payload: Payload) -> Self {
        self.payload = Some(payload);
        self
    }

    /// Calls `f` with these attributes in NVTX's layout, for calls in `domain` (whose
    /// registered strings a registered message must be).
    fn with_raw<R>(&self, domain: Handle, f: impl FnOnce(*const RawAttributes) -> R) -> R {
        let (payload_type, payload) = match self.payload {
            None => (0, RawPayload { u64: 0 }),
            Some(Payload::U64(value)) => (1, RawPayload { u64: value }),
            Some(Payload::I64(value)) => (2, RawPayload { i64: value }),
            Some(Payload::F64(value)) => (3, RawPayload { f64: value }),
            Some(Payload::U32(value)) => (4, RawPayload { u32: value }),
            Some(Payload::I32(value)) => (5, RawPayload { i32: value }),
            Some(Payload::F32(value)) => (6, RawPayload { f32: value }),
        };
        let raw = |message_type, message| RawAttributes {
            version: NVTX_VERSION,
            size: size_of::<RawAttributes>() as u16,
            category: self.category.unwrap_or(0),
            color_type: if self.color.is_some() { COLOR_ARGB } else { 0 },
            color: self.color.unwrap_or(0),
            payload_type,
            reserved0: 0,
            payload,
            message_type,
            message,
        };
        match self.message {
            Message::Text(text) => {
                inject::with_c_str(text, |text| f(&raw(MESSAGE_ASCII, text.cast())))
            }
            Message::Registered(registered) if registered.domain == domain => {
                f(&raw(MESSAGE_REGISTERED, registered.handle.0.cast_const()))
            }
            Message::Registered(_) => {
                log::warn!(
                    "cuda-safe: an NVTX registered string was used outside the domain that \
                     registered it; the event is sent with no message"
                );
                f(&raw(0, std::ptr::null()))
            }
        }
    }
}

/// Where a range was pushed or started: the default domain or a [`Domain`]'s.
#[derive(Debug, Clone, Copy)]
enum Scope {
    Global,
    Domain(Handle),
}

/// A range pushed on this thread's NVTX stack, popped when this guard drops ([`range`],
/// [`Domain::range`]). Neither `Send` nor `Sync`: NVTX pops the range of the thread that
/// calls, so it must drop on the thread that pushed it:
///
/// ```compile_fail
/// fn on_another_thread(_: impl Send) {}
/// on_another_thread(cuda_safe::nvtx::range("step"));
/// ```
#[derive(Debug)]
#[must_use = "the range is popped when the guard drops: bind it (`let _range = ...`)"]
pub struct Range<'d> {
    pushed: Option<(Tool, Scope)>,
    _domain: PhantomData<(&'d Domain, *const ())>,
}

impl Range<'_> {
    fn new(pushed: Option<(Tool, Scope)>) -> Self {
        Self {
            pushed,
            _domain: PhantomData,
        }
    }

    /// Pops the range now (as dropping it does).
    pub fn pop(self) {}
}

impl Drop for Range<'_> {
    #[inline]
    fn drop(&mut self) {
        let Some((tool, scope)) = self.pushed else {
            return;
        };
        // SAFETY: no pointer argument; the domain handle is the tool's, alive for `'d`.
        unsafe {
            match scope {
                Scope::Global => tool.range_pop(),
                Scope::Domain(domain) => tool.domain_range_pop(domain),
            };
        }
    }
}

/// A range started with [`range_start`] or [`Domain::range_start`], ended by
/// [`end`](Self::end) or when it drops, on any thread.
#[derive(Debug)]
#[must_use = "the range ends when the guard drops: bind it, and `end()` it where it ends"]
pub struct StartedRange<'d> {
    started: Option<(Tool, Scope, u64)>,
    _domain: PhantomData<&'d Domain>,
}

impl StartedRange<'_> {
    fn new(started: Option<(Tool, Scope, u64)>) -> Self {
        Self {
            started,
            _domain: PhantomData,
        }
    }

    /// The id the tool gave the range (`nvtxRangeId_t`), or `None` without a tool.
    pub fn id(&self) -> Option<u64> {
        self.started.map(|(_, _, id)| id)
    }

    /// Ends the range (as dropping it does).
    pub fn end(self) {}
}

impl Drop for StartedRange<'_> {
    #[inline]
    fn drop(&mut self) {
        let Some((tool, scope, id)) = self.started else {
            return;
        };
        // SAFETY: no pointer argument; the id and domain handle are the tool's.
        unsafe {
            match scope {
                Scope::Global => tool.range_end(id),
                Scope::Domain(domain) => tool.domain_range_end(domain, id),
            };
        }
    }
}

/// Pushes a range named `name` on this thread's stack (default domain), popped when the guard
/// drops (`nvtxRangePushA`, `nvtxRangePop`). Without a tool: one relaxed load.
#[doc(alias = "nvtxRangePushA")]
#[inline]
pub fn range(name: &str) -> Range<'static> {
    let Some(tool) = inject::tool() else {
        return Range::new(None);
    };
    // SAFETY: `name` is NUL-terminated for the call.
    let pushed = inject::with_c_str(name, |name| unsafe { tool.range_push_a(name) });
    Range::new(pushed.map(|_| (tool, Scope::Global)))
}

/// [`range`] with colour, category and payload (`nvtxRangePushEx`).
#[doc(alias = "nvtxRangePushEx")]
#[inline]
pub fn range_with(attributes: &EventAttributes<'_>) -> Range<'static> {
    let Some(tool) = inject::tool() else {
        return Range::new(None);
    };
    // SAFETY: the attributes and their message are valid for the call.
    let pushed = attributes.with_raw(Handle::NULL, |raw| unsafe { tool.range_push_ex(raw) });
    Range::new(pushed.map(|_| (tool, Scope::Global)))
}

/// Starts a range named `name` (default domain), ended by [`StartedRange::end`] or its drop,
/// on any thread (`nvtxRangeStartA`, `nvtxRangeEnd`).
#[doc(alias = "nvtxRangeStartA")]
#[inline]
pub fn range_start(name: &str) -> StartedRange<'static> {
    let Some(tool) = inject::tool() else {
        return StartedRange::new(None);
    };
    // SAFETY: `name` is NUL-terminated for the call.
    let id = inject::with_c_str(name, |name| unsafe { tool.range_start_a(name) });
    StartedRange::new(id.map(|id| (tool, Scope::Global, id)))
}

/// [`range_start`] with colour, category and payload (`nvtxRangeStartEx`).
#[doc(alias = "nvtxRangeStartEx")]
#[inline]
pub fn range_start_with(attributes: &EventAttributes<'_>) -> StartedRange<'static> {
    let Some(tool) = inject::tool() else {
        return StartedRange::new(None);
    };
    // SAFETY: the attributes and their message are valid for the call.
    let id = attributes.with_raw(Handle::NULL, |raw| unsafe { tool.range_start_ex(raw) });
    StartedRange::new(id.map(|id| (tool, Scope::Global, id)))
}

/// Marks an instant named `name` (default domain, `nvtxMarkA`).
#[doc(alias = "nvtxMarkA")]
#[inline]
pub fn mark(name: &str) {
    let Some(tool) = inject::tool() else {
        return;
    };
    // SAFETY: `name` is NUL-terminated for the call.
    inject::with_c_str(name, |name| unsafe { tool.mark_a(name) });
}

/// [`mark`] with colour, category and payload (`nvtxMarkEx`).
#[doc(alias = "nvtxMarkEx")]
#[inline]
pub fn mark_with(attributes: &EventAttributes<'_>) {
    let Some(tool) = inject::tool() else {
        return;
    };
    // SAFETY: the attributes and their message are valid for the call.
    attributes.with_raw(Handle::NULL, |raw| unsafe { tool.mark_ex(raw) });
}

/// Names category `category` of the default domain (`nvtxNameCategoryA`): the tool shows the
/// name for events with [`EventAttributes::category`] set to it.
#[doc(alias = "nvtxNameCategoryA")]
pub fn name_category(category: u32, name: &str) {
    let Some(tool) = inject::tool() else {
        return;
    };
    // SAFETY: `name` is NUL-terminated for the call.
    inject::with_c_str(name, |name| unsafe { tool.name_category_a(category, name) });
}
