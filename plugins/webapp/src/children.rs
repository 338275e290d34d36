//! The children of a `WebApp`, built with k8s-openapi types: Deployment, Service and ConfigMap.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapEnvSource, Container, ContainerPort, EnvFromSource, PodSpec, PodTemplateSpec, Service,
    ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::config_hash::{CONFIG_HASH_ANNOTATION, config_hash};
use crate::resource::WebAppSpec;

/// Name of the only container.
pub const CONTAINER_NAME: &str = "web";
/// Name of the container and Service port.
pub const PORT_NAME: &str = "http";

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
        .map(|config| BTreeMap::from([(CONFIG_HASH_ANNOTATION.to_owned(), config_hash(config))]));
    let env_from = spec.config.as_ref().map(|_| {
        vec![EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource {
                name: config_map_name(name),
                optional: None,
            }),
            ..EnvFromSource::default()
        }]
    });
    Deployment {
        metadata: metadata(name.to_owned(), &labels),
        spec: Some(DeploymentSpec {
            replicas: Some(spec.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations: pod_annotations,
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: CONTAINER_NAME.to_owned(),
                        image: Some(spec.image.clone()),
                        ports: Some(vec![ContainerPort {
                            name: Some(PORT_NAME.to_owned()),
                            container_port: spec.port,
                            protocol: Some("TCP".to_owned()),
                            ..ContainerPort::default()
                        }]),
                        env_from,
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

/// The ClusterIP Service `<name>`, port → targetPort of the container.
pub fn service(name: &str, spec: &WebAppSpec) -> Service {
    let labels = selector_labels(name);
    Service {
        metadata: metadata(name.to_owned(), &labels),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(labels),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.to_owned()),
                port: spec.port,
                target_port: Some(IntOrString::Int(spec.port)),
                protocol: Some("TCP".to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The ConfigMap `<name>-config` holding the configuration; `None` when no configuration is set.
pub fn config_map(name: &str, spec: &WebAppSpec) -> Option<ConfigMap> {
    let config = spec.config.as_ref()?;
    Some(ConfigMap {
        metadata: metadata(config_map_name(name), &selector_labels(name)),
        data: Some(config.clone()),
        ..ConfigMap::default()
    })
}

fn metadata(name: String, labels: &BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    }
}
