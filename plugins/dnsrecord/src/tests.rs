//! The plan from a `DNSRecord` to PowerDNS changes, with plain values: canonical names, ownership, renames and
//! cleanup.

use crate::resource::DNSRecordSpec;
use crate::zone::{Comment, Desired, Owner, Plan, Record, RecordSet, SetKey, Zone, clean_up, converge};

fn spec(name: &str, record_type: &str, records: &[&str]) -> DNSRecordSpec {
    DNSRecordSpec {
        zone: "Example.org".into(),
        name: name.into(),
        record_type: record_type.into(),
        ttl: 300,
        records: records.iter().map(|record| (*record).to_owned()).collect(),
    }
}

fn owner() -> Owner {
    Owner {
        key: "default/www".into(),
        uid: "6f1c".into(),
    }
}

fn set(name: &str, record_type: &str, ttl: u32, records: &[&str], owned_by: Option<&Owner>) -> RecordSet {
    RecordSet {
        name: name.into(),
        record_type: record_type.into(),
        ttl: Some(ttl),
        records: records
            .iter()
            .map(|content| Record {
                content: (*content).to_owned(),
                disabled: false,
            })
            .collect(),
        comments: owned_by.map(|owner| vec![owner.mark()]).unwrap_or_else(|| {
            vec![Comment {
                content: "hand-made".into(),
                account: "ops".into(),
            }]
        }),
    }
}

fn zone(sets: Vec<RecordSet>) -> Zone {
    Zone {
        name: "example.org.".into(),
        rrsets: sets,
    }
}

fn key(fqdn: &str, record_type: &str) -> SetKey {
    SetKey {
        fqdn: fqdn.into(),
        record_type: record_type.into(),
    }
}

#[test]
fn names_are_made_canonical_and_checked() {
    let desired = Desired::from_spec(&spec("WWW", "a", &["192.0.2.2", "192.0.2.1", "192.0.2.1"])).unwrap();
    assert_eq!(desired.zone, "example.org.");
    assert_eq!(desired.key, key("www.example.org.", "A"));
    assert_eq!(desired.records, ["192.0.2.1", "192.0.2.2"]);
    assert_eq!(
        Desired::from_spec(&spec("@", "TXT", &["\"x\""])).unwrap().key.fqdn,
        "example.org."
    );
    assert_eq!(
        Desired::from_spec(&spec("api.example.org.", "A", &["192.0.2.1"]))
            .unwrap()
            .key
            .fqdn,
        "api.example.org."
    );
    let problem = |spec: DNSRecordSpec| Desired::from_spec(&spec).unwrap_err();
    assert!(problem(spec("www.example.com.", "A", &["192.0.2.1"])).contains("not inside the zone example.org."));
    assert!(problem(spec("www", "A", &[])).contains("at least one"));
    assert!(problem(spec("bad name", "A", &["192.0.2.1"])).contains("not a domain name"));
    assert!(problem(spec("@", "SOA", &["x"])).contains("not managed"));
    assert!(problem(spec("www", "A B", &["x"])).contains("not a record type"));
}

#[test]
fn a_missing_record_set_is_created_with_the_owner_mark() {
    let desired = Desired::from_spec(&spec("www", "A", &["192.0.2.1"])).unwrap();
    let Plan::Write { changes, created } = converge(&zone(vec![]), &desired, None, &owner()) else {
        panic!("a write")
    };
    assert!(created);
    assert_eq!(changes.len(), 1);
    let change = serde_json::to_value(&changes[0]).unwrap();
    assert_eq!(change["changetype"], "REPLACE");
    assert_eq!(change["name"], "www.example.org.");
    assert_eq!(change["ttl"], 300);
    assert_eq!(change["records"][0]["content"], "192.0.2.1");
    assert!(
        change["comments"][0]["content"]
            .as_str()
            .unwrap()
            .contains("(uid 6f1c)")
    );
}

#[test]
fn an_owned_record_set_in_sync_is_left_alone_and_a_changed_one_is_replaced() {
    let desired = Desired::from_spec(&spec("www", "A", &["192.0.2.1", "192.0.2.2"])).unwrap();
    let held = set(
        "www.example.org.",
        "A",
        300,
        &["192.0.2.2", "192.0.2.1"],
        Some(&owner()),
    );
    assert_eq!(converge(&zone(vec![held]), &desired, None, &owner()), Plan::InSync);
    let stale = set("www.example.org.", "A", 60, &["192.0.2.1", "192.0.2.2"], Some(&owner()));
    assert!(matches!(
        converge(&zone(vec![stale]), &desired, None, &owner()),
        Plan::Write { created: false, .. }
    ));
}

#[test]
fn a_record_set_someone_else_owns_is_a_conflict_never_overwritten() {
    let desired = Desired::from_spec(&spec("www", "A", &["192.0.2.1"])).unwrap();
    let theirs = set("www.example.org.", "A", 300, &["198.51.100.7"], None);
    let other_object = Owner {
        key: "other/www".into(),
        uid: "99aa".into(),
    };
    let also_theirs = set("www.example.org.", "A", 300, &["198.51.100.7"], Some(&other_object));
    for existing in [theirs, also_theirs] {
        assert_eq!(
            converge(&zone(vec![existing]), &desired, None, &owner()),
            Plan::Conflict(key("www.example.org.", "A"))
        );
    }
}

#[test]
fn a_renamed_record_deletes_the_old_set_it_owns_in_the_same_patch() {
    let desired = Desired::from_spec(&spec("web", "A", &["192.0.2.1"])).unwrap();
    let old = set("www.example.org.", "A", 300, &["192.0.2.1"], Some(&owner()));
    let Plan::Write { changes, created } = converge(
        &zone(vec![old]),
        &desired,
        Some(&key("www.example.org.", "A")),
        &owner(),
    ) else {
        panic!("a write")
    };
    assert!(created);
    let kinds: Vec<(&str, &str)> = changes.iter().map(|c| (c.name.as_str(), c.changetype)).collect();
    assert_eq!(kinds, [("www.example.org.", "DELETE"), ("web.example.org.", "REPLACE")]);
}

#[test]
fn cleanup_deletes_only_what_the_object_owns() {
    let mine = set("www.example.org.", "A", 300, &["192.0.2.1"], Some(&owner()));
    let theirs = set("api.example.org.", "A", 300, &["192.0.2.9"], None);
    let keys = [
        key("www.example.org.", "A"),
        key("api.example.org.", "A"),
        key("gone.example.org.", "A"),
    ];
    let changes = clean_up(&zone(vec![mine, theirs]), &keys, &owner());
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].name.as_str(), changes[0].changetype),
        ("www.example.org.", "DELETE")
    );
    assert!(clean_up(&zone(vec![]), &keys, &owner()).is_empty());
}

#[test]
fn without_its_api_key_the_plugin_fails_naming_the_variable() {
    use wasm_reconciler_sdk::native::{MemoryHost, with_host};
    use wasm_reconciler_sdk::{Reconciler, WorldView};

    let view = WorldView::new(serde_json::json!({
        "apiVersion": "examples.wasm-reconciler.io/v1alpha1", "kind": "DNSRecord",
        "metadata": {"name": "www", "namespace": "default", "uid": "6f1c"},
        "spec": {"zone": "example.org", "name": "www", "type": "A", "records": ["192.0.2.1"]},
    }))
    .with_config(serde_json::json!({"server": "http://127.0.0.1:8081"}));
    let error = with_host(&MemoryHost::new(), || crate::DnsRecordReconciler::reconcile(view)).unwrap_err();
    assert!(error.message().contains("pdns_api_key"), "{error}");
}
