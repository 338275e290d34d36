//! Decoding of Kubernetes protobuf request bodies into JSON objects.
//!
//! kubectl's typed commands (`kubectl create configmap|deployment|namespace|secret|…`) send
//! `application/vnd.kubernetes.protobuf`: the `k8s\0` magic, a `runtime.Unknown` envelope with the
//! object's apiVersion and kind, and the object's own encoding. The message layouts are generated
//! (see `messages.rs`). Decoding mirrors what the real server's JSON output would hold: fields the
//! Go encoder writes although unset (empty strings, zero timestamps, empty structs, zero numbers of
//! non-pointer fields) are dropped.

mod messages;

use base64::Engine;
use serde_json::{Map, Value, json};

/// Media type of Kubernetes protobuf.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// How a field is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// UTF-8 string.
    String,
    /// Bytes (base64 in JSON).
    Bytes,
    /// Boolean.
    Bool,
    /// 32-bit integer.
    Int32,
    /// 64-bit integer.
    Int64,
    /// 64-bit float.
    Double,
    /// 32-bit float.
    Float,
    /// Nested message.
    Message,
    /// `map<string, string>`.
    MapString,
    /// `map<string, bytes>`.
    MapBytes,
    /// `map<string, message>`.
    MapMessage,
}

/// One field of a message.
#[derive(Debug)]
pub struct FieldLayout {
    /// Field number.
    pub tag: u32,
    /// JSON name.
    pub json: &'static str,
    /// Encoding.
    pub kind: FieldKind,
    /// Whether the field repeats.
    pub repeated: bool,
    /// Path of the message type for message fields and message maps.
    pub message: &'static str,
}

/// One message type.
#[derive(Debug)]
pub struct MessageLayout {
    /// `api/apps/v1/Deployment`.
    pub path: &'static str,
    /// Its fields.
    pub fields: &'static [FieldLayout],
}

/// A body that is not a decodable Kubernetes protobuf object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtobufError {
    /// The `k8s\0` magic is missing.
    #[error("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")]
    NotKubernetes,
    /// The bytes end inside a field.
    #[error("unexpected EOF")]
    Truncated,
    /// No layout for the object's kind.
    #[error("no kind {kind:?} is registered for version {api_version:?}")]
    UnknownKind {
        /// apiVersion of the envelope.
        api_version: String,
        /// kind of the envelope.
        kind: String,
    },
    /// A field is malformed.
    #[error("{0}")]
    Malformed(String),
}

type Result<T> = std::result::Result<T, ProtobufError>;

fn layout(path: &str) -> Option<&'static MessageLayout> {
    messages::MESSAGES
        .binary_search_by(|m| m.path.cmp(path))
        .ok()
        .map(|i| &messages::MESSAGES[i])
}

/// The layout path of a kind at an apiVersion.
fn kind_path(api_version: &str, kind: &str) -> String {
    if kind == "DeleteOptions" {
        return "apimachinery/pkg/apis/meta/v1/DeleteOptions".into();
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => "core".to_string(),
        "apiextensions.k8s.io" => return format!("apiextensions_apiserver/pkg/apis/apiextensions/{version}/{kind}"),
        "rbac.authorization.k8s.io" => "rbac".to_string(),
        other => other.trim_end_matches(".k8s.io").replace('.', "_"),
    };
    format!("api/{package}/{version}/{kind}")
}

struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.position >= self.bytes.len()
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.bytes.get(self.position).ok_or(ProtobufError::Truncated)?;
            self.position += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::Malformed("varint too long".into()))
    }

    fn take(&mut self, length: usize) -> Result<&'a [u8]> {
        let end = self.position.checked_add(length).ok_or(ProtobufError::Truncated)?;
        let slice = self.bytes.get(self.position..end).ok_or(ProtobufError::Truncated)?;
        self.position = end;
        Ok(slice)
    }

    fn length_delimited(&mut self) -> Result<&'a [u8]> {
        let length = self.varint()? as usize;
        self.take(length)
    }

    fn skip(&mut self, wire_type: u64) -> Result<()> {
        match wire_type {
            0 => self.varint().map(|_| ()),
            1 => self.take(8).map(|_| ()),
            2 => self.length_delimited().map(|_| ()),
            5 => self.take(4).map(|_| ()),
            other => Err(ProtobufError::Malformed(format!("unsupported wire type {other}"))),
        }
    }
}

