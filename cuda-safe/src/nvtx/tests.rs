//! Without a tool: every call stops at the state check (nothing built, no slot read), and the
//! tool is looked for once.

use std::sync::atomic::Ordering;

use super::inject::{ENV_VAR, tests_hook};
use super::{Domain, EventAttributes, Payload};

#[test]
fn no_tool_calls_do_nothing_past_the_state_check() {
    if std::env::var_os(ENV_VAR).is_some() {
        eprintln!("{ENV_VAR} is set (a profiler runs these tests): skipped");
        return;
    }
    assert!(!super::is_enabled());
    let called = tests_hook::CALLED.load(Ordering::Relaxed);
    let long = "x".repeat(1000);
    for i in 0..1000u32 {
        let _outer = super::range("outer");
        let attributes = EventAttributes::new(long.as_str())
            .color(0xff00ff00)
            .category(i)
            .payload(Payload::U32(i));
        let _inner = super::range_with(&attributes);
        super::mark("mark");
        super::mark_with(&attributes);
        super::range_start("started").end();
        drop(super::range_start_with(&attributes));
        super::name_category(i, "category");
        let domain = Domain::new("domain");
        let registered = domain.register_string("registered");
        let _in_domain = domain.range_with(&EventAttributes::new(registered));
        domain.mark("mark");
        assert_eq!(domain.range_start("started").id(), None);
        domain.name_category(1, "one");
    }
    assert!(!super::is_enabled());
    assert_eq!(
        tests_hook::CALLED.load(Ordering::Relaxed),
        called,
        "no C string built and no slot read without a tool"
    );
    assert_eq!(
        tests_hook::INITIALIZED.load(Ordering::Relaxed),
        1,
        "the tool is looked for once"
    );
}

#[test]
fn guards_are_small() {
    assert!(size_of::<super::Range<'static>>() <= 24);
    assert!(size_of::<super::StartedRange<'static>>() <= 32);
}
