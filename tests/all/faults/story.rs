//! Stories: what a user does with one plugin, step by step, each step an action and the state it settles in. Every
//! plan runs one story in a namespace of its own; the reference run of the story records the writes fault plans
//! are made from and the end state they must reach.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::harness::{condition, example_crd, wait_for};
use crate::kinds::{
    MIRROR_CRD, config_map_resource, configmapset_resource, dnsrecord_resource, mirror_resource, webapp_resource,
};
use crate::powerdns::PowerDns;

/// How long one step may take to settle: generous, for two busy cores running several plans at once.
pub const SETTLE: Duration = Duration::from_secs(90);

/// The API key the PowerDNS of the dnsrecord story accepts.
pub const POWERDNS_KEY: &str = "fault-plans-key";

/// The ConfigMap every namespace of a real cluster gets from the root CA publisher, whenever it gets to it: not
/// part of any story.
const ROOT_CA: &str = "kube-root-ca.crt";

/// One plugin and what a user does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Story {
    /// A ConfigMapSet scaled up in bursts, scaled down with a new template, deleted through its finalizer.
    Configmapset,
    /// A WebApp created, rolled to a new image and configuration, its configuration removed, deleted.
    Webapp,
    /// A DNSRecord created, edited and deleted against a real PowerDNS, through its finalizer.
    Dnsrecord,
    /// A Mirror copying a ConfigMap it does not own: its source changes, its copies shrink, it is deleted.
    Mirror,
}

/// The world one plan's story acts on.
#[derive(Clone)]
pub struct Scene {
    /// Admin access to the API server, directly (not through a front).
    pub client: kube::Client,
    /// The plan's namespace: its objects, and the only one its hosts reconcile.
    pub namespace: String,
    /// The PowerDNS of the dnsrecord story.
    pub powerdns: Option<Arc<PowerDns>>,
}

impl Scene {
    fn api(&self, resource: &ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, resource)
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The dnsrecord story's zone: one per plan.
    pub fn zone(&self) -> String {
        format!("{}.example.org.", self.namespace)
    }

    fn powerdns(&self) -> &PowerDns {
        self.powerdns
            .as_deref()
            .expect("the dnsrecord story runs with a PowerDNS")
    }
}

/// A plugin as a plan's host loads it from its directory.
pub struct PluginSetup {
    pub name: &'static str,
    pub wasm: &'static str,
    pub crd: String,
    pub config: Option<String>,
    pub settings: String,
}

/// A normalised snapshot of a story's objects (and, for dnsrecord, its zone): what must be equal between a plan
/// and the reference.
pub type Snapshot = BTreeMap<String, Value>;

