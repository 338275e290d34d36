//! OpenAPI documents for kubectl: a minimal v2 document (protobuf) and per-group-version v3 documents
//! whose PATCH operations declare `fieldValidation` (so kubectl validates on the server) and whose
//! schemas carry `x-kubernetes-group-version-kind` (so `kubectl explain` finds them): the schemas
//! Kubernetes publishes for built-in kinds, a CRD's own schema for custom ones.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Map, Value, json};

use crate::registry::{Registry, ResourceInfo};
use crate::server::handlers::KUBERNETES_VERSION;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn protobuf_string(field: u8, text: &str, out: &mut Vec<u8>) {
    out.push((field << 3) | 2);
    protobuf_varint(text.len() as u64, out);
    out.extend_from_slice(text.as_bytes());
}

fn protobuf_varint(mut value: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `/openapi/v2` as gnostic protobuf: a valid document with no definitions. kubectl then computes
/// strategic merge patches from its compiled-in types, as it does for any type the spec lacks.
pub fn v2_protobuf() -> Vec<u8> {
    let mut info = Vec::new();
    protobuf_string(1, "Kubernetes", &mut info);
    protobuf_string(2, KUBERNETES_VERSION, &mut info);
    let mut document = Vec::new();
    protobuf_string(1, "2.0", &mut document);
    document.push((2 << 3) | 2);
    protobuf_varint(info.len() as u64, &mut document);
    document.extend_from_slice(&info);
    document
}

fn group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out = vec![(String::new(), "v1".to_string())];
    for group in registry.groups() {
        for version in &group.versions {
            out.push((group.name.clone(), version.clone()));
        }
    }
    out
}

fn document_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the list of group-version documents with content hashes.
pub fn v3_index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, version) in group_versions(registry) {
        let Some(document) = v3_document(registry, &group, &version) else {
            continue;
        };
        let mut hasher = DefaultHasher::new();
        document.to_string().hash(&mut hasher);
        let path = document_path(&group, &version);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={:016X}", hasher.finish())}),
        );
    }
    json!({"paths": paths})
}

/// The schema name of a kind (`io.k8s.api.apps.v1.Deployment`, `com.example.v1.Widget`).
pub fn schema_name(info: &ResourceInfo) -> String {
    if info.is_builtin() {
        let package = match info.group.as_str() {
            "" => "core".to_string(),
            "apiextensions.k8s.io" => {
                return format!(
                    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{}.{}",
                    info.version, info.kind
                );
            }
            group => group
                .trim_end_matches(".k8s.io")
                .replace('.', "_")
                .replace("_authorization", ".authorization")
                .replace("rbac.authorization", "rbac"),
        };
        format!("io.k8s.api.{package}.{}.{}", info.version, info.kind)
    } else {
        let reversed: Vec<&str> = info.group.split('.').rev().collect();
        format!("{}.{}.{}", reversed.join("."), info.version, info.kind)
    }
}

fn gvk(info: &ResourceInfo) -> Value {
    json!({"group": info.group, "kind": info.kind, "version": info.version})
}

fn kind_schema(info: &ResourceInfo) -> Value {
    let mut schema = match info.custom.as_ref().and_then(|c| c.schema.clone()) {
        Some(schema) => schema,
        None => json!({
            "type": "object",
            "description": format!("{} is a {} object of the {} API.", info.kind, info.kind,
                if info.group.is_empty() { "core".to_string() } else { info.group.clone() }),
            "properties": {
                "spec": {"type": "object", "description": format!("Specification of the desired behavior of the {}.", info.kind), "x-kubernetes-preserve-unknown-fields": true},
                "status": {"type": "object", "description": format!("Most recently observed status of the {}.", info.kind), "x-kubernetes-preserve-unknown-fields": true},
            },
        }),
    };
    if let Some(map) = schema.as_object_mut() {
        let properties = map
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|p| {
                p.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
                p.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
                p.insert("metadata".into(), json!({"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}], "default": {}, "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}));
            });
        let _ = properties;
        map.insert("x-kubernetes-group-version-kind".into(), json!([gvk(info)]));
    }
    schema
}

fn object_meta_schema() -> Value {
    let string = |d: &str| json!({"type": "string", "description": d});
    let map = |d: &str| json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": d});
    json!({
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "properties": {
            "name": string("Name must be unique within a namespace."),
            "generateName": string("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided."),
            "namespace": string("Namespace defines the space within which each name must be unique."),
            "uid": string("UID is the unique in time and space value for this object."),
            "resourceVersion": string("An opaque value that represents the internal version of this object."),
            "generation": {"type": "integer", "format": "int64", "description": "A sequence number representing a specific generation of the desired state."},
            "creationTimestamp": string("CreationTimestamp is a timestamp representing the server time when this object was created."),
            "deletionTimestamp": string("DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted."),
            "labels": map("Map of string keys and values that can be used to organize and categorize (scope and select) objects."),
            "annotations": map("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata."),
            "finalizers": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set", "description": "Must be empty before the object is deleted from the registry."},
            "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge", "description": "List of objects depended by this object."},
            "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow."},
        },
    })
}

