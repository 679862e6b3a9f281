//! Spans for `tracing` (feature `tracing`) around the slow, launch-free paths: NVRTC compiles,
//! module loads, links, program-cache lookups and stores, graph instantiation, and context and
//! pool creation. Never on the launch, copy, allocation or event-record paths.
//!
//! Without the feature, [`span!`] expands to a zero-sized [`Span`] and its fields are not
//! evaluated, so a build without it carries nothing. With it, a span whose level no subscriber
//! enables costs the check `tracing` makes at each call site (one load and a compare); this
//! crate installs no subscriber.

/// A span entered until this guard drops (nothing without the `tracing` feature).
#[must_use = "the span ends when the guard drops"]
pub(crate) struct Span {
    #[cfg(feature = "tracing")]
    entered: tracing::span::EnteredSpan,
}

impl Span {
    /// The guard of `span`, entered.
    #[cfg(feature = "tracing")]
    #[inline]
    pub(crate) fn enter(span: tracing::Span) -> Self {
        Self {
            entered: span.entered(),
        }
    }

    /// The guard of no span.
    #[cfg(not(feature = "tracing"))]
    #[inline(always)]
    pub(crate) fn quiet() -> Self {
        Self {}
    }

    /// Records on the span whether a cache lookup found its entry (its `hit` field).
    #[inline]
    pub(crate) fn record_hit(&self, hit: bool) {
        #[cfg(feature = "tracing")]
        self.entered.record("hit", hit);
        #[cfg(not(feature = "tracing"))]
        let _ = hit;
    }
}

/// Enters a span at `$level` (`DEBUG`, `TRACE`) named `$name`, with `tracing`'s field syntax,
/// until the returned [`Span`] drops.
#[cfg(feature = "tracing")]
macro_rules! span {
    ($level:ident, $name:literal $(, $($fields:tt)*)?) => {
        crate::trace::Span::enter(::tracing::span!(::tracing::Level::$level, $name $(, $($fields)*)?))
    };
}

/// Without the `tracing` feature: no span, and the fields are not evaluated (so name only
/// values the code uses anyway).
#[cfg(not(feature = "tracing"))]
macro_rules! span {
    ($level:ident, $name:literal $(, $($fields:tt)*)?) => {
        crate::trace::Span::quiet()
    };
}

pub(crate) use span;
