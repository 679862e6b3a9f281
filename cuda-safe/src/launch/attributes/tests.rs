//! The attribute checks, each rule's refusal, and the raw attributes written.

use super::*;
use cuda_sys::CUlaunchAttributeID as Id;

const H200: AttributeSupport = AttributeSupport {
    compute_capability: (9, 0),
    driver_version: 13_000,
    priority_range: (0, -5),
    mem_sync_domains: 4,
    max_access_policy_window: 134_213_632,
};

const AMPERE: AttributeSupport = AttributeSupport {
    compute_capability: (8, 0),
    driver_version: 12_020,
    mem_sync_domains: 1,
    ..H200
};

fn clustered() -> LaunchConfig {
    LaunchConfig {
        cluster: Some(Dim3::from(2)),
        ..LaunchConfig::new(64, 128)
    }
}

fn window(num_bytes: usize, hit_ratio: f32) -> AccessPolicyWindow {
    AccessPolicyWindow {
        base: 0x7f00_0000_0000,
        num_bytes,
        hit_ratio,
        hit: AccessProperty::Persisting,
        miss: AccessProperty::Streaming,
    }
}

fn refusal(
    attributes: LaunchAttributes<'_>,
    config: LaunchConfig,
    support: AttributeSupport,
) -> Error {
    attributes.validate(&config, &support).unwrap_err()
}

#[test]
fn every_attribute_passes_on_a_hopper_with_a_new_driver() {
    let all = LaunchAttributes {
        programmatic_stream_serialization: true,
        preferred_cluster: Some(Dim3::from(4)),
        cluster_scheduling: Some(ClusterScheduling::LoadBalancing),
        priority: Some(-5),
        mem_sync_domain: Some(MemSyncDomain::Remote),
        mem_sync_domain_map: Some(MemSyncDomainMap {
            default: 0,
            remote: 1,
        }),
        access_policy_window: Some(window(1 << 20, 0.6)),
        ..Default::default()
    };
    all.validate(&clustered(), &H200).unwrap();
    assert_eq!(all.count(), 7);
    assert_eq!(LaunchAttributes::default().count(), 0);
}

#[test]
fn hopper_features_are_unsupported_before_9_0() {
    for attributes in [
        LaunchAttributes {
            programmatic_stream_serialization: true,
            ..Default::default()
        },
        LaunchAttributes {
            cluster_scheduling: Some(ClusterScheduling::Spread),
            ..Default::default()
        },
        LaunchAttributes {
            mem_sync_domain: Some(MemSyncDomain::Default),
            ..Default::default()
        },
    ] {
        let error = refusal(attributes, clustered(), AMPERE);
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        assert!(
            error.to_string().contains("9.0, the device has 8.0"),
            "{error}"
        );
    }
}

#[test]
fn preferred_clusters_need_a_new_driver_and_fitting_shapes() {
    let preferred = |dim: Dim3| LaunchAttributes {
        preferred_cluster: Some(dim),
        ..Default::default()
    };
    let old = AttributeSupport {
        driver_version: 12_060,
        ..H200
    };
    let error = refusal(preferred(Dim3::from(4)), clustered(), old);
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    assert!(error.to_string().contains("12.8"), "{error}");
    let no_cluster = refusal(preferred(Dim3::from(4)), LaunchConfig::new(64, 128), H200);
    assert!(
        no_cluster
            .to_string()
            .contains("needs LaunchConfig::cluster"),
        "{no_cluster}"
    );
    let odd = refusal(preferred(Dim3::from(3)), clustered(), H200);
    assert!(odd.to_string().contains("multiple of the cluster"), "{odd}");
    let grid = refusal(preferred(Dim3::from(128)), clustered(), H200);
    assert!(grid.to_string().contains("grid"), "{grid}");
    let deep = LaunchConfig {
        cluster: Some(Dim3::from((2, 1, 2))),
        ..LaunchConfig::new((64, 1, 4), 128)
    };
    let z = refusal(preferred(Dim3::from((4, 1, 4))), deep, H200);
    assert!(z.to_string().contains("along z"), "{z}");
}

#[test]
fn scheduling_needs_a_cluster() {
    let attributes = LaunchAttributes {
        cluster_scheduling: Some(ClusterScheduling::Default),
        ..Default::default()
    };
    let error = refusal(attributes, LaunchConfig::new(64, 128), H200);
    assert!(
        error.to_string().contains("needs LaunchConfig::cluster"),
        "{error}"
    );
}

