//! `serde::Serialize` (feature `serde`) for what a program reports, as JSON: NVML samples and
//! enums by name, UUIDs and versions as text, device properties and cache statistics field by
//! field. No GPU needed: the values are made here.
#![cfg(feature = "serde")]

use cuda_safe::cache::CacheStats;
use cuda_safe::system::{Architecture, MemoryInfo, PerformanceState, Utilization, VersionString};
use cuda_safe::{MemInfo, Uuid};
use serde_json::json;

#[test]
fn nvml_samples_serialize_field_by_field_and_enums_by_name() {
    let mut utilization = Utilization::default();
    (utilization.gpu, utilization.memory) = (87, 41);
    assert_eq!(
        serde_json::to_value(utilization).unwrap(),
        json!({"gpu": 87, "memory": 41})
    );
    let mut memory = MemoryInfo::default();
    (memory.total, memory.reserved, memory.used, memory.free) = (100, 10, 30, 60);
    assert_eq!(
        serde_json::to_value(memory).unwrap(),
        json!({"total": 100, "reserved": 10, "used": 30, "free": 60})
    );
    assert_eq!(
        serde_json::to_value(Architecture::HOPPER).unwrap(),
        json!("Hopper")
    );
    assert_eq!(
        serde_json::to_value(Architecture(99)).unwrap(),
        json!("unknown (99)")
    );
    assert_eq!(
        serde_json::to_value(PerformanceState::P0).unwrap(),
        json!("P0")
    );
    assert_eq!(
        serde_json::to_value(VersionString::new("580.159.04")).unwrap(),
        json!("580.159.04")
    );
}

#[test]
fn device_facts_and_cache_stats_serialize() {
    let uuid: Uuid = "GPU-5a5a5a5a-0000-1111-2222-333344445555".parse().unwrap();
    assert_eq!(
        serde_json::to_value(uuid).unwrap(),
        json!("GPU-5a5a5a5a-0000-1111-2222-333344445555")
    );
    let mut mem_info = MemInfo::default();
    (mem_info.free, mem_info.total) = (1, 2);
    assert_eq!(
        serde_json::to_value(mem_info).unwrap(),
        json!({"free": 1, "total": 2})
    );
    let stats = serde_json::to_value(CacheStats::default()).unwrap();
    assert_eq!(stats["hits"], json!(0));
    assert_eq!(stats["entries"], json!(0));
}
