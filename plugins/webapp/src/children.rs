//! The children of a `WebApp`: Deployment, Service and ConfigMap, as the plugin's own serde types.
//!
//! Deliberately not k8s-openapi's types: their metadata carries timestamps whose serialisation pulls a
//! date-time library into the component, and each type's serialiser covers every field of the Kubernetes
//! schema. These types hold exactly the fields the plugin sets, so the JSON is the same and the component
//! stays small (see `docs/benchmarks/plugin-runtime.md`).

use std::collections::BTreeMap;

use serde::Serialize;
use wasm_reconciler_sdk::{Gvk, ObjectMeta};

use crate::config_hash::{CONFIG_HASH_ANNOTATION, config_hash};
use crate::resource::WebAppSpec;

/// Name of the only container.
pub const CONTAINER_NAME: &str = "web";
/// Name of the container and Service port.
pub const PORT_NAME: &str = "http";

/// `apps/v1` Deployment.
pub fn deployment_kind() -> Gvk {
    Gvk::new("apps", "v1", "Deployment")
}

/// Core `v1` Service.
pub fn service_kind() -> Gvk {
    Gvk::new("", "v1", "Service")
}

/// Core `v1` ConfigMap.
pub fn config_map_kind() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// An `apps/v1` Deployment with the fields this plugin sets.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    /// `apps/v1`.
    pub api_version: &'static str,
    /// `Deployment`.
    pub kind: &'static str,
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// Replicas, selector and pod template.
    pub spec: DeploymentSpec,
}

/// `spec` of a [`Deployment`].
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSpec {
    /// `spec.replicas`.
    pub replicas: i32,
    /// `spec.selector`.
    pub selector: LabelSelector,
    /// `spec.template`.
    pub template: PodTemplate,
}

/// A label selector by labels only.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// `matchLabels`.
    pub match_labels: BTreeMap<String, String>,
}

/// A pod template: labels, annotations and containers.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct PodTemplate {
    /// Labels and annotations of the pods.
    pub metadata: ObjectMeta,
    /// The pod spec.
    pub spec: PodSpec,
}

/// `spec` of a [`PodTemplate`].
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct PodSpec {
    /// The containers.
    pub containers: Vec<Container>,
}

/// A container with an image, named ports and environment from ConfigMaps.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// `name`.
    pub name: String,
    /// `image`.
    pub image: String,
    /// `imagePullPolicy`, set by the plugin (see [`image_pull_policy`]).
    pub image_pull_policy: &'static str,
    /// `ports`.
    pub ports: Vec<ContainerPort>,
    /// `envFrom`; left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_from: Vec<EnvFromSource>,
}

/// A named container port.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    /// `name`.
    pub name: String,
    /// `containerPort`.
    pub container_port: i32,
    /// `protocol`.
    pub protocol: String,
}

/// Environment from all keys of a ConfigMap.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EnvFromSource {
    /// `configMapRef`.
    pub config_map_ref: LocalReference,
}

/// A reference to an object in the same namespace, by name.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct LocalReference {
    /// `name`.
    pub name: String,
}

/// A core `v1` Service with the fields this plugin sets.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    /// `v1`.
    pub api_version: &'static str,
    /// `Service`.
    pub kind: &'static str,
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// Type, selector and ports.
    pub spec: ServiceSpec,
}

/// `spec` of a [`Service`].
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ServiceSpec {
    /// `type`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `selector`.
    pub selector: BTreeMap<String, String>,
    /// `ports`.
    pub ports: Vec<ServicePort>,
}

/// A Service port forwarding to a container port by number.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// `name`.
    pub name: String,
    /// `port`.
    pub port: i32,
    /// `targetPort`.
    pub target_port: i32,
    /// `protocol`.
    pub protocol: String,
}

/// A core `v1` ConfigMap with the fields this plugin sets.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMap {
    /// `v1`.
    pub api_version: &'static str,
    /// `ConfigMap`.
    pub kind: &'static str,
    /// Name and labels.
    pub metadata: ObjectMeta,
    /// `data`.
    pub data: BTreeMap<String, String>,
}

