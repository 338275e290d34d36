//! The OpenAPI v3 schemas Kubernetes publishes for the built-in kinds the server serves (generated into
//! `apiserver/openapi/` by `apiserver/tools/builtin_openapi.py`): served to `kubectl explain`, and read to find
//! what the real server's strict JSON decoder finds in a built-in object — fields its Go type does not have, and
//! values of the wrong JSON type, with the decoder's words.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The generated files, one per group/version.
const FILES: [&str; 12] = [
    include_str!("../../openapi/apps_v1.json"),
    include_str!("../../openapi/autoscaling_v2.json"),
    include_str!("../../openapi/batch_v1.json"),
    include_str!("../../openapi/coordination.k8s.io_v1.json"),
    include_str!("../../openapi/core_v1.json"),
    include_str!("../../openapi/discovery.k8s.io_v1.json"),
    include_str!("../../openapi/events.k8s.io_v1.json"),
    include_str!("../../openapi/networking.k8s.io_v1.json"),
    include_str!("../../openapi/policy_v1.json"),
    include_str!("../../openapi/rbac.authorization.k8s.io_v1.json"),
    include_str!("../../openapi/scheduling.k8s.io_v1.json"),
    include_str!("../../openapi/storage.k8s.io_v1.json"),
];

/// The schemas of one group/version.
#[derive(Debug)]
pub struct GroupVersionSchemas {
    /// `components.schemas` as published (descriptions included), trimmed to what the served kinds reach.
    pub schemas: Map<String, Value>,
    /// Kind → the name of its schema.
    pub kinds: HashMap<String, String>,
}

/// Every group/version, by (group, version).
pub fn all() -> &'static HashMap<(String, String), GroupVersionSchemas> {
    static ALL: OnceLock<HashMap<(String, String), GroupVersionSchemas>> = OnceLock::new();
    ALL.get_or_init(|| {
        FILES
            .iter()
            .filter_map(|text| {
                let file: Value = serde_json::from_str(text)
                    .inspect_err(|error| tracing::error!(%error, "a generated OpenAPI file does not parse"))
                    .ok()?;
                let group = file.get("group")?.as_str()?.to_string();
                let version = file.get("version")?.as_str()?.to_string();
                let schemas = file.get("schemas")?.as_object()?.clone();
                let mut kinds = HashMap::new();
                for (name, schema) in &schemas {
                    for gvk in schema
                        .get("x-kubernetes-group-version-kind")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let field = |key: &str| gvk.get(key).and_then(Value::as_str).unwrap_or_default();
                        if field("group") == group && field("version") == version {
                            kinds.insert(field("kind").to_string(), name.clone());
                        }
                    }
                }
                Some(((group, version), GroupVersionSchemas { schemas, kinds }))
            })
            .collect()
    })
}

/// The schemas of a group/version and the name of a kind's schema in them.
pub fn for_kind(api_version: &str, kind: &str) -> Option<(&'static GroupVersionSchemas, &'static str)> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let schemas = all().get(&(group.to_string(), version.to_string()))?;
    let name = schemas.kinds.get(kind)?;
    Some((schemas, name.as_str()))
}

/// Types whose JSON form is decoded by their own code (strings, or anything): not walked.
const OPAQUE: [&str; 8] = [
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Duration",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
];

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
/// The pattern `resource.ParseQuantity` names when it refuses a quantity.
const QUANTITY_PATTERN: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Whether `resource.ParseQuantity` reads `text`: a decimal number and a suffix (binary `Ki`…`Ei`, decimal
/// `n`, `u`, `m`, `k`, `M`…`E`, or an exponent `e3`/`E-2`).
fn is_quantity(text: &str) -> bool {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let number_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_end);
    if number.is_empty() || number.matches('.').count() > 1 || number == "." {
        return false;
    }
    match suffix {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        exponent => {
            let digits = exponent
                .strip_prefix(['e', 'E'])
                .map(|rest| rest.strip_prefix(['+', '-']).unwrap_or(rest));
            digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        }
    }
}

/// A schema node: its own body and, when it is a named definition, the name.
#[derive(Clone, Copy)]
struct Node<'s> {
    schema: &'s Value,
    name: Option<&'s str>,
}