/// Decode a protobuf request body into a JSON object (with apiVersion and kind).
pub fn decode_object(bytes: &[u8]) -> Result<Value> {
    let body = bytes.strip_prefix(MAGIC).ok_or(ProtobufError::NotKubernetes)?;
    let envelope = decode_message(
        layout("apimachinery/pkg/runtime/Unknown").expect("runtime.Unknown layout"),
        body,
    )?;
    let api_version = envelope
        .pointer("/typeMeta/apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = envelope
        .pointer("/typeMeta/kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let raw = envelope.get("raw").and_then(Value::as_str).unwrap_or("");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(|e| ProtobufError::Malformed(e.to_string()))?;
    let message = layout(&kind_path(&api_version, &kind)).ok_or_else(|| ProtobufError::UnknownKind {
        api_version: api_version.clone(),
        kind: kind.clone(),
    })?;
    let decoded = decode_message(message, &raw)?;
    let mut object = Map::new();
    object.insert("apiVersion".into(), json!(api_version));
    object.insert("kind".into(), json!(kind));
    if let Value::Object(fields) = decoded {
        object.extend(fields);
    }
    Ok(Value::Object(object))
}

fn special(path: &str, bytes: &[u8]) -> Result<Option<Value>> {
    let value = match path.rsplit('/').next().unwrap_or("") {
        "Time" | "MicroTime" if path.starts_with("apimachinery/pkg/apis/meta/v1/") => {
            let fields = decode_message(layout(path).expect("time layout"), bytes)?;
            let seconds = fields.get("seconds").and_then(Value::as_i64).unwrap_or(0);
            let nanos = fields.get("nanos").and_then(Value::as_i64).unwrap_or(0);
            if seconds == 0 && nanos == 0 {
                Value::Null
            } else {
                let time = chrono::DateTime::from_timestamp(seconds, nanos as u32)
                    .ok_or_else(|| ProtobufError::Malformed("timestamp out of range".into()))?;
                if path.ends_with("MicroTime") {
                    json!(time.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
                } else {
                    json!(time.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                }
            }
        }
        "IntOrString" => {
            let fields = decode_message(layout(path).expect("intstr layout"), bytes)?;
            if fields.get("type").and_then(Value::as_i64) == Some(1) {
                fields.get("strVal").cloned().unwrap_or(json!(""))
            } else {
                fields.get("intVal").cloned().unwrap_or(json!(0))
            }
        }
        "Quantity" => {
            let fields = decode_message(layout(path).expect("quantity layout"), bytes)?;
            fields.get("string").cloned().unwrap_or(json!("0"))
        }
        "RawExtension" | "FieldsV1" => {
            let fields = decode_message(layout(path).expect("raw layout"), bytes)?;
            let raw = fields.get("raw").and_then(Value::as_str).unwrap_or("");
            let raw = base64::engine::general_purpose::STANDARD
                .decode(raw)
                .map_err(|e| ProtobufError::Malformed(e.to_string()))?;
            if raw.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&raw).map_err(|e| ProtobufError::Malformed(e.to_string()))?
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

fn decode_value(field: &FieldLayout, wire_type: u64, reader: &mut Reader<'_>, out: &mut Vec<Value>) -> Result<()> {
    let scalar = |reader: &mut Reader<'_>| -> Result<Value> {
        Ok(match field.kind {
            FieldKind::Bool => json!(reader.varint()? != 0),
            FieldKind::Int32 => json!(reader.varint()? as i64 as i32),
            FieldKind::Int64 => json!(reader.varint()? as i64),
            FieldKind::Double => json!(f64::from_le_bytes(reader.take(8)?.try_into().expect("8 bytes"))),
            FieldKind::Float => json!(f32::from_le_bytes(reader.take(4)?.try_into().expect("4 bytes"))),
            _ => unreachable!("only scalars"),
        })
    };
    match field.kind {
        FieldKind::Bool | FieldKind::Int32 | FieldKind::Int64 | FieldKind::Double | FieldKind::Float => {
            if wire_type == 2 {
                let packed = reader.length_delimited()?;
                let mut inner = Reader {
                    bytes: packed,
                    position: 0,
                };
                while !inner.done() {
                    out.push(scalar(&mut inner)?);
                }
            } else {
                out.push(scalar(reader)?);
            }
        }
        FieldKind::String => {
            let bytes = reader.length_delimited()?;
            let text = std::str::from_utf8(bytes).map_err(|e| ProtobufError::Malformed(e.to_string()))?;
            out.push(json!(text));
        }
        FieldKind::Bytes => {
            out.push(json!(
                base64::engine::general_purpose::STANDARD.encode(reader.length_delimited()?)
            ));
        }
        FieldKind::Message => {
            let bytes = reader.length_delimited()?;
            match special(field.message, bytes)? {
                Some(value) => out.push(value),
                None => {
                    let nested = layout(field.message)
                        .ok_or_else(|| ProtobufError::Malformed(format!("no layout for {}", field.message)))?;
                    out.push(decode_message(nested, bytes)?);
                }
            }
        }
        FieldKind::MapString | FieldKind::MapBytes | FieldKind::MapMessage => {
            let entry = reader.length_delimited()?;
            let mut inner = Reader {
                bytes: entry,
                position: 0,
            };
            let mut key = String::new();
            let mut value = Value::Null;
            while !inner.done() {
                let header = inner.varint()?;
                match (header >> 3, field.kind) {
                    (1, _) => key = String::from_utf8_lossy(inner.length_delimited()?).into_owned(),
                    (2, FieldKind::MapString) => {
                        value = json!(String::from_utf8_lossy(inner.length_delimited()?));
                    }
                    (2, FieldKind::MapBytes) => {
                        value = json!(base64::engine::general_purpose::STANDARD.encode(inner.length_delimited()?));
                    }
                    (2, _) => {
                        let bytes = inner.length_delimited()?;
                        value = match special(field.message, bytes)? {
                            Some(value) => value,
                            None => decode_message(
                                layout(field.message).ok_or_else(|| {
                                    ProtobufError::Malformed(format!("no layout for {}", field.message))
                                })?,
                                bytes,
                            )?,
                        };
                    }
                    (_, _) => inner.skip(header & 7)?,
                }
            }
            out.push(json!({ key: value }));
        }
    }
    Ok(())
}

/// Zero values that are meaningful (pointer fields in the Go types) and so kept.
const MEANINGFUL_ZERO: &[&str] = &[
    "replicas",
    "runAsUser",
    "runAsGroup",
    "fsGroup",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "backoffLimit",
    "parallelism",
    "completions",
    "ttlSecondsAfterFinished",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    "revisionHistoryLimit",
    "startingDeadlineSeconds",
    "progressDeadlineSeconds",
    "suspend",
    "immutable",
    "automountServiceAccountToken",
    "optional",
    "defaultMode",
    "mode",
    "readOnlyRootFilesystem",
    "runAsNonRoot",
    "allowPrivilegeEscalation",
    "privileged",
    "enableServiceLinks",
    "hostUsers",
    "minReplicas",
    "value",
    "priority",
    "port",
    "containerPort",
    "weight",
    "intVal",
];

fn is_empty(key: &str, value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        Value::Bool(b) => !b && !MEANINGFUL_ZERO.contains(&key),
        Value::Number(n) => n.as_f64() == Some(0.0) && !MEANINGFUL_ZERO.contains(&key),
    }
}

fn decode_message(message: &MessageLayout, bytes: &[u8]) -> Result<Value> {
    let mut reader = Reader { bytes, position: 0 };
    let mut values: Vec<(usize, Vec<Value>)> = Vec::new();
    while !reader.done() {
        let header = reader.varint()?;
        let (tag, wire_type) = ((header >> 3) as u32, header & 7);
        let Some(index) = message.fields.iter().position(|f| f.tag == tag) else {
            reader.skip(wire_type)?;
            continue;
        };
        let slot = match values.iter().position(|(i, _)| *i == index) {
            Some(slot) => slot,
            None => {
                values.push((index, Vec::new()));
                values.len() - 1
            }
        };
        decode_value(&message.fields[index], wire_type, &mut reader, &mut values[slot].1)?;
    }
    values.sort_by_key(|(index, _)| *index);
    let mut object = Map::new();
    for (index, items) in values {
        let field = &message.fields[index];
        let value = match field.kind {
            FieldKind::MapString | FieldKind::MapBytes | FieldKind::MapMessage => {
                let mut map = Map::new();
                for entry in items {
                    if let Value::Object(entry) = entry {
                        map.extend(entry);
                    }
                }
                Value::Object(map)
            }
            _ if field.repeated => Value::Array(items),
            _ => items.into_iter().last().unwrap_or(Value::Null),
        };
        if !is_empty(field.json, &value) || (field.kind == FieldKind::Message && field.message.ends_with("IntOrString"))
        {
            object.insert(field.json.to_string(), value);
        }
    }
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(tag: u32, payload: &[u8], out: &mut Vec<u8>) {
        out.push(((tag << 3) | 2) as u8);
        out.push(payload.len() as u8);
        out.extend_from_slice(payload);
    }

    fn varint_field(tag: u32, value: u8, out: &mut Vec<u8>) {
        out.push((tag << 3) as u8);
        out.push(value);
    }

    #[test]
    fn decodes_a_config_map_envelope() {
        let mut meta = Vec::new();
        field(1, b"demo", &mut meta);
        field(2, b"", &mut meta);
        let mut label = Vec::new();
        field(1, b"app", &mut label);
        field(2, b"web", &mut label);
        field(11, &label, &mut meta);
        field(8, &[], &mut meta);
        let mut entry = Vec::new();
        field(1, b"key", &mut entry);
        field(2, b"value", &mut entry);
        let mut object = Vec::new();
        field(1, &meta, &mut object);
        field(2, &entry, &mut object);
        varint_field(4, 0, &mut object);
        let mut type_meta = Vec::new();
        field(1, b"v1", &mut type_meta);
        field(2, b"ConfigMap", &mut type_meta);
        let mut body = MAGIC.to_vec();
        field(1, &type_meta, &mut body);
        field(2, &object, &mut body);
        let decoded = decode_object(&body).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "demo", "labels": {"app": "web"}},
                   "data": {"key": "value"}, "immutable": false})
        );
    }

    #[test]
    fn int_or_string_and_negative_numbers() {
        let port = layout("api/core/v1/ServicePort").unwrap();
        let mut target = Vec::new();
        varint_field(1, 1, &mut target);
        field(3, b"http", &mut target);
        let mut bytes = Vec::new();
        field(4, &target, &mut bytes);
        bytes.extend_from_slice(&[3 << 3, 0xd0, 0x0f]);
        let decoded = decode_message(port, &bytes).unwrap();
        assert_eq!(decoded, json!({"port": 2000, "targetPort": "http"}));
        assert!(decode_object(b"{}").is_err());
    }

    #[test]
    fn layouts_are_sorted_for_lookup() {
        assert!(messages::MESSAGES.windows(2).all(|w| w[0].path < w[1].path));
        assert!(layout(&kind_path("apps/v1", "Deployment")).is_some());
        assert!(layout(&kind_path("rbac.authorization.k8s.io/v1", "ClusterRole")).is_some());
        assert!(layout(&kind_path("networking.k8s.io/v1", "Ingress")).is_some());
        assert!(layout(&kind_path("v1", "Namespace")).is_some());
    }
}