/// `app.kubernetes.io/name: webapp`, `app.kubernetes.io/instance: <name>`: on every child, and the
/// Deployment's and Service's selector.
pub fn selector_labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "webapp".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), name.to_owned()),
    ])
}

/// `<name>-config`.
pub fn config_map_name(name: &str) -> String {
    format!("{name}-config")
}

/// The Deployment `<name>`: one container `web` running the image on the port, with the configuration
/// as environment (`envFrom` the ConfigMap) and its hash on the pod template when configuration is set.
pub fn deployment(name: &str, spec: &WebAppSpec) -> Deployment {
    let labels = selector_labels(name);
    let pod_annotations = spec
        .config
        .as_ref()
        .map(|config| BTreeMap::from([(CONFIG_HASH_ANNOTATION.to_owned(), config_hash(config))]))
        .unwrap_or_default();
    let env_from = spec
        .config
        .as_ref()
        .map(|_| {
            vec![EnvFromSource {
                config_map_ref: LocalReference {
                    name: config_map_name(name),
                },
            }]
        })
        .unwrap_or_default();
    Deployment {
        api_version: "apps/v1",
        kind: "Deployment",
        metadata: metadata(name.to_owned(), &labels),
        spec: DeploymentSpec {
            replicas: spec.replicas,
            selector: LabelSelector {
                match_labels: labels.clone(),
            },
            template: PodTemplate {
                metadata: ObjectMeta {
                    labels,
                    annotations: pod_annotations,
                    ..ObjectMeta::default()
                },
                spec: PodSpec {
                    containers: vec![Container {
                        name: CONTAINER_NAME.to_owned(),
                        image: spec.image.clone(),
                        image_pull_policy: image_pull_policy(&spec.image),
                        ports: vec![ContainerPort {
                            name: PORT_NAME.to_owned(),
                            container_port: spec.port,
                            protocol: "TCP".to_owned(),
                        }],
                        env_from,
                    }],
                },
            },
        },
    }
}

/// The pull policy Kubernetes gives a container that names none: `Always` for an image without a tag or tagged
/// `latest`, `IfNotPresent` otherwise (a digest counts as a tag).
///
/// The plugin sets it itself. Left to the API server, it is defaulted once, from the image the Deployment was
/// created with, and kept through later image changes: a WebApp moved from `shop:1.4` to `shop` (or `shop:latest`)
/// kept `IfNotPresent`, where one created with `shop` gets `Always` — `plugin check` found that difference.
pub fn image_pull_policy(image: &str) -> &'static str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let has_digest = without_digest.len() != image.len();
    // A tag follows the last ':' after the last '/' (a ':' before it is a registry's port).
    let last_part = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let tag = last_part.split_once(':').map(|(_, tag)| tag);
    match (has_digest, tag) {
        (true, _) => "IfNotPresent",
        (false, None | Some("latest")) => "Always",
        (false, Some(_)) => "IfNotPresent",
    }
}

/// A ConfigMap key: letters, digits, `-`, `_` and `.`, at most 253, not `.` or `..`.
pub fn is_config_map_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key != "."
        && key != ".."
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The ClusterIP Service `<name>`, port → targetPort of the container.
pub fn service(name: &str, spec: &WebAppSpec) -> Service {
    let labels = selector_labels(name);
    Service {
        api_version: "v1",
        kind: "Service",
        metadata: metadata(name.to_owned(), &labels),
        spec: ServiceSpec {
            type_: "ClusterIP".to_owned(),
            selector: labels,
            ports: vec![ServicePort {
                name: PORT_NAME.to_owned(),
                port: spec.port,
                target_port: spec.port,
                protocol: "TCP".to_owned(),
            }],
        },
    }
}

/// The ConfigMap `<name>-config` holding the configuration; `None` when no configuration is set.
pub fn config_map(name: &str, spec: &WebAppSpec) -> Option<ConfigMap> {
    let config = spec.config.as_ref()?;
    Some(ConfigMap {
        api_version: "v1",
        kind: "ConfigMap",
        metadata: metadata(config_map_name(name), &selector_labels(name)),
        data: config.clone(),
    })
}

fn metadata(name: String, labels: &BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name,
        labels: labels.clone(),
        ..ObjectMeta::default()
    }
}
