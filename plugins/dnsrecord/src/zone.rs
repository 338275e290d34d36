//! PowerDNS's shapes (a zone's record sets, the changes a PATCH applies) and the plan from what a `DNSRecord` asks
//! for to the changes that make the zone hold it — pure functions, tested with plain values.
//!
//! Ownership follows ExternalDNS's rule: a record set this plugin writes carries a comment naming the object's
//! uid, and the plugin never changes or deletes a record set that does not carry its own.

use serde::{Deserialize, Serialize};

use crate::resource::DNSRecordSpec;

/// A zone as `GET /api/v1/servers/{server}/zones/{zone}` returns it (the parts the plugin reads).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Zone {
    /// The zone's name, with a trailing dot.
    pub name: String,
    /// Every record set in the zone.
    #[serde(default)]
    pub rrsets: Vec<RecordSet>,
}

/// One record set: every record of one name and type.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RecordSet {
    /// Fully qualified name, with a trailing dot.
    pub name: String,
    /// Record type.
    #[serde(rename = "type")]
    pub record_type: String,
    /// Time to live in seconds.
    #[serde(default)]
    pub ttl: Option<u32>,
    /// The records.
    #[serde(default)]
    pub records: Vec<Record>,
    /// Comments on the record set; the owner's mark is one of them.
    #[serde(default)]
    pub comments: Vec<Comment>,
}

/// One record of a set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its content in presentation format.
    pub content: String,
    /// Disabled records are stored but not served.
    #[serde(default)]
    pub disabled: bool,
}

/// A comment on a record set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comment {
    /// Its text.
    pub content: String,
    /// Who wrote it.
    #[serde(default)]
    pub account: String,
}

/// One change of a `PATCH /api/v1/servers/{server}/zones/{zone}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Fully qualified name.
    pub name: String,
    /// Record type.
    #[serde(rename = "type")]
    pub record_type: String,
    /// `REPLACE` or `DELETE`.
    pub changetype: &'static str,
    /// Time to live (replace only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u32>,
    /// The new records (replace only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<Record>>,
    /// The new comments (replace only): the owner's mark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comments: Option<Vec<Comment>>,
}

/// The account the owner's mark is written under.
const ACCOUNT: &str = "wasm-reconciler";

/// Who owns the record sets a `DNSRecord` writes: the object, by uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `namespace/name`, for people reading the zone.
    pub key: String,
    /// The object's uid, what ownership is decided on.
    pub uid: String,
}

impl Owner {
    /// The comment marking a record set as this owner's.
    pub fn mark(&self) -> Comment {
        Comment {
            content: format!("managed by wasm-reconciler dnsrecord {} (uid {})", self.key, self.uid),
            account: ACCOUNT.to_owned(),
        }
    }

    /// Whether `set` carries this owner's mark.
    pub fn owns(&self, set: &RecordSet) -> bool {
        let uid = format!("(uid {})", self.uid);
        set.comments.iter().any(|comment| comment.content.contains(&uid))
    }
}

/// A record set's identity: name and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetKey {
    /// Fully qualified name, lower case, with a trailing dot.
    pub fqdn: String,
    /// Record type, upper case.
    pub record_type: String,
}

impl std::fmt::Display for SetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.fqdn, self.record_type)
    }
}

/// What a `DNSRecord` asks for, checked and in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// The zone, lower case, with a trailing dot.
    pub zone: String,
    /// The record set.
    pub key: SetKey,
    /// Time to live.
    pub ttl: u32,
    /// Contents, sorted, without duplicates.
    pub records: Vec<String>,
}

/// `example.org` → `example.org.`, lower case.
pub fn canonical_zone(zone: &str) -> String {
    let zone = zone.trim().to_ascii_lowercase();
    if zone.ends_with('.') { zone } else { format!("{zone}.") }
}