fn operation(info: &ResourceInfo, action: &str, id: &str, parameters: Vec<Value>, body_types: &[&str]) -> Value {
    let reference = json!({"$ref": format!("#/components/schemas/{}", schema_name(info))});
    let mut op = json!({
        "operationId": id,
        "tags": [if info.group.is_empty() { format!("core_{}", info.version) } else { format!("{}_{}", info.group, info.version) }],
        "parameters": parameters,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(info),
    });
    if !body_types.is_empty() {
        let content: Map<String, Value> = body_types
            .iter()
            .map(|t| (t.to_string(), json!({"schema": reference})))
            .collect();
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params(with_force: bool) -> Vec<Value> {
    let mut params = vec![
        query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ),
        query_param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
        query_param(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.",
        ),
    ];
    if with_force {
        params.push(json!({"name": "force", "in": "query", "description": "Force is going to \"force\" Apply requests.", "schema": {"type": "boolean", "uniqueItems": true}}));
    }
    params
}

/// `/openapi/v3/{api/v1 | apis/group/version}`.
pub fn v3_document(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<_> = registry.resources_in(group, version).collect();
    if resources.is_empty() {
        return None;
    }
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert(OBJECT_META.into(), object_meta_schema());
    for info in &resources {
        schemas.insert(schema_name(info), kind_schema(info));
    }
    // Built-in kinds are described by the schemas Kubernetes publishes (`kubectl explain deployment.spec`).
    if let Some(published) = crate::registry::openapi_schemas::all().get(&(group.to_string(), version.to_string())) {
        for (name, schema) in &published.schemas {
            schemas.insert(name.clone(), schema.clone());
        }
    }
    for info in resources {
        let base = if info.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", info.plural)
        } else {
            format!("{prefix}/{}", info.plural)
        };
        let id = format!("{}{}", info.kind, info.version);
        let patch_types: &[&str] = &[
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
        ];
        let name_param =
            json!({"name": "name", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}});
        let namespace_param = json!({"name": "namespace", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}});
        let mut item_params = vec![name_param];
        let mut collection_params = Vec::new();
        if info.namespaced {
            item_params.push(namespace_param.clone());
            collection_params.push(namespace_param);
        }
        paths.insert(
            base.clone(),
            json!({
                "get": operation(info, "list", &format!("list{id}"), Vec::new(), &[]),
                "post": operation(info, "post", &format!("create{id}"), write_params(false), &["*/*"]),
                "delete": operation(info, "deletecollection", &format!("deletecollection{id}"), Vec::new(), &[]),
                "parameters": collection_params,
            }),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": operation(info, "get", &format!("read{id}"), Vec::new(), &[]),
                "put": operation(info, "put", &format!("replace{id}"), write_params(false), &["*/*"]),
                "patch": operation(info, "patch", &format!("patch{id}"), write_params(true), patch_types),
                "delete": operation(info, "delete", &format!("delete{id}"), write_params(false), &[]),
                "parameters": item_params.clone(),
            }),
        );
        if info.status_subresource {
            paths.insert(
                format!("{base}/{{name}}/status"),
                json!({
                    "get": operation(info, "get", &format!("read{id}Status"), Vec::new(), &[]),
                    "put": operation(info, "put", &format!("replace{id}Status"), write_params(false), &["*/*"]),
                    "patch": operation(info, "patch", &format!("patch{id}Status"), write_params(true), patch_types),
                    "parameters": item_params,
                }),
            );
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_follow_kubernetes() {
        let registry = Registry::build([]);
        let name = |g: &str, v: &str, p: &str| schema_name(&registry.lookup(g, v, p).unwrap());
        assert_eq!(name("apps", "v1", "deployments"), "io.k8s.api.apps.v1.Deployment");
        assert_eq!(name("", "v1", "configmaps"), "io.k8s.api.core.v1.ConfigMap");
        assert_eq!(
            name("coordination.k8s.io", "v1", "leases"),
            "io.k8s.api.coordination.v1.Lease"
        );
        assert_eq!(
            name("rbac.authorization.k8s.io", "v1", "roles"),
            "io.k8s.api.rbac.v1.Role"
        );
    }

    #[test]
    fn patch_operations_declare_field_validation() {
        let registry = Registry::build([]);
        let doc = v3_document(&registry, "apps", "v1").unwrap();
        let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(
            v3_index(&registry)["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
    }

    #[test]
    fn v2_document_is_wellformed_protobuf() {
        let bytes = v2_protobuf();
        assert_eq!(&bytes[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert_eq!(bytes[5], 0x12);
        assert_eq!(bytes[6] as usize, bytes.len() - 7);
    }
}