#[test]
fn priorities_stay_in_the_range() {
    for (priority, ok) in [(0, true), (-5, true), (-3, true), (1, false), (-6, false)] {
        let attributes = LaunchAttributes {
            priority: Some(priority),
            ..Default::default()
        };
        let result = attributes.validate(&clustered(), &H200);
        assert_eq!(result.is_ok(), ok, "{priority}: {result:?}");
        if let Err(error) = result {
            assert!(
                error.to_string().contains("outside the context's range"),
                "{error}"
            );
        }
    }
}

#[test]
fn domain_maps_stay_below_the_domain_count() {
    let attributes = LaunchAttributes {
        mem_sync_domain_map: Some(MemSyncDomainMap {
            default: 0,
            remote: 4,
        }),
        ..Default::default()
    };
    let error = refusal(attributes, clustered(), H200);
    assert!(error.to_string().contains("past the device's 4"), "{error}");
}

#[test]
fn windows_are_checked_against_the_device() {
    let with = |window| LaunchAttributes {
        access_policy_window: Some(window),
        ..Default::default()
    };
    let none = AttributeSupport {
        max_access_policy_window: 0,
        ..H200
    };
    let error = refusal(with(window(1024, 0.5)), clustered(), none);
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    for (bad, rule) in [
        (window(0, 0.5), "bytes"),
        (window(1 << 30, 0.5), "bytes"),
        (window(1024, 1.5), "hit ratio"),
        (window(1024, -0.1), "hit ratio"),
        (window(1024, f32::NAN), "hit ratio"),
        (
            AccessPolicyWindow {
                miss: AccessProperty::Persisting,
                ..window(1024, 0.5)
            },
            "miss property",
        ),
    ] {
        let error = refusal(with(bad), clustered(), H200);
        assert!(error.to_string().contains(rule), "{error}");
    }
}

#[test]
fn the_raw_attributes_carry_each_value() {
    let attributes = LaunchAttributes {
        programmatic_stream_serialization: true,
        preferred_cluster: Some(Dim3::from((4, 2, 1))),
        cluster_scheduling: Some(ClusterScheduling::Spread),
        priority: Some(-2),
        mem_sync_domain: Some(MemSyncDomain::Remote),
        mem_sync_domain_map: Some(MemSyncDomainMap {
            default: 0,
            remote: 1,
        }),
        access_policy_window: Some(window(4096, 0.25)),
        ..Default::default()
    };
    let mut slots = [CUlaunchAttribute::default(); 8];
    assert_eq!(attributes.write(&mut slots), 7);
    let ids: Vec<Id> = slots[..7].iter().map(|slot| slot.id).collect();
    assert_eq!(
        ids,
        [
            Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            Id::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION,
            Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
            Id::CU_LAUNCH_ATTRIBUTE_PRIORITY,
            Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
            Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
            Id::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
        ]
    );
    // SAFETY: each slot's union holds the variant its id names, written above.
    unsafe {
        assert_eq!(slots[0].value.programmaticStreamSerializationAllowed, 1);
        let preferred = slots[1].value.preferredClusterDim;
        assert_eq!((preferred.x, preferred.y, preferred.z), (4, 2, 1));
        assert_eq!(
            slots[2].value.clusterSchedulingPolicyPreference,
            CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_SPREAD
        );
        assert_eq!(slots[3].value.priority, -2);
        assert_eq!(
            slots[4].value.memSyncDomain,
            CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
        );
        assert_eq!(slots[5].value.memSyncDomainMap.remote, 1);
        let raw = slots[6].value.accessPolicyWindow;
        assert_eq!(raw.num_bytes, 4096);
        assert_eq!(raw.hitRatio, 0.25);
        assert_eq!(raw.hitProp, CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING);
        assert_eq!(raw.missProp, CUaccessProperty::CU_ACCESS_PROPERTY_STREAMING);
        assert_eq!(raw.base_ptr as usize, 0x7f00_0000_0000);
    }
    // Too few slots: what fits is written, nothing past the end.
    let mut two = [CUlaunchAttribute::default(); 2];
    assert_eq!(attributes.write(&mut two), 2);
}