impl Story {
    /// Every story.
    pub const ALL: [Story; 4] = [Story::Configmapset, Story::Webapp, Story::Dnsrecord, Story::Mirror];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Configmapset => "configmapset",
            Self::Webapp => "webapp",
            Self::Dnsrecord => "dnsrecord",
            Self::Mirror => "mirror",
        }
    }

    /// The CRD files the story's kinds need, installed once per cluster.
    pub fn crd(self) -> String {
        match self {
            Self::Configmapset | Self::Webapp | Self::Dnsrecord => example_crd(self.name()),
            Self::Mirror => MIRROR_CRD.to_owned(),
        }
    }

    /// The primary kind.
    pub fn primary(self) -> ApiResource {
        match self {
            Self::Configmapset => configmapset_resource(),
            Self::Webapp => webapp_resource(),
            Self::Dnsrecord => dnsrecord_resource(),
            Self::Mirror => mirror_resource(),
        }
    }

    /// The primary object's name.
    pub fn primary_name(self) -> &'static str {
        match self {
            Self::Configmapset => "web",
            Self::Webapp => "shop",
            Self::Dnsrecord => "www",
            Self::Mirror => "m",
        }
    }

    /// The kinds whose objects are journaled and compared: the primary and its children.
    pub fn resources(self) -> Vec<ApiResource> {
        let mut resources = vec![self.primary()];
        match self {
            Self::Configmapset | Self::Mirror => resources.push(config_map_resource()),
            Self::Webapp => resources.extend([config_map_resource(), deployment_resource(), service_resource()]),
            Self::Dnsrecord => {}
        }
        resources
    }

    /// The plugin of the story, limited to the scene's namespace.
    pub fn plugin(self, scene: &Scene) -> PluginSetup {
        let namespaces = format!("namespaces: [{}]\n", scene.namespace);
        match self {
            Self::Configmapset => PluginSetup {
                name: "configmapset",
                wasm: wasm_reconciler_artifacts::CONFIGMAPSET,
                crd: self.crd(),
                config: None,
                settings: namespaces,
            },
            Self::Webapp => PluginSetup {
                name: "webapp",
                wasm: wasm_reconciler_artifacts::WEBAPP,
                crd: self.crd(),
                config: None,
                settings: namespaces,
            },
            Self::Dnsrecord => {
                let url = scene.powerdns().url();
                PluginSetup {
                    name: "dnsrecord",
                    wasm: wasm_reconciler_artifacts::DNSRECORD,
                    crd: self.crd(),
                    config: Some(format!("server: {url}\n")),
                    settings: format!(
                        "{namespaces}allowedOutboundHosts: [\"{url}\"]\nvariables:\n  pdns_api_key: {}/pdns-api/api-key\n",
                        scene.namespace
                    ),
                }
            }
            Self::Mirror => PluginSetup {
                name: "mirror",
                wasm: wasm_reconciler_artifacts::MIRROR,
                crd: self.crd(),
                config: None,
                settings: namespaces,
            },
        }
    }

    /// What the story needs before any host runs: the zone and the API key's Secret, the mirror's source.
    pub async fn prepare(self, scene: &Scene) -> anyhow::Result<()> {
        match self {
            Self::Dnsrecord => {
                scene.powerdns().create_zone(&scene.zone()).await?;
                let secret = Secret {
                    metadata: kube::api::ObjectMeta {
                        name: Some("pdns-api".into()),
                        ..Default::default()
                    },
                    data: Some([("api-key".to_owned(), ByteString(POWERDNS_KEY.as_bytes().to_vec()))].into()),
                    ..Default::default()
                };
                Api::<Secret>::namespaced(scene.client.clone(), &scene.namespace)
                    .create(&PostParams::default(), &secret)
                    .await?;
            }
            Self::Mirror => {
                let source: ConfigMap =
                    serde_json::from_value(json!({"metadata": {"name": "source"}, "data": {"version": "v1"}}))?;
                scene.config_maps().create(&PostParams::default(), &source).await?;
            }
            Self::Configmapset | Self::Webapp => {}
        }
        Ok(())
    }

    /// How many steps the story has; the last deletes the primary.
    pub fn steps(self) -> usize {
        match self {
            Self::Configmapset | Self::Dnsrecord => 3,
            Self::Webapp | Self::Mirror => 4,
        }
    }

    /// Runs step `step`: its action, then waits until it has settled.
    pub async fn step(self, scene: &Scene, step: usize) -> anyhow::Result<()> {
        self.act(scene, step).await?;
        self.settle(scene, step).await
    }

    /// The action of step `step`.
    pub async fn act(self, scene: &Scene, step: usize) -> anyhow::Result<()> {
        let primary = scene.api(&self.primary());
        let name = self.primary_name();
        if step + 1 == self.steps() {
            primary.delete(name, &DeleteParams::default()).await?;
            return Ok(());
        }
        match (self, step) {
            (_, 0) => {
                let object: DynamicObject = serde_json::from_value(self.manifest(scene))?;
                primary.create(&PostParams::default(), &object).await?;
            }
            (Self::Mirror, 1) => {
                scene
                    .config_maps()
                    .patch(
                        "source",
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"version": "v2"}})),
                    )
                    .await?;
            }
            _ => {
                primary
                    .patch(name, &PatchParams::default(), &Patch::Merge(self.edit(step)))
                    .await?;
            }
        }
        Ok(())
    }

    /// The primary as step 0 creates it.
    fn manifest(self, scene: &Scene) -> Value {
        let resource = self.primary();
        let spec = match self {
            Self::Configmapset => json!({"replicas": 3, "burst": 2, "template": {"data": {"greeting": "hello"}}}),
            Self::Webapp => {
                json!({"image": "nginx:1.27", "replicas": 2, "port": 8080, "config": {"LOG_LEVEL": "info"}})
            }
            Self::Dnsrecord => json!({"zone": scene.zone(), "name": "www", "type": "A", "ttl": 300,
                "records": ["192.0.2.10"]}),
            Self::Mirror => json!({"source": "source", "copies": 2}),
        };
        json!({
            "apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": self.primary_name(), "namespace": scene.namespace},
            "spec": spec,
        })
    }

    /// The merge patch step `step` (neither the first nor the last) applies to the primary.
    pub fn edit(self, step: usize) -> Value {
        match (self, step) {
            (Self::Configmapset, _) => json!({"spec": {"replicas": 1, "template": {"data": {"greeting": "bye"}}}}),
            (Self::Webapp, 1) => json!({"spec": {"image": "nginx:1.28", "config": {"LOG_LEVEL": "debug"}}}),
            (Self::Webapp, _) => json!({"spec": {"config": null}}),
            (Self::Dnsrecord, _) => json!({"spec": {"ttl": 60, "records": ["192.0.2.21", "192.0.2.20"]}}),
            (Self::Mirror, _) => json!({"spec": {"copies": 1}}),
        }
    }

    /// Edits a test actor makes to the primary before step 1's own, all hidden from the host: only step 1's result
    /// may show (each sets only fields step 1 sets again, so the spec ends as in the reference).
    pub fn intermediate_edits(self) -> Vec<Value> {
        match self {
            Self::Configmapset => vec![
                json!({"spec": {"replicas": 5}}),
                json!({"spec": {"replicas": 0, "template": {"data": {"greeting": "never seen"}}}}),
            ],
            Self::Webapp => vec![
                json!({"spec": {"image": "nginx:1.99"}}),
                json!({"spec": {"image": "nginx:2.0", "config": {"LOG_LEVEL": "trace"}}}),
            ],
            Self::Dnsrecord => vec![
                json!({"spec": {"ttl": 999, "records": ["198.51.100.1"]}}),
                json!({"spec": {"ttl": 5}}),
            ],
            Self::Mirror => vec![json!({"spec": {"copies": 3}}), json!({"spec": {"copies": 2}})],
        }
    }

    /// A child that exists before step 1 and still after it (test actors delete or recreate it), if the plugin has
    /// children.
    pub fn kept_child(self) -> Option<&'static str> {
        match self {
            Self::Configmapset => Some("web-0"),
            Self::Webapp => Some("shop-config"),
            Self::Mirror => Some("m-copy-0"),
            Self::Dnsrecord => None,
        }
    }

    /// Waits until step `step` has settled: the state a user waits for before going on.
    pub async fn settle(self, scene: &Scene, step: usize) -> anyhow::Result<()> {
        let what = format!("{} step {step} to settle in {}", self.name(), scene.namespace);
        let last = step + 1 == self.steps();
        wait_for(SETTLE, &what, || async {
            let settled = if last {
                self.is_gone(scene).await
            } else {
                self.is_settled(scene, step).await
            };
            settled.ok().filter(|settled| *settled)
        })
        .await;
        Ok(())
    }

    /// Whether the primary and its children (and its record) are gone.
    async fn is_gone(self, scene: &Scene) -> anyhow::Result<bool> {
        if scene.api(&self.primary()).get_opt(self.primary_name()).await?.is_some() {
            return Ok(false);
        }
        Ok(match self {
            Self::Configmapset => story_config_maps(scene).await?.is_empty(),
            // The source stays: the user made it, and no Mirror owns it.
            Self::Mirror => story_config_maps(scene)
                .await?
                .iter()
                .all(|c| c.metadata.name.as_deref() == Some("source")),
            Self::Webapp => {
                story_config_maps(scene).await?.is_empty()
                    && scene
                        .api(&deployment_resource())
                        .list(&ListParams::default())
                        .await?
                        .items
                        .is_empty()
                    && scene
                        .api(&service_resource())
                        .list(&ListParams::default())
                        .await?
                        .items
                        .is_empty()
            }
            Self::Dnsrecord => {
                let fqdn = format!("www.{}", scene.zone());
                scene.powerdns().contents(&scene.zone(), &fqdn, "A").await?.is_empty()
            }
        })
    }

    /// Whether a step that is not the last has settled.
    async fn is_settled(self, scene: &Scene, step: usize) -> anyhow::Result<bool> {
        let Some(primary) = scene.api(&self.primary()).get_opt(self.primary_name()).await? else {
            return Ok(false);
        };
        let primary = serde_json::to_value(primary)?;
        let generation = primary["metadata"]["generation"].as_i64();
        let current = primary["status"]["observedGeneration"].as_i64() == generation
            && condition(&primary, "Reconciled") == Some("True");
        if !current {
            return Ok(false);
        }
        let children = story_config_maps(scene).await?;
        let data = |name: &str, key: &str| -> Option<String> {
            children
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(name))?
                .data
                .as_ref()?
                .get(key)
                .cloned()
        };
        let names: Vec<&str> = children.iter().filter_map(|c| c.metadata.name.as_deref()).collect();
        Ok(match (self, step) {
            (Self::Configmapset, 0) => {
                names == ["web-0", "web-1", "web-2"]
                    && names.iter().all(|n| data(n, "greeting").as_deref() == Some("hello"))
                    && condition(&primary, "Ready") == Some("True")
                    && primary["status"]["replicas"] == 3
            }
            (Self::Configmapset, _) => {
                names == ["web-0"]
                    && data("web-0", "greeting").as_deref() == Some("bye")
                    && condition(&primary, "Ready") == Some("True")
                    && primary["status"]["replicas"] == 1
            }
            (Self::Webapp, _) => {
                let image = if step == 0 { "nginx:1.27" } else { "nginx:1.28" };
                let deployment = scene.api(&deployment_resource()).get_opt("shop").await?;
                let deployed =
                    deployment.is_some_and(|d| d.data["spec"]["template"]["spec"]["containers"][0]["image"] == image);
                let service = scene.api(&service_resource()).get_opt("shop").await?.is_some();
                let config = match step {
                    0 => names == ["shop-config"] && data("shop-config", "LOG_LEVEL").as_deref() == Some("info"),
                    1 => names == ["shop-config"] && data("shop-config", "LOG_LEVEL").as_deref() == Some("debug"),
                    _ => names.is_empty(),
                };
                deployed && service && config
            }
            (Self::Dnsrecord, _) => {
                let fqdn = format!("www.{}", scene.zone());
                let expected: &[&str] = if step == 0 {
                    &["192.0.2.10"]
                } else {
                    &["192.0.2.20", "192.0.2.21"]
                };
                condition(&primary, "Ready") == Some("True")
                    && scene.powerdns().contents(&scene.zone(), &fqdn, "A").await? == expected
            }
            (Self::Mirror, _) => {
                let (copies, version): (&[&str], &str) = match step {
                    0 => (&["m-copy-0", "m-copy-1"], "v1"),
                    1 => (&["m-copy-0", "m-copy-1"], "v2"),
                    _ => (&["m-copy-0"], "v2"),
                };
                let copied: Vec<&str> = names.iter().copied().filter(|n| *n != "source").collect();
                copied == copies
                    && copies.iter().all(|n| data(n, "version").as_deref() == Some(version))
                    && primary["status"]["version"] == version
                    && condition(&primary, "Ready") == Some("True")
            }
        })
    }

    /// The story's objects now, normalised: what a plan and its reference must agree on once the host is quiet.
    pub async fn snapshot(self, scene: &Scene) -> anyhow::Result<Snapshot> {
        let mut snapshot = Snapshot::new();
        for resource in self.resources() {
            for object in scene.api(&resource).list(&ListParams::default()).await?.items {
                let name = object.metadata.name.clone().unwrap_or_default();
                if name == ROOT_CA {
                    continue;
                }
                let value = normalize(serde_json::to_value(&object)?, &scene.namespace);
                snapshot.insert(format!("{} {name}", resource.plural), value);
            }
        }
        if self == Self::Dnsrecord {
            let (status, zone) = scene
                .powerdns()
                .api(
                    "GET",
                    &format!("/api/v1/servers/localhost/zones/{}", scene.zone()),
                    None,
                )
                .await?;
            anyhow::ensure!(status == 200, "reading zone {}: {status} {zone}", scene.zone());
            for rrset in zone["rrsets"].as_array().into_iter().flatten() {
                let mut rrset = rrset.clone();
                // The comment names the owner's uid and the time of the write.
                if let Some(object) = rrset.as_object_mut() {
                    object.remove("comments");
                }
                let key = format!(
                    "rrset {} {}",
                    rrset["name"].as_str().unwrap_or_default(),
                    rrset["type"].as_str().unwrap_or_default()
                );
                if rrset["type"] != "SOA" {
                    snapshot.insert(key.replace(&scene.namespace, "NS"), normalize(rrset, &scene.namespace));
                }
            }
        }
        Ok(snapshot)
    }
}

