//! The `dnsrecord` example plugin managing a real PowerDNS (started by the tests on loopback): records follow their
//! objects through create, edit and delete, the finalizer removes a record before its object goes, an unreachable
//! server means backoff with the reason on the object and recovery when it returns, a destination the settings do
//! not allow is denied without a connection, and the API key from a Secret appears nowhere the host writes.

use std::io::Write as _;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasm_reconciler::cli::serve::HostOptions;

use crate::harness::{Cluster, Host, PluginFiles, condition, example_crd, wait_for, write_plugin};
use crate::kinds::{
    CONVERGE, create_when_served, dnsrecord_resource, events_about, failed_with, namespaced, occurrences, reconciled,
    wait_event, wait_gone, wait_object,
};
use crate::powerdns::PowerDns;
use crate::telemetry_probe::{free_local_addr, http_get, sum_samples};

const ZONE: &str = "example.org.";
const NAMESPACE: &str = "default";
/// The Secret holding the API key, in the host's namespace (its kubeconfig's: `default`).
const SECRET: &str = "pdns-api";

/// A `DNSRecord` of `name` in the zone.
fn record(name: &str, ttl: u32, records: &[&str]) -> Value {
    json!({
        "apiVersion": "examples.wasm-reconciler.io/v1alpha1",
        "kind": "DNSRecord",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"zone": ZONE, "name": name, "type": "A", "ttl": ttl, "records": records},
    })
}

/// Installs the plugin, talking to `server`, allowed to reach `allowed` only, with its API key from the Secret.
fn install_dnsrecord(plugins: &Path, server: &str, allowed: &str) -> anyhow::Result<()> {
    write_plugin(
        plugins,
        &PluginFiles {
            name: "dnsrecord",
            wasm: wasm_reconciler_artifacts::DNSRECORD,
            crd: Some(&example_crd("dnsrecord")),
            config: Some(&format!("server: {server}\n")),
            settings: Some(&format!(
                "allowedOutboundHosts: [\"{allowed}\"]\nvariables:\n  pdns_api_key: {SECRET}/api-key\n"
            )),
        },
    )?;
    Ok(())
}

async fn create_secret(client: &kube::Client, api_key: &str) -> anyhow::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(SECRET.into()),
            ..Default::default()
        },
        data: Some([("api-key".to_owned(), ByteString(api_key.as_bytes().to_vec()))].into()),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &secret).await?;
    Ok(())
}

/// A cluster, a PowerDNS with the zone, the Secret, and the plugin installed (no host yet).
struct Setup {
    cluster: Cluster,
    client: kube::Client,
    powerdns: PowerDns,
    plugins: PathBuf,
    records: Api<DynamicObject>,
}

impl Setup {
    async fn start(api_key: &str) -> anyhow::Result<Self> {
        let cluster = Cluster::start().await?;
        let client = cluster.client().await?;
        let powerdns = PowerDns::start(&cluster.dir.path().join("powerdns"), api_key).await?;
        powerdns.create_zone(ZONE).await?;
        create_secret(&client, api_key).await?;
        let plugins = cluster.dir.path().join("plugins");
        install_dnsrecord(&plugins, &powerdns.url(), &powerdns.url())?;
        let records = namespaced(&client, NAMESPACE, &dnsrecord_resource());
        Ok(Self {
            cluster,
            client,
            powerdns,
            plugins,
            records,
        })
    }

    /// Waits until PowerDNS holds exactly `expected` for `name`.
    async fn wait_contents(&self, name: &str, expected: &[&str]) {
        let fqdn = format!("{name}.{ZONE}");
        wait_for(CONVERGE, &format!("PowerDNS to hold {expected:?} for {fqdn}"), || {
            let fqdn = fqdn.clone();
            async move {
                let contents = self.powerdns.contents(ZONE, &fqdn, "A").await.ok()?;
                (contents == expected).then_some(())
            }
        })
        .await;
    }

    async fn edit(&self, name: &str, ttl: u32, records: &[&str]) -> anyhow::Result<()> {
        let patch = json!({"spec": {"ttl": ttl, "records": records}});
        self.records
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }
}

