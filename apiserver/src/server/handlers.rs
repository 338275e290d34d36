//! Request handlers: discovery, OpenAPI, and the verbs on resources (get, list, create, update,
//! patch, delete, deletecollection); watch lives in `watch.rs`.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::{Method, header, request::Parts};
use serde_json::{Value, json};

use super::ListenerShutdown;
use super::encode::{bytes_response, content_type, json_response, list_body, object_body, with_warnings};
use super::request::{Query, Representation, ResourcePath, Route, negotiate, route};
use super::watch;
use crate::cluster::Cluster;
use crate::error::{ApiError, ApiResult};
use crate::lifecycle::deletion::{DeleteOptions, Deleted, Propagation};
use crate::lifecycle::{FieldValidation, PatchKind, WriteRequest};
use crate::object;
use crate::openapi;
use crate::registry::{ResourceInfo, discovery};
use crate::selector::{FieldSelector, LabelSelector};
use crate::storage::ObjectKey;
use crate::table::IncludeObject;

/// The media types of PATCH bodies.
const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Kubernetes version this server reports.
pub const KUBERNETES_VERSION: &str = "v1.33.0";

/// Serve one request.
pub async fn handle(cluster: Arc<Cluster>, request: http::Request<Body>) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    match dispatch(cluster, request).await {
        Ok(response) => response,
        Err(error) => {
            tracing::debug!(%method, %path, code = error.code, reason = %error.reason, "request failed");
            error.into_response()
        }
    }
}

fn authorize(cluster: &Cluster, parts: &Parts) -> ApiResult<()> {
    let Some(token) = &cluster.settings.bearer_token else {
        return Ok(());
    };
    let presented = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if presented == Some(token.as_str()) {
        Ok(())
    } else {
        Err(ApiError::unauthorized())
    }
}

async fn dispatch(cluster: Arc<Cluster>, request: http::Request<Body>) -> ApiResult<Response> {
    let (parts, body) = request.into_parts();
    let listener = parts.extensions.get::<ListenerShutdown>().map(|l| l.0.clone());
    let route = route(parts.uri.path());
    if route != Route::Health && route != Route::Version {
        authorize(&cluster, &parts)?;
    }
    let latency = cluster.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let query = Query::parse(parts.uri.query());
    let representation = negotiate(parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    if !matches!(route, Route::Resource(_)) && parts.method != Method::GET && parts.method != Method::HEAD {
        return Err(ApiError::method_not_allowed());
    }
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let registry = cluster.registry();
    match route {
        Route::Version => Ok(json_response(200, &version_info())),
        Route::Health => Ok(bytes_response(200, b"ok".to_vec(), "text/plain; charset=utf-8")),
        Route::OpenApiV2 => Ok(bytes_response(
            200,
            openapi::v2_protobuf(),
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        )),
        Route::OpenApiV3Index => Ok(json_response(200, &openapi::v3_index(&registry))),
        Route::OpenApiV3 { group, version } => openapi::v3_document(&registry, &group, &version)
            .map(|doc| json_response(200, &doc))
            .ok_or_else(ApiError::no_route),
        Route::CoreVersions => Ok(match &representation {
            Representation::AggregatedDiscovery(version) => bytes_response(
                200,
                serde_json::to_vec(&discovery::aggregated(&registry, true, version)).unwrap_or_default(),
                &content_type(&representation),
            ),
            _ => json_response(200, &discovery::api_versions(&host)),
        }),
        Route::GroupList => Ok(match &representation {
            Representation::AggregatedDiscovery(version) => bytes_response(
                200,
                serde_json::to_vec(&discovery::aggregated(&registry, false, version)).unwrap_or_default(),
                &content_type(&representation),
            ),
            _ => json_response(200, &discovery::group_list(&registry)),
        }),
        Route::Group(name) => match discovery::group(&registry, &name) {
            Some(doc) => Ok(json_response(200, &doc)),
            None => Ok(page_not_found()),
        },
        Route::ResourceList { group, version } => match discovery::resource_list(&registry, &group, &version) {
            Some(doc) => Ok(json_response(200, &doc)),
            None if group_served(&registry, &group) => Err(ApiError::no_route()),
            None => Ok(page_not_found()),
        },
        Route::Resource(path) => {
            if !group_served(&registry, &path.group) {
                return Ok(page_not_found());
            }
            let info = registry
                .lookup(&path.group, &path.version, &path.plural)
                .ok_or_else(ApiError::no_route)?;
            resource(cluster, parts, body, path, info, query, representation, listener).await
        }
        Route::NotFound if served_root(parts.uri.path()) => Err(ApiError::no_route()),
        Route::NotFound => Ok(page_not_found()),
    }
}

/// Whether a group (`""` for the core group) is served.
fn group_served(registry: &crate::registry::Registry, group: &str) -> bool {
    group.is_empty() || discovery::group(registry, group).is_some()
}

/// Whether a path is under one of the roots the server registers handlers for; any other path, like one under an
/// API group nobody serves, reaches no handler at all.
fn served_root(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    ["api", "apis", "version", "healthz", "livez", "readyz", "openapi"].contains(&first)
}

/// What the real server's HTTP mux answers when no handler matches.
fn page_not_found() -> Response {
    bytes_response(404, b"404 page not found\n".to_vec(), "text/plain; charset=utf-8")
}

fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "emulationMajor": "1",
        "emulationMinor": "33",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "32",
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": "wasm-reconciler",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        }),
    })
}