/// The ConfigMaps of the scene that belong to the story (the root CA's is no part of it), sorted by name.
async fn story_config_maps(scene: &Scene) -> anyhow::Result<Vec<ConfigMap>> {
    let mut items: Vec<ConfigMap> = scene
        .config_maps()
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|c| c.metadata.name.as_deref() != Some(ROOT_CA))
        .collect();
    items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(items)
}

/// An object with what differs between runs taken out: identities, versions, times, addresses, the namespace.
fn normalize(mut object: Value, namespace: &str) -> Value {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "namespace",
            "selfLink",
        ] {
            metadata.remove(field);
        }
        if let Some(owners) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) {
            for owner in owners {
                if let Some(owner) = owner.as_object_mut() {
                    owner.remove("uid");
                }
            }
        }
    }
    if let Some(conditions) = object["status"]["conditions"].as_array_mut() {
        // A list keyed by type: the order tells only which type was written first.
        conditions.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
        for condition in conditions {
            if let Some(condition) = condition.as_object_mut() {
                condition.remove("lastTransitionTime");
                condition.remove("lastUpdateTime");
            }
        }
    }
    if let Some(spec) = object["spec"].as_object_mut() {
        // Service addresses are allocated.
        for field in ["clusterIP", "clusterIPs"] {
            spec.remove(field);
        }
    }
    let text = object.to_string().replace(namespace, "NS");
    serde_json::from_str(&text).expect("a JSON object stays one")
}

/// `apps/v1` Deployment.
fn deployment_resource() -> ApiResource {
    ApiResource {
        group: "apps".into(),
        version: "v1".into(),
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
    }
}

/// Core `v1` Service.
fn service_resource() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Service".into(),
        plural: "services".into(),
    }
}