impl<'s> Node<'s> {
    /// Follows `$ref` and the `allOf: [{$ref}]` wrapper the published documents use.
    fn resolve(schemas: &'s GroupVersionSchemas, schema: &'s Value) -> Node<'s> {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            schema
                .get("allOf")
                .and_then(Value::as_array)
                .and_then(|all| all.first())
                .and_then(|first| first.get("$ref"))
                .and_then(Value::as_str)
        });
        match reference.and_then(|r| r.rsplit('/').next()) {
            Some(name) => match schemas.schemas.get_key_value(name) {
                Some((name, schema)) => Node {
                    schema,
                    name: Some(name.as_str()),
                },
                None => Node { schema, name: None },
            },
            None => Node { schema, name: None },
        }
    }

    fn opaque(&self) -> bool {
        self.name.is_some_and(|name| OPAQUE.contains(&name))
            || self.schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
    }

    fn type_name(&self) -> Option<&'s str> {
        self.schema.get("type").and_then(Value::as_str)
    }

    /// The Go type the decoder names (`int32`, `[]v1.Container`, `map[string]string`, `v1.PodSpec`).
    fn go_type(&self, schemas: &'s GroupVersionSchemas) -> String {
        if let Some(name) = self.name {
            let mut parts = name.rsplit('.');
            let type_name = parts.next().unwrap_or_default();
            let package = parts.next().unwrap_or_default();
            return format!("{package}.{type_name}");
        }
        match self.type_name() {
            Some("integer") => match self.schema.get("format").and_then(Value::as_str) {
                Some("int32") => "int32".into(),
                _ => "int64".into(),
            },
            Some("number") => "float64".into(),
            Some("boolean") => "bool".into(),
            Some("string") => match self.schema.get("format").and_then(Value::as_str) {
                Some("byte") => "[]uint8".into(),
                _ => "string".into(),
            },
            Some("array") => match self.schema.get("items") {
                Some(items) => format!("[]{}", Node::resolve(schemas, items).go_type(schemas)),
                None => "[]interface {}".into(),
            },
            Some("object") => match self.schema.get("additionalProperties") {
                Some(values) if values.is_object() => {
                    format!("map[string]{}", Node::resolve(schemas, values).go_type(schemas))
                }
                _ => "map[string]interface {}".into(),
            },
            _ => "interface {}".into(),
        }
    }
}

/// What the strict decoder finds in a built-in object.
#[derive(Debug, Default, PartialEq)]
pub struct DecodeFindings {
    /// Paths of fields the Go type does not have, in document order (`spec.template.spec.containers[0].imagee`).
    pub unknown: Vec<String>,
    /// The first wrong JSON type, as the decoder says it (`json: cannot unmarshal string into Go struct field …`).
    pub type_error: Option<String>,
}

/// Walks `object` (in `api_version`) against its kind's schema; with `prune`, unknown fields are removed.
pub fn decode(api_version: &str, kind: &str, object: &mut Value, prune: bool) -> Option<DecodeFindings> {
    let (schemas, name) = for_kind(api_version, kind)?;
    let root = Node {
        schema: schemas.schemas.get(name)?,
        name: Some(name),
    };
    let mut walk = Walk {
        schemas,
        findings: DecodeFindings::default(),
        prune,
    };
    walk.value(root, object, "", &mut Vec::new(), None);
    Some(walk.findings)
}

struct Walk<'s> {
    schemas: &'s GroupVersionSchemas,
    findings: DecodeFindings,
    prune: bool,
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

