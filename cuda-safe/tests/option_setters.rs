//! The option structs are `#[non_exhaustive]`: code outside the crate builds them from
//! `default()` or `new(..)` and one chainable setter per field. Each kind of setter stores
//! what it was given: as is, through `Into`, wrapped in `Some`, or collected from an iterator.

use cuda_safe::nvtx::{EventAttributes, Message};
use cuda_safe::{
    AccessPolicyWindow, AccessProperty, ArrayDescriptor, ArrayFormat, Dim3, EventOptions,
    GroupLayout, Im2colOptions, InstantiateOptions, Interleave, IpcHandleType, LaunchAttributes,
    LaunchConfig, LinkerOptions, PartitionRules, PoolOptions, ProgramOptions, StreamOptions,
    TensorOptions, TiledOptions, VirtualMemoryResourceOptions, VmmAccess,
};

#[test]
fn a_value_setter_stores_its_argument() {
    let events = EventOptions::default().timing(true).blocking_sync(true);
    assert!(events.timing && events.blocking_sync && !events.ipc);
    let instantiate = InstantiateOptions::default().device_launch(true);
    assert!(instantiate.device_launch && !instantiate.auto_free_on_launch);
    let layout = GroupLayout::default()
        .coscheduled_sm_count(4)
        .backfill(true);
    assert_eq!((layout.coscheduled_sm_count, layout.backfill), (4, true));
    assert!(!layout.is_default());
}

#[test]
fn an_option_setter_stores_some() {
    let stream = StreamOptions::default().priority(-1);
    assert_eq!(stream.priority, Some(-1));
    assert_eq!(stream.non_blocking, StreamOptions::default().non_blocking);
    let pool = PoolOptions::default()
        .ipc(IpcHandleType::PosixFd)
        .max_size(1 << 20);
    assert_eq!(
        (pool.ipc, pool.max_size, pool.release_threshold),
        (Some(IpcHandleType::PosixFd), Some(1 << 20), None)
    );
    let linker = LinkerOptions::default().arch("sm_90").optimization_level(3);
    assert_eq!(linker.arch.as_deref(), Some("sm_90"));
    assert_eq!(linker.optimization_level, Some(3));
    let program = ProgramOptions::default()
        .pch_messages(false)
        .pch_verbose(true);
    assert_eq!(
        (program.pch_messages, program.pch_verbose),
        (Some(false), Some(true))
    );
}

#[test]
fn an_into_setter_converts_its_argument() {
    let config = LaunchConfig::new(1, 1)
        .grid((4, 2, 1))
        .cluster(2)
        .shared_mem(256);
    assert_eq!(config.grid, Dim3::from((4, 2, 1)));
    assert_eq!(config.cluster, Some(Dim3::from(2)));
    assert_eq!(config.shared_mem, 256);
    let attributes = LaunchAttributes::default().preferred_cluster(4).priority(1);
    assert_eq!(attributes.preferred_cluster, Some(Dim3::from(4)));
    assert_eq!(attributes.count(), 2);
    let marked = EventAttributes::new("first").message("second");
    assert!(matches!(marked.message, Message::Text(text) if text == "second"));
}

#[test]
fn a_list_setter_replaces_the_list() {
    let linker = LinkerOptions::default()
        .ptxas_options(["-v"])
        .ptxas_options(["-O3", "--warn-on-spills"]);
    assert_eq!(linker.ptxas_options, ["-O3", "--warn-on-spills"]);
    let program = ProgramOptions::default()
        .define("A")
        .defines([("B".to_owned(), Some("1".to_owned()))])
        .include_paths(["include"]);
    assert_eq!(program.defines, [("B".to_owned(), Some("1".to_owned()))]);
    assert_eq!(program.include_paths, ["include"]);
    let tiled = TiledOptions::new(&[8]).box_dims([16, 16]);
    assert_eq!(tiled.box_dims, [16, 16]);
}

#[test]
fn nested_options_are_set_whole() {
    let common = TensorOptions::default()
        .element_strides([1, 1])
        .interleave(Interleave::B16);
    let im2col = Im2colOptions::default()
        .lower_corner([-1])
        .channels_per_pixel(8)
        .common(common.clone());
    assert_eq!(im2col.common, common);
    assert_eq!(im2col.lower_corner, [-1]);
    let vmm = VirtualMemoryResourceOptions::default()
        .peer_access(VmmAccess::Read)
        .addr_align(1 << 21);
    assert_eq!(
        (vmm.peer_access, vmm.addr_align),
        (VmmAccess::Read, Some(1 << 21))
    );
}

#[test]
fn the_constructors_take_what_has_no_default() {
    let array = ArrayDescriptor::new(64, ArrayFormat::F32, 4).height(32);
    assert_eq!((array.width, array.height, array.depth), (64, 32, 0));
    assert_eq!(array.dimensions(), 2);
    assert_eq!(array.element_bytes(), 4 * std::mem::size_of::<f32>());
    let rules = PartitionRules::new(4, 2);
    assert!(rules.allows(6) && !rules.allows(5) && !rules.allows(2));
    assert_eq!(rules.alignment(8).alignment, 8);
    let window = AccessPolicyWindow::new(0x1000, 4096, 0.5).miss(AccessProperty::Normal);
    assert_eq!((window.base, window.num_bytes), (0x1000, 4096));
    assert_eq!(
        (window.hit, window.miss),
        (AccessProperty::Persisting, AccessProperty::Normal)
    );
}