fn field_manager(parts: &Parts, query: &Query) -> ApiResult<String> {
    if let Some(manager) = query.get("fieldManager") {
        if manager.len() > 128 {
            return Err(ApiError::invalid_fields(
                "meta.k8s.io",
                "PatchOptions",
                "",
                &[crate::error::FieldViolation::invalid(
                    "fieldManager",
                    &json!(manager),
                    "must be no more than 128 characters",
                )],
            ));
        }
        return Ok(manager.to_string());
    }
    let agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix: String = agent.split('/').next().unwrap_or("").chars().take(128).collect();
    Ok(prefix)
}

/// The kind of options a request's query decodes into (`CreateOptions` for POST, …), which its errors name.
fn options_kind(method: &Method) -> &'static str {
    match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        Method::DELETE => "DeleteOptions",
        _ => "ListOptions",
    }
}

fn dry_run(query: &Query, options: &str) -> ApiResult<bool> {
    match query.get("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::invalid_fields(
            "meta.k8s.io",
            options,
            "",
            &[crate::error::FieldViolation {
                field: "dryRun".into(),
                reason: "FieldValueNotSupported".into(),
                message: format!("Unsupported value: {}: supported values: \"All\"", json!([other])),
            }],
        )),
    }
}

async fn read_body(body: Body) -> ApiResult<bytes::Bytes> {
    axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiError::bad_request(format!("cannot read request body: {e}")))
}

/// A decode failure of a body the server cannot even read the type of, as `transformDecodeError` words it.
fn unrecognized(info: &ResourceInfo, bytes: &[u8], error: &str) -> ApiError {
    const SUMMARY: usize = 30;
    let summary = match bytes {
        [] => "<empty>".to_string(),
        [b'{', ..] if bytes.len() > SUMMARY => format!("{} ...", String::from_utf8_lossy(&bytes[..SUMMARY])),
        [b'{', ..] => String::from_utf8_lossy(bytes).into_owned(),
        _ if bytes.len() > SUMMARY => format!("{} ...", hex_string(&bytes[..SUMMARY])),
        _ => hex_string(bytes),
    };
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {error} ({summary})",
        info.kind
    ))
}

fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Go's `encoding/json` error for a body it cannot read the `apiVersion` and `kind` of.
fn go_json_error(error: &serde_json::Error, value: Option<&Value>) -> String {
    match value {
        Some(value) => format!(
            "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            crate::patch::go_json_kind(value)
        ),
        None if error.is_eof() => "unexpected end of JSON input".to_string(),
        None => error.to_string(),
    }
}

fn parse_object(parts: &Parts, bytes: &[u8], info: &ResourceInfo) -> ApiResult<Value> {
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_ascii_lowercase();
    let value: Value = if content_type.starts_with(crate::protobuf::CONTENT_TYPE) {
        crate::protobuf::decode_object(bytes).map_err(|e| ApiError::bad_request(e.to_string()))?
    } else if content_type.contains("yaml") {
        serde_yaml::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?
    } else if content_type.contains("json") || content_type.is_empty() {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| unrecognized(info, bytes, &go_json_error(&e, None)))?;
        if !value.is_object() && !value.is_null() {
            let error = serde_json::Error::io(std::io::Error::other("not an object"));
            return Err(unrecognized(info, bytes, &go_json_error(&error, Some(&value))));
        }
        value
    } else {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ));
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the body of the request was not a JSON object"));
    }
    Ok(value)
}