impl<'s> Walk<'s> {
    /// `path` is the strict decoder's path (with indices), `fields` the JSON field stack Go names type errors by,
    /// `parent` the Go struct holding the current field and the Go type of the current field.
    fn value(
        &mut self,
        node: Node<'s>,
        value: &mut Value,
        path: &str,
        fields: &mut Vec<String>,
        parent: Option<(&str, String)>,
    ) {
        if node.name == Some(QUANTITY)
            && let Value::String(text) = &*value
            && self.findings.type_error.is_none()
            && !is_quantity(text)
        {
            // resource.Quantity's UnmarshalJSON refuses it with its own words.
            self.findings.type_error = Some(format!(
                "quantities must match the regular expression '{QUANTITY_PATTERN}'"
            ));
        }
        if value.is_null() || node.opaque() {
            return;
        }
        let expected = node.type_name();
        let found = crate::patch::go_json_kind(value);
        let mismatch = match (expected, &*value) {
            (Some("integer"), Value::Number(number)) => {
                let fits = match node.schema.get("format").and_then(Value::as_str) {
                    Some("int32") => number.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
                    _ => number.as_i64().is_some(),
                };
                (!fits).then(|| format!("number {number}"))
            }
            (Some("number"), Value::Number(_))
            | (Some("string"), Value::String(_))
            | (Some("boolean"), Value::Bool(_))
            | (Some("array"), Value::Array(_))
            | (Some("object"), Value::Object(_)) => None,
            (None, _) => None,
            _ => Some(found.to_string()),
        };
        if let Some(what) = mismatch {
            if self.findings.type_error.is_none()
                && let Some((structure, go_type)) = parent
            {
                self.findings.type_error = Some(format!(
                    "json: cannot unmarshal {what} into Go struct field {structure}.{} of type {go_type}",
                    fields.join(".")
                ));
            }
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(properties) = node.schema.get("properties").and_then(Value::as_object) {
                    let structure = node
                        .name
                        .and_then(|name| name.rsplit('.').next())
                        .unwrap_or_default()
                        .to_string();
                    let mut unknown_keys = Vec::new();
                    for (key, child) in map.iter_mut() {
                        let child_path = join(path, key);
                        match properties.get(key) {
                            Some(child_schema) => {
                                let child_node = Node::resolve(self.schemas, child_schema);
                                let go_type = child_node.go_type(self.schemas);
                                fields.push(key.clone());
                                self.value(child_node, child, &child_path, fields, Some((&structure, go_type)));
                                fields.pop();
                            }
                            None => {
                                self.findings.unknown.push(child_path);
                                unknown_keys.push(key.clone());
                            }
                        }
                    }
                    if self.prune {
                        for key in unknown_keys {
                            map.remove(&key);
                        }
                    }
                } else if let Some(values) = node.schema.get("additionalProperties").filter(|v| v.is_object()) {
                    let value_node = Node::resolve(self.schemas, values);
                    let go_type = value_node.go_type(self.schemas);
                    let structure = parent.as_ref().map(|(s, _)| s.to_string()).unwrap_or_default();
                    for (key, child) in map.iter_mut() {
                        let child_path = format!("{path}[{key}]");
                        // Map values are named by the map's field, with the value's type.
                        self.value(
                            value_node,
                            child,
                            &child_path,
                            fields,
                            Some((&structure, go_type.clone())),
                        );
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = node.schema.get("items") {
                    let item_node = Node::resolve(self.schemas, item_schema);
                    let go_type = item_node.go_type(self.schemas);
                    let structure = parent.as_ref().map(|(s, _)| s.to_string()).unwrap_or_default();
                    for (index, item) in items.iter_mut().enumerate() {
                        let item_path = format!("{path}[{index}]");
                        self.value(item_node, item, &item_path, fields, Some((&structure, go_type.clone())));
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_unknown_fields_at_any_depth_and_prunes_them() {
        let mut deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labelz": {}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx", "imagee": "x",
                    "ports": [{"containerPort": 80, "protocl": "TCP"}]}]}}},
            "extra": true
        });
        let findings = decode("apps/v1", "Deployment", &mut deployment, true).expect("known kind");
        assert_eq!(
            findings.unknown,
            vec![
                "metadata.labelz",
                "spec.template.spec.containers[0].imagee",
                "spec.template.spec.containers[0].ports[0].protocl",
                "extra"
            ]
        );
        assert_eq!(findings.type_error, None);
        assert!(deployment.get("extra").is_none());
        assert!(
            deployment["spec"]["template"]["spec"]["containers"][0]
                .get("imagee")
                .is_none()
        );
    }

    #[test]
    fn names_wrong_types_as_the_go_decoder_does() {
        let mut deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "web", "ports": [{"containerPort": "80"}]}]}}}});
        let findings = decode("apps/v1", "Deployment", &mut deployment, false).expect("known kind");
        assert_eq!(
            findings.type_error.as_deref(),
            Some(
                "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"
            )
        );
        let mut config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": 1}});
        assert_eq!(
            decode("v1", "ConfigMap", &mut config_map, false)
                .and_then(|f| f.type_error)
                .as_deref(),
            Some("json: cannot unmarshal number into Go struct field ConfigMap.data of type string")
        );
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a",
            "resources": {"limits": {"cpu": "2 cores", "memory": "1Gi"}}}]}});
        assert_eq!(
            decode("v1", "Pod", &mut pod, false)
                .and_then(|f| f.type_error)
                .as_deref(),
            Some("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        );
        assert!(is_quantity("100m") && is_quantity("1.5Gi") && is_quantity("1e3") && is_quantity("-2"));
        assert!(!is_quantity("2 cores") && !is_quantity("Gi") && !is_quantity("1.2.3"));
        let mut service = json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": "80"}});
        assert_eq!(
            decode("v1", "Service", &mut service, false)
                .and_then(|f| f.type_error)
                .as_deref(),
            Some("json: cannot unmarshal string into Go struct field ServiceSpec.spec.ports of type []v1.ServicePort")
        );
    }
}