fn ready(object: &Value) -> bool {
    condition(object, "Ready") == Some("True") && condition(object, "Reconciled") == Some("True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_follow_their_objects_and_the_finalizer_deletes_them_first() -> anyhow::Result<()> {
    let setup = Setup::start("e2e-api-key").await?;
    let host = Host::start(&setup.cluster, Host::dev_options(&setup.plugins)).await?;

    // Create: the record set appears in PowerDNS, owned by the object, and DNS serves it.
    create_when_served(&setup.records, record("www", 300, &["192.0.2.10"])).await?;
    let object = wait_object(&setup.records, "www", "www Ready", ready).await;
    assert_eq!(object["status"]["fqdn"], "www.example.org.");
    assert_eq!(
        object["metadata"]["finalizers"],
        json!(["examples.wasm-reconciler.io/dns-record"])
    );
    let set = setup
        .powerdns
        .rrset(ZONE, "www.example.org.", "A")
        .await?
        .expect("the record set exists in PowerDNS");
    assert_eq!(set["ttl"], 300);
    let uid = object["metadata"]["uid"].as_str().expect("a uid");
    assert!(
        set["comments"][0]["content"].as_str().unwrap_or_default().contains(uid),
        "{set}"
    );
    assert_eq!(
        setup.powerdns.resolve_a("www.example.org.")?,
        [Ipv4Addr::new(192, 0, 2, 10)]
    );
    wait_event(&setup.client, NAMESPACE, "www", "Normal", "RecordCreated", |_| true).await;

    // Edit: the record set is replaced.
    setup.edit("www", 60, &["192.0.2.21", "192.0.2.20"]).await?;
    setup.wait_contents("www", &["192.0.2.20", "192.0.2.21"]).await;
    assert_eq!(
        setup
            .powerdns
            .rrset(ZONE, "www.example.org.", "A")
            .await?
            .expect("the record set")["ttl"],
        60
    );
    assert_eq!(
        setup.powerdns.resolve_a("www.example.org.")?,
        [Ipv4Addr::new(192, 0, 2, 20), Ipv4Addr::new(192, 0, 2, 21)]
    );
    wait_event(&setup.client, NAMESPACE, "www", "Normal", "RecordUpdated", |_| true).await;

    // A record set someone else made is never taken over.
    let theirs = json!({"rrsets": [{"name": "api.example.org.", "type": "A", "ttl": 300, "changetype": "REPLACE",
        "records": [{"content": "198.51.100.7", "disabled": false}]}]});
    let (status, body) = setup
        .powerdns
        .api("PATCH", "/api/v1/servers/localhost/zones/example.org.", Some(&theirs))
        .await?;
    assert_eq!(status, 204, "{body}");
    create_when_served(&setup.records, record("api", 300, &["192.0.2.99"])).await?;
    let conflict = wait_object(&setup.records, "api", "api in conflict", |object| {
        condition(object, "Ready") == Some("False")
    })
    .await;
    assert_eq!(
        crate::harness::condition_object(&conflict, "Ready").expect("Ready")["reason"],
        "RecordConflict"
    );
    assert_eq!(
        setup.powerdns.contents(ZONE, "api.example.org.", "A").await?,
        ["198.51.100.7"]
    );

    // Delete: the finalizer removes the record set, then the object goes; the other record set stays.
    setup.records.delete("www", &DeleteParams::default()).await?;
    setup.records.delete("api", &DeleteParams::default()).await?;
    wait_gone(&setup.records, "www", "www deleted").await;
    assert!(
        setup.powerdns.rrset(ZONE, "www.example.org.", "A").await?.is_none(),
        "the object went before its record set"
    );
    assert!(setup.powerdns.resolve_a("www.example.org.")?.is_empty());
    wait_gone(&setup.records, "api", "api deleted").await;
    assert_eq!(
        setup.powerdns.contents(ZONE, "api.example.org.", "A").await?,
        ["198.51.100.7"]
    );
    host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_means_backoff_with_the_reason_and_recovery() -> anyhow::Result<()> {
    let mut setup = Setup::start("e2e-api-key").await?;
    let host = Host::start(&setup.cluster, Host::dev_options(&setup.plugins)).await?;
    create_when_served(&setup.records, record("mail", 300, &["192.0.2.30"])).await?;
    wait_object(&setup.records, "mail", "mail Ready", ready).await;

    // PowerDNS goes away while the record changes: the reconcile fails with the reason, and is retried with backoff.
    // A request already under way when the server stops may end as a protocol error first; every later attempt
    // finds the port closed.
    setup.powerdns.stop();
    setup.edit("mail", 300, &["192.0.2.31"]).await?;
    let failed = wait_object(
        &setup.records,
        "mail",
        "mail failing: PowerDNS is unreachable",
        |object| {
            failed_with(object, "PluginError")
                && reconciled(object).is_some_and(|(_, _, message)| message.contains("is unreachable"))
        },
    )
    .await;
    let (_, _, message) = reconciled(&failed).expect("a Reconciled condition");
    assert!(
        message.contains("is unreachable") && message.contains("connection refused"),
        "{message}"
    );
    let warning = wait_event(&setup.client, NAMESPACE, "mail", "Warning", "PluginError", |event| {
        occurrences(event) >= 3
    })
    .await;
    let backed_off = occurrences(&warning);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let later = events_about(&setup.client, NAMESPACE, "mail")
        .await?
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("PluginError"))
        .map(|event| occurrences(&event))
        .max()
        .unwrap_or_default();
    // Backoff doubles from 5 ms: half a second holds a handful of attempts more, not hundreds.
    assert!(
        later - backed_off < 10,
        "{backed_off} then {later} attempts: no backoff"
    );

    // It comes back: the next retry goes through and the change reaches DNS.
    setup.powerdns.resume().await?;
    setup.wait_contents("mail", &["192.0.2.31"]).await;
    wait_object(&setup.records, "mail", "mail Ready again", ready).await;
    assert_eq!(
        setup.powerdns.resolve_a("mail.example.org.")?,
        [Ipv4Addr::new(192, 0, 2, 31)]
    );

    // Deleted while PowerDNS is down, the object waits for its cleanup.
    setup.powerdns.stop();
    setup.records.delete("mail", &DeleteParams::default()).await?;
    // The attempt PowerDNS went away in the middle of may fail otherwise (a connection reset); the next ones find it
    // unreachable.
    let waiting = wait_object(
        &setup.records,
        "mail",
        "mail deleting, cleanup failing: unreachable",
        |object| {
            object["metadata"]["deletionTimestamp"].is_string()
                && failed_with(object, "PluginError")
                && reconciled(object).is_some_and(|(_, _, message)| message.contains("unreachable"))
        },
    )
    .await;
    assert!(reconciled(&waiting).expect("Reconciled").2.contains("unreachable"));
    setup.powerdns.resume().await?;
    wait_gone(&setup.records, "mail", "mail deleted once PowerDNS is back").await;
    assert!(setup.powerdns.rrset(ZONE, "mail.example.org.", "A").await?.is_none());
    host.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_not_allowed_is_denied_and_never_contacted() -> anyhow::Result<()> {
    let setup = Setup::start("e2e-api-key").await?;
    // The plugin is configured for another "PowerDNS" on a port its settings do not allow.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    let elsewhere = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    install_dnsrecord(&setup.plugins, &elsewhere, &setup.powerdns.url())?;
    let telemetry = free_local_addr();
    let host = Host::start(
        &setup.cluster,
        HostOptions {
            metrics_addr: Some(telemetry),
            ..Host::dev_options(&setup.plugins)
        },
    )
    .await?;
    create_when_served(&setup.records, record("www", 300, &["192.0.2.10"])).await?;
    let failed = wait_object(&setup.records, "www", "www failing: denied", |object| {
        failed_with(object, "PluginError")
    })
    .await;
    let (_, _, message) = reconciled(&failed).expect("a Reconciled condition");
    assert!(
        message.contains("the host denied the request") && message.contains(&elsewhere),
        "{message}"
    );
    let denied = wait_for(CONVERGE, "denied requests counted", || async move {
        let (_, metrics) = http_get(telemetry, "/metrics").await?;
        let denied = sum_samples(
            &metrics,
            "wasm_reconciler_outbound_requests_total",
            &[r#"plugin="dnsrecord""#, r#"result="denied""#],
        );
        (denied >= 1.0).then_some(denied)
    })
    .await;
    assert!(denied >= 1.0);
    assert_eq!(
        std::iter::from_fn(|| listener.accept().ok()).count(),
        0,
        "a denied request reached its destination"
    );
    host.stop().await
}

/// Log output of a host, shared with the writer every thread of its runtime logs into.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CapturedLogs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

/// A host on a runtime of its own whose every thread logs at `trace` into `logs`.
fn logged_host(kubeconfig: &Path, options: HostOptions, logs: &CapturedLogs) -> anyhow::Result<Host> {
    let writer = logs.clone();
    let dispatch = tracing::Dispatch::new(
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("trace"))
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("logged-host")
        .on_thread_start(move || {
            // Kept for the thread's whole life: every log line of the host on it is captured.
            std::mem::forget(tracing::dispatcher::set_default(&dispatch));
        })
        .enable_all()
        .build()?;
    Ok(Host::start_on(runtime, kubeconfig, options))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_appears_in_no_log_event_status_or_metric() -> anyhow::Result<()> {
    let api_key = "s3cr3t-pdns-key-7f41c9";
    let encoded = "czNjcjN0LXBkbnMta2V5LTdmNDFjOQ==";
    let mut setup = Setup::start(api_key).await?;
    let logs = CapturedLogs::default();
    let telemetry = free_local_addr();
    let host = logged_host(
        &setup.cluster.kubeconfig,
        HostOptions {
            metrics_addr: Some(telemetry),
            ..Host::dev_options(&setup.plugins)
        },
        &logs,
    )?;
    // The key works (PowerDNS accepts it), through a create, an edit, a failure and a delete.
    create_when_served(&setup.records, record("www", 300, &["192.0.2.10"])).await?;
    wait_object(&setup.records, "www", "www Ready", ready).await;
    setup.edit("www", 300, &["192.0.2.11"]).await?;
    setup.wait_contents("www", &["192.0.2.11"]).await;
    setup.powerdns.stop();
    setup.edit("www", 300, &["192.0.2.12"]).await?;
    wait_object(&setup.records, "www", "www failing", |object| {
        failed_with(object, "PluginError")
    })
    .await;
    setup.powerdns.resume().await?;
    setup.wait_contents("www", &["192.0.2.12"]).await;
    let object = serde_json::to_string(&setup.records.get("www").await?)?;
    setup.records.delete("www", &DeleteParams::default()).await?;
    wait_gone(&setup.records, "www", "www deleted").await;

    let events: Api<Event> = Api::namespaced(setup.client.clone(), NAMESPACE);
    let events = serde_json::to_string(&events.list(&ListParams::default()).await?.items)?;
    let (_, metrics) = http_get(telemetry, "/metrics").await.expect("the host serves /metrics");
    host.stop().await?;
    let logs = logs.text();
    assert!(
        logs.contains("outbound request") && logs.contains("reconcile"),
        "the host's trace logs were captured"
    );
    let mut leaks = Vec::new();
    for (place, text) in [
        ("logs", &logs),
        ("events", &events),
        ("object", &object),
        ("metrics", &metrics),
    ] {
        for secret in [api_key, encoded] {
            if text.contains(secret) {
                leaks.push(place);
            }
        }
    }
    if !leaks.is_empty() {
        let mut dump = std::fs::File::create(setup.cluster.dir.path().join("leak.log"))?;
        dump.write_all(logs.as_bytes())?;
    }
    assert!(leaks.is_empty(), "the API key leaked into: {leaks:?}");
    Ok(())
}
