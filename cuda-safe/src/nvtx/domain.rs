//! NVTX domains: a library's own scope of ranges, marks, categories and registered strings,
//! which a tool shows (and filters) apart from the default domain's.

use std::marker::PhantomData;

use super::inject::{self, Handle, Tool};
use super::{EventAttributes, Range, Scope, StartedRange};
use crate::error::Result;
use crate::handle::{Owned, Release};

/// An NVTX domain (`nvtxDomainCreateA`), destroyed when it drops (`nvtxDomainDestroy`).
///
/// Its ranges, marks and registered strings borrow it. Without a tool it holds nothing and
/// every method tests one field.
#[derive(Debug)]
pub struct Domain {
    created: Option<Owned<Created>>,
}

/// A domain the tool created, destroyed through [`Owned`].
#[derive(Debug)]
struct Created {
    tool: Tool,
    handle: Handle,
}

/// A string registered once with a [`Domain`] (`nvtxDomainRegisterStringA`): events in that
/// domain pass its handle instead of copying the text. Use it only with the domain that
/// registered it (debug builds check; release builds send no message).
#[derive(Debug, Clone, Copy)]
pub struct RegisteredString<'d> {
    pub(super) domain: Handle,
    pub(super) handle: Handle,
    _domain: PhantomData<&'d Domain>,
}

impl Domain {
    /// A domain named `name` (`nvtxDomainCreateA`).
    #[doc(alias = "nvtxDomainCreateA")]
    pub fn new(name: &str) -> Self {
        let Some(tool) = inject::tool() else {
            return Self { created: None };
        };
        // SAFETY: `name` is NUL-terminated for the call.
        let handle = inject::with_c_str(name, |name| unsafe { tool.domain_create_a(name) });
        Self {
            created: handle.map(|handle| Owned::new(Created { tool, handle })),
        }
    }

    /// The tool and this domain's handle, when a tool attached and created it.
    #[inline(always)]
    fn created(&self) -> Option<(Tool, Handle)> {
        // Without a tool none was created: a field's test, not even the state's load.
        self.created
            .as_ref()
            .map(|created| (created.tool, created.handle))
    }

    /// Pushes a range named `name` in this domain on this thread's stack, popped when the
    /// guard drops (`nvtxDomainRangePushEx`, `nvtxDomainRangePop`).
    #[doc(alias = "nvtxDomainRangePushEx")]
    #[inline]
    pub fn range(&self, name: &str) -> Range<'_> {
        self.range_with(&EventAttributes::new(name))
    }

    /// [`range`](Self::range) with colour, category and payload.
    #[inline]
    pub fn range_with(&self, attributes: &EventAttributes<'_>) -> Range<'_> {
        let Some((tool, domain)) = self.created() else {
            return Range::new(None);
        };
        let pushed = attributes.with_raw(domain, |raw| {
            // SAFETY: the attributes are valid for the call; `domain` is the tool's handle.
            unsafe { tool.domain_range_push_ex(domain, raw) }
        });
        Range::new(pushed.map(|_| (tool, Scope::Domain(domain))))
    }

    /// Starts a range named `name` in this domain, ended by [`StartedRange::end`] or its drop,
    /// on any thread (`nvtxDomainRangeStartEx`, `nvtxDomainRangeEnd`).
    #[doc(alias = "nvtxDomainRangeStartEx")]
    #[inline]
    pub fn range_start(&self, name: &str) -> StartedRange<'_> {
        self.range_start_with(&EventAttributes::new(name))
    }

    /// [`range_start`](Self::range_start) with colour, category and payload.
    #[inline]
    pub fn range_start_with(&self, attributes: &EventAttributes<'_>) -> StartedRange<'_> {
        let Some((tool, domain)) = self.created() else {
            return StartedRange::new(None);
        };
        let id = attributes.with_raw(domain, |raw| {
            // SAFETY: the attributes are valid for the call; `domain` is the tool's handle.
            unsafe { tool.domain_range_start_ex(domain, raw) }
        });
        StartedRange::new(id.map(|id| (tool, Scope::Domain(domain), id)))
    }

    /// Marks an instant named `name` in this domain (`nvtxDomainMarkEx`).
    #[doc(alias = "nvtxDomainMarkEx")]
    #[inline]
    pub fn mark(&self, name: &str) {
        self.mark_with(&EventAttributes::new(name));
    }

    /// [`mark`](Self::mark) with colour, category and payload.
    #[inline]
    pub fn mark_with(&self, attributes: &EventAttributes<'_>) {
        let Some((tool, domain)) = self.created() else {
            return;
        };
        attributes.with_raw(domain, |raw| {
            // SAFETY: the attributes are valid for the call; `domain` is the tool's handle.
            unsafe { tool.domain_mark_ex(domain, raw) }
        });
    }

    /// Registers `text` with this domain (`nvtxDomainRegisterStringA`), for events that name
    /// it often: they pass the tool's handle, with no copy.
    #[doc(alias = "nvtxDomainRegisterStringA")]
    pub fn register_string(&self, text: &str) -> RegisteredString<'_> {
        let (domain, handle) = match self.created() {
            None => (Handle::NULL, Handle::NULL),
            Some((tool, domain)) => {
                // SAFETY: `text` is NUL-terminated for the call; `domain` is the tool's handle.
                let handle = inject::with_c_str(text, |text| unsafe {
                    tool.domain_register_string_a(domain, text)
                });
                (domain, handle.unwrap_or(Handle::NULL))
            }
        };
        RegisteredString {
            domain,
            handle,
            _domain: PhantomData,
        }
    }

    /// Names category `category` of this domain (`nvtxDomainNameCategoryA`).
    #[doc(alias = "nvtxDomainNameCategoryA")]
    pub fn name_category(&self, category: u32, name: &str) {
        let Some((tool, domain)) = self.created() else {
            return;
        };
        // SAFETY: `name` is NUL-terminated for the call; `domain` is the tool's handle.
        inject::with_c_str(name, |name| unsafe {
            tool.domain_name_category_a(domain, category, name)
        });
    }
}

impl Release for Created {
    const WHAT: &'static str = "NVTX domain";

    fn release(&mut self) -> Result<()> {
        // SAFETY: the tool's handle, destroyed once (by `Owned`); nothing borrows the domain
        // any more.
        unsafe { self.tool.domain_destroy(self.handle) };
        Ok(())
    }
}
