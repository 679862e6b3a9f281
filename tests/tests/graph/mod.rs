//! CUDA graphs on a real GPU, a module a topic: every node type ([`build`]), stream capture in
//! each mode and across forked streams ([`capture`]), conditional nodes ([`conditional`]),
//! executable updates, accepted and refused ([`exec`]), host callbacks, their order and panics
//! ([`callbacks`]), what graphs keep alive, also with a replay in flight ([`lifetimes`]),
//! clustered, cooperative and attributed kernel nodes and programmatic edges ([`nodes`]),
//! updates of definition and executable nodes and 3-D copy nodes ([`updates`]), and clones,
//! removed nodes, ids and conditional bodies captured inside a capture ([`structure`]), graph
//! arenas ([`arena`]), and captures into existing graphs, updates from a fresh capture and
//! re-capture ([`into`]). [`common`] holds what they share.
//!
//! Tests run on threads of one process, and a global-mode capture forbids some calls on every
//! thread: each test holds `common::CAPTURE_MODES` for reading (through [`common::setup`]), the
//! global-mode tests for writing (through [`common::setup_alone`]).

mod arena;
mod build;
mod callbacks;
mod capture;
mod common;
mod conditional;
mod exec;
mod into;
mod lifetimes;
mod nodes;
mod structure;
mod updates;

use cuda_gpu_tests::{GpuFile, gpu_file};

/// This file's tests: the modules' tests, named by their paths.
pub(crate) const FILE: GpuFile = gpu_file![
    build::kernel_nodes_run_with_checked_typed_arguments,
    build::memset_and_memcpy_nodes_fill_and_copy_buffers,
    build::host_nodes_run_once_per_replay_after_their_dependencies,
    build::event_record_and_wait_nodes_order_two_graphs_on_two_streams,
    build::allocation_nodes_give_memory_between_their_allocation_and_free,
    build::child_graphs_and_empty_nodes_split_and_join,
    build::dependencies_added_later_order_nodes,
    build::graphs_are_written_as_dot,
    capture::capture_in_thread_local_and_relaxed_mode_records_launches,
    capture::capture_in_global_mode_records_launches,
    capture::capture_modes_forbid_unsafe_calls_where_documented,
    capture::illegal_work_during_capture_is_explained_and_the_stream_recovers,
    capture::capture_across_forked_streams_joins_into_one_graph,
    capture::captured_kernel_nodes_are_updated_without_instantiating_again,
    capture::host_functions_are_refused_on_a_capturing_stream,
    capture::moving_a_buffer_off_a_capturing_stream_records_the_order,
    capture::moving_a_buffer_on_another_thread_leaves_a_global_capture_alone,
    conditional::conditional_if_runs_its_body_when_a_kernel_sets_the_handle,
    conditional::conditional_if_else_runs_one_of_two_bodies,
    conditional::conditional_while_loops_until_a_kernel_of_its_captured_body_clears_the_handle,
    conditional::conditional_switch_runs_the_case_of_the_value,
    exec::whole_graph_updates_are_applied_or_refused_with_the_reason,
    exec::kernel_node_arguments_are_updated_in_the_executable,
    exec::nodes_are_disabled_and_enabled,
    callbacks::stream_host_functions_run_once_in_stream_order,
    callbacks::a_panicking_stream_host_function_is_reported_by_the_next_call,
    callbacks::a_panicking_host_node_is_reported_by_the_next_launch,
    callbacks::host_callbacks_cannot_call_cuda_in_debug_builds,
    lifetimes::dropping_the_graph_while_a_replay_is_in_flight_keeps_what_it_uses,
    lifetimes::graphs_keep_buffers_kernels_and_closures_alive,
    nodes::clustered_kernel_nodes_read_their_cluster_rank_and_size,
    nodes::cooperative_kernel_nodes_synchronize_the_grid,
    nodes::launch_attributes_are_kept_on_explicit_and_captured_nodes,
    nodes::programmatic_edges_let_the_dependent_kernel_wait_in_the_kernel,
    updates::definition_updates_change_what_runs,
    updates::executable_updates_keep_what_they_use_past_a_replay_in_flight,
    updates::copy_nodes_move_boxes_between_buffers_pitched_memory_and_arrays,
    structure::clones_run_on_their_own_and_removed_nodes_are_gone,
    structure::ids_are_distinct_and_stable_where_the_driver_has_them,
    structure::conditional_bodies_added_by_capture_run_as_their_handles_say,
    arena::a_forward_pass_replays_from_the_arena_bit_for_bit_at_stable_addresses,
    arena::a_busy_arena_refuses_and_a_reset_recaptures_at_the_same_addresses,
    into::captures_into_an_existing_graph_run_after_their_dependencies,
    into::whole_graph_updates_from_a_fresh_capture_are_applied_or_refused,
    into::recapture_updates_the_executable_or_is_unsupported_with_the_version,
];