impl Desired {
    /// Checks `spec` and puts it in canonical form; the error says what is wrong with it.
    pub fn from_spec(spec: &DNSRecordSpec) -> Result<Self, String> {
        let zone = canonical_zone(&spec.zone);
        if zone == "." || !is_domain(&zone) {
            return Err(format!("spec.zone {:?} is not a domain name", spec.zone));
        }
        let name = spec.name.trim().to_ascii_lowercase();
        let fqdn = match name.as_str() {
            "@" => zone.clone(),
            name if name.ends_with('.') => name.to_owned(),
            name => format!("{name}.{zone}"),
        };
        if !is_domain(&fqdn) {
            return Err(format!("spec.name {:?} is not a domain name", spec.name));
        }
        if !(fqdn == zone || fqdn.ends_with(&format!(".{zone}"))) {
            return Err(format!("{fqdn} is not inside the zone {zone}"));
        }
        let record_type = spec.record_type.trim().to_ascii_uppercase();
        if record_type.is_empty() || !record_type.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!("spec.type {:?} is not a record type", spec.record_type));
        }
        if matches!(record_type.as_str(), "SOA" | "NS") && fqdn == zone {
            return Err(format!(
                "the zone's own {record_type} records are not managed by DNSRecord objects"
            ));
        }
        if spec.ttl == 0 {
            return Err("spec.ttl must be at least 1".into());
        }
        let mut records: Vec<String> = spec.records.iter().map(|record| record.trim().to_owned()).collect();
        records.sort();
        records.dedup();
        if records.is_empty() || records.iter().any(String::is_empty) {
            return Err("spec.records must list at least one non-empty record".into());
        }
        Ok(Self {
            zone,
            key: SetKey { fqdn, record_type },
            ttl: spec.ttl,
            records,
        })
    }

    /// Whether `set` already holds exactly these records with this TTL, all enabled.
    fn is_held_by(&self, set: &RecordSet) -> bool {
        let mut contents: Vec<&str> = set.records.iter().map(|record| record.content.as_str()).collect();
        contents.sort_unstable();
        set.ttl == Some(self.ttl)
            && set.records.iter().all(|record| !record.disabled)
            && contents == self.records.iter().map(String::as_str).collect::<Vec<_>>()
    }

    fn replace(&self, owner: &Owner) -> Change {
        Change {
            name: self.key.fqdn.clone(),
            record_type: self.key.record_type.clone(),
            changetype: "REPLACE",
            ttl: Some(self.ttl),
            records: Some(
                self.records
                    .iter()
                    .map(|content| Record {
                        content: content.clone(),
                        disabled: false,
                    })
                    .collect(),
            ),
            comments: Some(vec![owner.mark()]),
        }
    }
}

fn is_domain(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '*')
        })
}

fn delete(key: &SetKey) -> Change {
    Change {
        name: key.fqdn.clone(),
        record_type: key.record_type.clone(),
        changetype: "DELETE",
        ttl: None,
        records: None,
        comments: None,
    }
}

fn find<'a>(zone: &'a Zone, key: &SetKey) -> Option<&'a RecordSet> {
    zone.rrsets
        .iter()
        .find(|set| set.name.eq_ignore_ascii_case(&key.fqdn) && set.record_type.eq_ignore_ascii_case(&key.record_type))
}

/// What converging a zone takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// The zone already holds the record set.
    InSync,
    /// These changes make it hold it; `created` when the record set did not exist.
    Write {
        /// The changes, in order.
        changes: Vec<Change>,
        /// Whether the desired record set is new.
        created: bool,
    },
    /// A record set of that name and type exists and is not this object's: it is left alone.
    Conflict(SetKey),
}

/// The changes that make `zone` hold `desired` for `owner`. `previous` is the record set the object kept before
/// (from its status); when the spec moved it elsewhere, the old one is deleted if the owner still holds it.
pub fn converge(zone: &Zone, desired: &Desired, previous: Option<&SetKey>, owner: &Owner) -> Plan {
    let existing = find(zone, &desired.key);
    if let Some(set) = existing
        && !owner.owns(set)
    {
        return Plan::Conflict(desired.key.clone());
    }
    let mut changes = Vec::new();
    if let Some(previous) = previous.filter(|previous| **previous != desired.key)
        && find(zone, previous).is_some_and(|set| owner.owns(set))
    {
        changes.push(delete(previous));
    }
    if !existing.is_some_and(|set| desired.is_held_by(set)) {
        changes.push(desired.replace(owner));
    }
    if changes.is_empty() {
        Plan::InSync
    } else {
        Plan::Write {
            changes,
            created: existing.is_none(),
        }
    }
}

/// The changes that remove every record set of `keys` that `owner` holds in `zone`; others are left alone.
pub fn clean_up(zone: &Zone, keys: &[SetKey], owner: &Owner) -> Vec<Change> {
    let mut changes: Vec<Change> = Vec::new();
    for key in keys {
        let owned = find(zone, key).is_some_and(|set| owner.owns(set));
        if owned
            && !changes
                .iter()
                .any(|change| change.name == key.fqdn && change.record_type == key.record_type)
        {
            changes.push(delete(key));
        }
    }
    changes
}