/// The content type of a PATCH and the patch kind it names, or the real server's refusal.
fn patch_kind(parts: &Parts, query: &Query, accepted: &[&str]) -> ApiResult<PatchKind> {
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    // Routes consume only the four patch types; anything else is refused before the handler runs.
    if !PATCH_TYPES.contains(&content_type.as_str()) {
        return Err(ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type").with_details(json!({})));
    }
    if !accepted.contains(&content_type.as_str()) {
        return Err(ApiError::unsupported_patch(&content_type, accepted));
    }
    Ok(match content_type.as_str() {
        "application/json-patch+json" => PatchKind::Json,
        "application/merge-patch+json" => PatchKind::Merge,
        "application/strategic-merge-patch+json" => PatchKind::Strategic,
        _ => {
            let force = match query.get("force") {
                None | Some("false") => false,
                Some("true") => true,
                Some(_) => return Err(ApiError::bad_request("force must be true or false")),
            };
            PatchKind::Apply { force }
        }
    })
}

/// `/scale` of a scalable resource: GET, PUT and PATCH of its `autoscaling/v1` `Scale`.
async fn scale(
    cluster: &Cluster,
    parts: Parts,
    body: Body,
    path: &ResourcePath,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    query: &Query,
) -> ApiResult<Response> {
    let Some(name) = path.name.clone() else {
        return Err(ApiError::no_route());
    };
    let request = write_request(&parts, query, info, namespace, Some("scale".into()))?;
    let outcome = match parts.method {
        Method::GET => return Ok(json_response(200, &cluster.get_scale(&request, &name)?)),
        Method::PUT => {
            let bytes = read_body(body).await?;
            let value: Value = serde_json::from_slice(&bytes)
                .or_else(|_| serde_yaml::from_slice(&bytes))
                .map_err(|error| {
                    ApiError::bad_request(format!("the body of the request could not be read: {error}"))
                })?;
            cluster.update_scale(&request, &name, value)?
        }
        Method::PATCH => {
            let kind = patch_kind(
                &parts,
                query,
                &[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                ],
            )?;
            let bytes = read_body(body).await?;
            cluster.patch_scale(&request, &name, kind, &bytes)?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    Ok(with_warnings(json_response(200, &outcome.object), &outcome.warnings))
}

#[allow(clippy::too_many_arguments)]
async fn resource(
    cluster: Arc<Cluster>,
    parts: Parts,
    body: Body,
    path: ResourcePath,
    info: Arc<ResourceInfo>,
    query: Query,
    representation: Representation,
    listener: Option<tokio_util::sync::CancellationToken>,
) -> ApiResult<Response> {
    if !info.namespaced && path.namespace.is_some() {
        return Err(ApiError::no_route());
    }
    let is_namespace_kind = info.is_builtin() && info.group.is_empty() && info.kind == "Namespace";
    match path.subresource.as_deref() {
        None => {}
        Some("status") if info.status_subresource => {}
        Some("finalize") if is_namespace_kind => {}
        Some("scale") if info.scale.is_some() => {}
        Some(_) => return Err(ApiError::no_route()),
    }
    let namespace = path.namespace.clone().unwrap_or_default();
    let method = parts.method.clone();
    let include = IncludeObject::parse(query.get("includeObject"));
    if path.subresource.as_deref() == Some("scale") {
        return scale(&cluster, parts, body, &path, &info, &namespace, &query).await;
    }
    match (method, path.name.clone()) {
        (Method::GET, Some(name)) => {
            if path.legacy_watch || query.flag("watch") {
                return watch::serve(
                    cluster,
                    info.clone(),
                    namespace_filter(&info, &path),
                    Some(name),
                    query,
                    representation,
                    listener,
                );
            }
            let key = ObjectKey::new(&info.storage, if info.namespaced { &namespace } else { "" }, &name);
            let stored = cluster
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(info.subject(&name)))?;
            let (body, content_type) = object_body(&info, &stored, &representation, include);
            Ok(bytes_response(200, body, &content_type))
        }
        (Method::GET, None) => {
            if path.legacy_watch || query.flag("watch") {
                return watch::serve(
                    cluster,
                    info.clone(),
                    namespace_filter(&info, &path),
                    None,
                    query,
                    representation,
                    listener,
                );
            }
            list(
                &cluster,
                &info,
                namespace_filter(&info, &path),
                &query,
                &representation,
                include,
            )
        }
        (Method::POST, None) => {
            if info.namespaced && path.namespace.is_none() {
                return Err(ApiError::no_route());
            }
            let request = write_request(&parts, &query, &info, &namespace, None)?;
            let bytes = read_body(body).await?;
            let object = parse_object(&parts, &bytes, &info)?;
            let outcome = cluster.create(&request, object)?;
            Ok(with_warnings(json_response(201, &outcome.object), &outcome.warnings))
        }
        (Method::PUT, Some(name)) => {
            let bytes = read_body(body).await?;
            let object = parse_object(&parts, &bytes, &info)?;
            if path.subresource.as_deref() == Some("finalize") {
                return finalize_namespace(&cluster, &info, &name, object);
            }
            let request = write_request(&parts, &query, &info, &namespace, path.subresource.clone())?;
            let outcome = cluster.update(&request, &name, object)?;
            Ok(with_warnings(json_response(200, &outcome.object), &outcome.warnings))
        }
        (Method::PATCH, Some(name)) => {
            let accepted: &[&str] = if info.is_builtin() {
                &[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                ]
            } else {
                &[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml",
                ]
            };
            let kind = patch_kind(&parts, &query, accepted)?;
            if query.get("force").is_some() && !matches!(kind, PatchKind::Apply { .. }) {
                return Err(ApiError::invalid_fields(
                    "meta.k8s.io",
                    "PatchOptions",
                    "",
                    &[crate::error::FieldViolation::forbidden(
                        "force",
                        "may not be specified for non-apply patch",
                    )],
                ));
            }
            let request = write_request(&parts, &query, &info, &namespace, path.subresource.clone())?;
            let bytes = read_body(body).await?;
            let outcome = cluster.patch(&request, &name, kind, &bytes)?;
            let status = if outcome.created { 201 } else { 200 };
            Ok(with_warnings(json_response(status, &outcome.object), &outcome.warnings))
        }
        (Method::DELETE, Some(name)) => {
            if path.subresource.is_some() {
                return Err(ApiError::method_not_allowed());
            }
            let bytes = read_body(body).await?;
            let options = delete_options(&query, &bytes)?;
            let ns = if info.namespaced { namespace.as_str() } else { "" };
            match cluster.delete(&info, ns, &name, &options)? {
                Deleted::Gone(object) => {
                    if !info.is_builtin() || info.kind == "Pod" {
                        Ok(json_response(200, &object))
                    } else {
                        let mut details = json!({"name": name});
                        if !info.group.is_empty() {
                            details["group"] = json!(info.group);
                        }
                        details["kind"] = json!(info.plural);
                        details["uid"] = json!(object::uid(&object));
                        Ok(json_response(
                            200,
                            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "details": details}),
                        ))
                    }
                }
                Deleted::Pending(object) => Ok(json_response(200, &object)),
            }
        }
        (Method::DELETE, None) => {
            if path.subresource.is_some() {
                return Err(ApiError::method_not_allowed());
            }
            let bytes = read_body(body).await?;
            let options = delete_options(&query, &bytes)?;
            let request = write_request(&parts, &query, &info, &namespace, None)?;
            let filter = selection(&info, &query)?;
            let deleted = cluster.delete_collection(&request, &|o| filter(o), &options)?;
            let items: Vec<std::sync::Arc<Value>> = deleted.into_iter().map(std::sync::Arc::new).collect();
            let metadata = json!({"resourceVersion": cluster.store.revision().to_string()});
            let (body, content_type) = list_body(&info, &items, metadata, &Representation::Json, include);
            Ok(bytes_response(200, body, &content_type))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn namespace_filter(info: &ResourceInfo, path: &ResourcePath) -> Option<String> {
    if info.namespaced { path.namespace.clone() } else { None }
}

fn write_request(
    parts: &Parts,
    query: &Query,
    info: &Arc<ResourceInfo>,
    namespace: &str,
    subresource: Option<String>,
) -> ApiResult<WriteRequest> {
    Ok(WriteRequest {
        info: info.clone(),
        namespace: if info.namespaced {
            namespace.to_string()
        } else {
            String::new()
        },
        subresource,
        dry_run: dry_run(query, options_kind(&parts.method))?,
        manager: field_manager(parts, query)?,
        validation: FieldValidation::parse(query.get("fieldValidation"), options_kind(&parts.method))?,
    })
}

fn delete_options(query: &Query, body: &[u8]) -> ApiResult<DeleteOptions> {
    let mut options = DeleteOptions {
        dry_run: dry_run(query, "DeleteOptions")?,
        ..Default::default()
    };
    let document: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else if body.starts_with(b"k8s\0") {
        crate::protobuf::decode_object(body).map_err(|e| ApiError::bad_request(e.to_string()))?
    } else {
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    if let Some(policy) = document.get("propagationPolicy").and_then(Value::as_str) {
        options.propagation = Some(Propagation::parse(policy)?);
    }
    if let Some(orphan) = document.get("orphanDependents").and_then(Value::as_bool) {
        options.propagation = Some(if orphan {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
    }
    if let Some(preconditions) = document.get("preconditions") {
        options.uid = preconditions.get("uid").and_then(Value::as_str).map(str::to_string);
        options.resource_version = preconditions
            .get("resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if document
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|v| v.as_str() == Some("All")))
    {
        options.dry_run = true;
    }
    if let Some(policy) = query.get("propagationPolicy") {
        options.propagation = Some(Propagation::parse(policy)?);
    }
    if let Some(orphan) = query.get("orphanDependents") {
        options.propagation = Some(if orphan == "true" {
            Propagation::Orphan
        } else {
            Propagation::Background
        });
    }
    Ok(options)
}

/// The field error of a resourceVersion that is not a number, worded as Go's `strconv.ParseUint` fails.
pub fn invalid_resource_version(text: &str) -> String {
    let quoted = crate::go_format::quote(text);
    format!("resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: invalid syntax")
}

type Filter = Box<dyn Fn(&Value) -> bool + Send + Sync>;

/// The label and field selection of a list, watch or deletecollection request.
pub fn selection(info: &ResourceInfo, query: &Query) -> ApiResult<Filter> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or(""), info)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(Box::new(move |object: &Value| {
        labels.matches(object) && fields.matches(object)
    }))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    /// The key to continue from, as etcd keys go: `namespace/name` (just `name` when cluster-scoped) and a NUL.
    start: String,
}

impl ContinueToken {
    /// The version of continue tokens, which tokens of another version are refused for.
    const VERSION: &str = "meta.k8s.io/v1";

    fn new(revision: u64, (namespace, name): (String, String)) -> Self {
        let key = if namespace.is_empty() {
            name
        } else {
            format!("{namespace}/{name}")
        };
        ContinueToken {
            v: Self::VERSION.into(),
            rv: revision,
            start: format!("{key}\u{0}"),
        }
    }

    /// Reads a `continue` parameter, with the real server's errors: the list's resourceVersion and the key to go on
    /// from.
    fn parse(text: &str, info: &ResourceInfo) -> ApiResult<(u64, (String, String))> {
        let invalid =
            |why: String| ApiError::bad_request(format!("invalid continue token: continue key is not valid: {why}"));
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|error| match error {
                base64::DecodeError::InvalidByte(offset, _) | base64::DecodeError::InvalidLastSymbol(offset, _) => {
                    invalid(format!("illegal base64 data at input byte {offset}"))
                }
                _ => invalid(format!("illegal base64 data at input byte {}", text.len())),
            })?;
        let token: serde_json::Map<String, Value> = match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(invalid(format!(
                    "json: cannot unmarshal {} into Go value of type storage.continueToken",
                    crate::patch::go_json_kind(&other)
                )));
            }
            Err(error) if error.is_eof() => return Err(invalid("unexpected end of JSON input".into())),
            Err(error) => return Err(invalid(error.to_string())),
        };
        let version = token.get("v").and_then(Value::as_str).unwrap_or_default();
        if version != Self::VERSION {
            return Err(invalid(format!(
                "server does not recognize this encoded version {version}"
            )));
        }
        let start = token.get("start").and_then(Value::as_str).unwrap_or_default();
        let key = start.strip_suffix('\u{0}').unwrap_or(start);
        let revision = token.get("rv").and_then(Value::as_u64).unwrap_or_default();
        Ok((
            revision,
            match key.split_once('/') {
                Some((namespace, name)) if info.namespaced => (namespace.to_string(), name.to_string()),
                _ => (String::new(), key.to_string()),
            },
        ))
    }
}

fn list(
    cluster: &Cluster,
    info: &Arc<ResourceInfo>,
    namespace: Option<String>,
    query: &Query,
    representation: &Representation,
    include: IncludeObject,
) -> ApiResult<Response> {
    let filter = selection(info, query)?;
    let current = cluster.store.revision();
    let version = query.get("resourceVersion").unwrap_or("");
    let version_match = query.get("resourceVersionMatch").unwrap_or("");
    if !version.is_empty() && version != "0" {
        let requested: u64 = version.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resource version: {}",
                invalid_resource_version(version)
            ))
        })?;
        match version_match {
            "Exact" if requested != current => {
                return Err(ApiError::expired(format!(
                    "too old resource version: {requested} ({current})"
                )));
            }
            _ if requested > current => {
                return Err(ApiError::new(
                    504,
                    "Timeout",
                    format!("Timeout: Too large resource version: {requested}, current: {current}"),
                )
                .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1})));
            }
            _ => {}
        }
    } else if version_match == "Exact" {
        return Err(ApiError::bad_request(
            "resourceVersionMatch \"Exact\" requires a resourceVersion",
        ));
    }
    let limit = match query.get("limit") {
        Some(text) => match text.parse::<i64>() {
            Ok(n) if n > 0 => Some(n as usize),
            Ok(_) => None,
            Err(_) => return Err(ApiError::bad_request(format!("invalid limit: {text:?}"))),
        },
        None => None,
    };
    let (list_revision, after) = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let (revision, key) = ContinueToken::parse(token, info)?;
            (Some(revision).filter(|r| *r > 0), Some(key))
        }
        None => (None, None),
    };
    let fields_name = FieldSelector::parse(query.get("fieldSelector").unwrap_or(""), info)
        .ok()
        .and_then(|f| f.required_name().map(str::to_string));
    let direct = match (&fields_name, &namespace, info.namespaced, &after) {
        (Some(name), Some(_), true, None) | (Some(name), None, false, None) if limit.is_none() => Some(name),
        _ => None,
    };
    let page = match direct {
        Some(name) => {
            let key = ObjectKey::new(&info.storage, namespace.as_deref().unwrap_or(""), name);
            let items = cluster.store.get(&key).filter(|o| filter(o)).into_iter().collect();
            crate::storage::ListPage {
                items,
                revision: current,
                next: None,
                remaining: 0,
            }
        }
        None => cluster
            .store
            .list(&info.storage, namespace.as_deref(), after.as_ref(), limit, &|o| {
                filter(o)
            }),
    };
    // Every page of a list reports the first page's resourceVersion, as the real server's snapshot does: a watch
    // started from it replays whatever changed while the pages were read (a deletion after its object was listed
    // included), instead of starting after it.
    let revision = list_revision.unwrap_or(page.revision);
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if info.custom.is_some() && *representation == Representation::Json {
        // Custom resource lists are unstructured: an empty continue token is written out.
        metadata["continue"] = json!("");
    }
    if let Some(next) = page.next {
        let token = ContinueToken::new(revision, next);
        let encoded =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default());
        metadata["continue"] = json!(encoded);
        if query.get("labelSelector").is_none_or(str::is_empty) && query.get("fieldSelector").is_none_or(str::is_empty)
        {
            metadata["remainingItemCount"] = json!(page.remaining);
        }
    }
    let (body, content_type) = list_body(info, &page.items, metadata, representation, include);
    Ok(bytes_response(200, body, &content_type))
}

fn finalize_namespace(cluster: &Cluster, info: &Arc<ResourceInfo>, name: &str, body: Value) -> ApiResult<Response> {
    let finalizers = object::string_list(object::path(&body, &["spec", "finalizers"]));
    let key = ObjectKey::new(&info.storage, "", name);
    let written = cluster.store.write(&key, false, |current, _| {
        let Some(current) = current else {
            return Err(ApiError::not_found(info.subject(name)));
        };
        let mut object = (**current).clone();
        if finalizers.is_empty() {
            object::ensure_object(&mut object, &["spec"]).remove("finalizers");
        } else {
            object["spec"]["finalizers"] = json!(finalizers);
        }
        if object::is_deleting(&object) && finalizers.is_empty() && object::finalizers(&object).is_empty() {
            return Ok(crate::storage::Change::Delete(object));
        }
        Ok(crate::storage::Change::Update(object))
    })?;
    cluster.wake_collector();
    Ok(json_response(200, &written.object))
}
