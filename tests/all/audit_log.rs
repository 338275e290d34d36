//! The write history of a real API server, from its audit log (`logs/audit.log` of a control plane started with
//! `RealOptions::audit`, or with a node): who wrote which object when. A host Pod's writes carry its name, which the
//! kubelet's bound ServiceAccount token puts in `user.extra["authentication.kubernetes.io/pod-name"]`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// One write the API server completed.
#[derive(Debug, Clone)]
pub struct Write {
    /// The writing Pod (empty for a user that is no Pod).
    pub pod: String,
    pub user: String,
    /// The user `user` acted as by impersonation (`impersonatedUser.username`); empty when none.
    pub impersonated: String,
    /// `configmaps`, `configmapsets`, …
    pub resource: String,
    /// `status`, …; empty for the object itself.
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// `requestReceivedTimestamp`, RFC 3339 with microseconds (sorts as text).
    pub received: String,
    /// The request's path and query (the field manager of a patch is in it).
    pub uri: String,
    /// The response's status code: a write refused (a failed precondition, a conflict) changed nothing.
    pub code: u16,
}

impl Write {
    /// Whether it is the sharding protocol's own write (the sharder's labels, a drain acknowledgement: field manager
    /// `wasm-reconciler-sharder`) rather than a reconcile's.
    pub fn is_sharding_protocol(&self) -> bool {
        self.uri.contains("fieldManager=wasm-reconciler-sharder")
    }

    /// Whether the API server carried it out (a 2xx answer).
    pub fn accepted(&self) -> bool {
        (200..300).contains(&self.code)
    }
}

/// Every completed write of the audit log at `path`.
pub fn writes(path: &Path) -> anyhow::Result<Vec<Write>> {
    let text = std::fs::read_to_string(path)?;
    let mut found = Vec::new();
    for line in text.lines() {
        let event: Value = serde_json::from_str(line)?;
        if event["stage"] != "ResponseComplete" {
            continue;
        }
        let verb = event["verb"].as_str().unwrap_or_default();
        if !matches!(verb, "create" | "update" | "patch" | "delete") {
            continue;
        }
        let object = &event["objectRef"];
        found.push(Write {
            pod: event["user"]["extra"]["authentication.kubernetes.io/pod-name"][0]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            user: event["user"]["username"].as_str().unwrap_or_default().to_owned(),
            impersonated: event["impersonatedUser"]["username"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            resource: object["resource"].as_str().unwrap_or_default().to_owned(),
            subresource: object["subresource"].as_str().unwrap_or_default().to_owned(),
            namespace: object["namespace"].as_str().unwrap_or_default().to_owned(),
            name: object["name"].as_str().unwrap_or_default().to_owned(),
            received: event["requestReceivedTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            uri: event["requestURI"].as_str().unwrap_or_default().to_owned(),
            code: event["responseStatus"]["code"]
                .as_u64()
                .and_then(|code| u16::try_from(code).ok())
                .unwrap_or_default(),
        });
    }
    Ok(found)
}

/// The ConfigMapSet a write in `namespace` concerns: the set itself, or the owner of a child named `<set>-<index>`.
pub fn configmapset_of(write: &Write) -> Option<String> {
    match write.resource.as_str() {
        "configmapsets" => Some(write.name.clone()),
        "configmaps" => {
            let (set, index) = write.name.rsplit_once('-')?;
            index.parse::<u32>().is_ok().then(|| set.to_owned())
        }
        _ => None,
    }
}

/// Per ConfigMapSet of `namespace`, the Pods whose reconciles wrote it (the set, its status, its children; not the
/// sharding protocol's label writes) in the order of their writes, repeats collapsed: `[a, b]` is a handover,
/// `[a, b, a]` two Pods taking turns.
pub fn writers_per_set(writes: &[Write], namespace: &str) -> BTreeMap<String, Vec<String>> {
    let mut ordered: Vec<&Write> = writes
        .iter()
        .filter(|w| w.namespace == namespace && !w.pod.is_empty() && !w.is_sharding_protocol())
        .collect();
    ordered.sort_by(|a, b| a.received.cmp(&b.received));
    let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for write in ordered {
        let Some(set) = configmapset_of(write) else { continue };
        let sequence = writers.entry(set).or_default();
        if sequence.last() != Some(&write.pod) {
            sequence.push(write.pod.clone());
        }
    }
    writers
}

/// Sets whose writers took turns: a Pod wrote again after another Pod had written (`A→B→A`).
pub fn turn_taking(writers: &BTreeMap<String, Vec<String>>) -> Vec<(&String, &Vec<String>)> {
    writers
        .iter()
        .filter(|(_, sequence)| sequence.iter().enumerate().any(|(i, pod)| sequence[..i].contains(pod)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(pod: &str, name: &str, received: &str) -> Write {
        Write {
            pod: pod.into(),
            user: "system:serviceaccount:wasm-reconciler:wasm-reconciler".into(),
            impersonated: String::new(),
            resource: if name.ends_with(|c: char| c.is_ascii_digit()) {
                "configmaps".into()
            } else {
                "configmapsets".into()
            },
            subresource: String::new(),
            namespace: "churn".into(),
            name: name.into(),
            received: received.into(),
            uri: format!("/api/v1/namespaces/churn/configmaps/{name}?fieldManager=wasm-reconciler%2Fconfigmapset"),
            code: 200,
        }
    }

    #[test]
    fn a_handover_is_fine_and_taking_turns_is_found() {
        let writes = [
            write("a", "s", "2026-01-01T00:00:01.000000Z"),
            write("a", "s-0", "2026-01-01T00:00:02.000000Z"),
            write("b", "s-1", "2026-01-01T00:00:03.000000Z"),
            write("b", "t", "2026-01-01T00:00:03.500000Z"),
            write("a", "t-0", "2026-01-01T00:00:04.000000Z"),
            write("b", "t", "2026-01-01T00:00:05.000000Z"),
        ];
        let mut sharder = write("b", "s", "2026-01-01T00:00:01.500000Z");
        sharder.uri = "/apis/examples.wasm-reconciler.io/v1alpha1/namespaces/churn/configmapsets/s?fieldManager=wasm-reconciler-sharder".into();
        let writes: Vec<Write> = writes.into_iter().chain([sharder]).collect();
        let writers = writers_per_set(&writes, "churn");
        assert_eq!(
            writers["s"],
            ["a", "b"],
            "the sharder's label writes are not a reconcile's"
        );
        assert_eq!(writers["t"], ["b", "a", "b"]);
        let found = turn_taking(&writers);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "t");
    }
}
