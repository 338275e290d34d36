//! Encoding of responses: objects, lists (streamed without copying items), Tables, metadata-only forms.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use super::request::Representation;
use crate::registry::{ResourceInfo, conversion};
use crate::table::{self, IncludeObject};

/// A JSON response.
pub fn json_response(status: u16, value: &Value) -> Response {
    bytes_response(
        status,
        serde_json::to_vec(value).unwrap_or_default(),
        "application/json",
    )
}

/// A response with a body and content type.
pub fn bytes_response(status: u16, body: Vec<u8>, content_type: &str) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// Add `Warning` headers.
pub fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// Content type of a representation: plain JSON, as kube-apiserver labels Tables and metadata-only answers too;
/// only aggregated discovery names its kind.
pub fn content_type(representation: &Representation) -> String {
    match representation {
        Representation::AggregatedDiscovery(version) => {
            format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
        }
        Representation::Table(_) | Representation::PartialMetadata | Representation::Json => "application/json".into(),
    }
}

/// A stored object as a list item: built-in list items carry no apiVersion/kind, like the real server's.
struct Item<'a> {
    object: &'a Value,
    strip_type: bool,
    api_version: Option<&'a str>,
}

impl Serialize for Item<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(map) = self.object.as_object() else {
            return self.object.serialize(serializer);
        };
        let mut out = serializer.serialize_map(None)?;
        for (key, value) in map {
            if key == "apiVersion" || key == "kind" {
                if self.strip_type {
                    continue;
                }
                if key == "apiVersion"
                    && let Some(version) = self.api_version
                {
                    out.serialize_entry(key, version)?;
                    continue;
                }
            }
            out.serialize_entry(key, value)?;
        }
        out.end()
    }
}

/// One stored object in the requested representation.
pub fn object_body(
    info: &ResourceInfo,
    stored: &Value,
    representation: &Representation,
    include: IncludeObject,
) -> (Vec<u8>, String) {
    let body = match representation {
        Representation::Table(api_version) => table::table(
            info,
            &[Arc::new(stored.clone())],
            json!({"resourceVersion": crate::object::resource_version(stored)}),
            include,
            true,
            api_version,
        ),
        Representation::PartialMetadata => table::partial_metadata(stored),
        _ => conversion::to_served(info, stored.clone()),
    };
    (
        serde_json::to_vec(&body).unwrap_or_default(),
        content_type(representation),
    )
}

/// A list of stored objects in the requested representation.
pub fn list_body(
    info: &ResourceInfo,
    items: &[Arc<Value>],
    list_metadata: Value,
    representation: &Representation,
    include: IncludeObject,
) -> (Vec<u8>, String) {
    match representation {
        Representation::Table(api_version) => {
            let table = table::table(info, items, list_metadata, include, true, api_version);
            (
                serde_json::to_vec(&table).unwrap_or_default(),
                content_type(representation),
            )
        }
        Representation::PartialMetadata => {
            let items: Vec<Value> = items.iter().map(|i| table::partial_metadata(i)).collect();
            let list = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": list_metadata,
                "items": items,
            });
            (serde_json::to_vec(&list).unwrap_or_default(), "application/json".into())
        }
        _ => {
            let mut out = Vec::with_capacity(256 + items.len() * 512);
            out.extend_from_slice(b"{\"kind\":");
            serde_json::to_writer(&mut out, &info.list_kind).unwrap_or_default();
            out.extend_from_slice(b",\"apiVersion\":");
            serde_json::to_writer(&mut out, &info.api_version()).unwrap_or_default();
            out.extend_from_slice(b",\"metadata\":");
            serde_json::to_writer(&mut out, &list_metadata).unwrap_or_default();
            out.extend_from_slice(b",\"items\":[");
            let served_version = info.api_version();
            let needs_conversion = conversion::changes_on_serving(info);
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                if needs_conversion {
                    let converted = conversion::to_served(info, (**item).clone());
                    serde_json::to_writer(
                        &mut out,
                        &Item {
                            object: &converted,
                            strip_type: true,
                            api_version: None,
                        },
                    )
                    .unwrap_or_default();
                } else {
                    let item = Item {
                        object: item,
                        strip_type: info.is_builtin(),
                        api_version: Some(&served_version),
                    };
                    serde_json::to_writer(&mut out, &item).unwrap_or_default();
                }
            }
            out.extend_from_slice(b"]}");
            (out, "application/json".into())
        }
    }
}
