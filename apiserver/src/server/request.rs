//! Parsing of requests: the route a path names, query parameters, and content negotiation.

use std::collections::HashMap;

/// What a path asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and their sub-checks).
    Health,
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3Index,
    /// `/openapi/v3/api/v1`, `/openapi/v3/apis/{group}/{version}`.
    OpenApiV3 {
        /// Group ("" for core).
        group: String,
        /// Version.
        version: String,
    },
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    GroupList,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`.
    ResourceList {
        /// Group.
        group: String,
        /// Version.
        version: String,
    },
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// Nothing here.
    NotFound,
}

/// A path under a group version that names objects.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourcePath {
    /// Group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource.
    pub plural: String,
    /// Namespace segment, if any.
    pub namespace: Option<String>,
    /// Object name, if any.
    pub name: Option<String>,
    /// Subresource, if any.
    pub subresource: Option<String>,
    /// Legacy `/watch/` prefix.
    pub legacy_watch: bool,
}

fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

/// Parse a request path.
pub fn route(path: &str) -> Route {
    let segments: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(decode).collect();
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    match parts.as_slice() {
        ["version"] => Route::Version,
        ["healthz", ..] | ["livez", ..] | ["readyz", ..] => Route::Health,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", "api", "v1"] => Route::OpenApiV3 {
            group: String::new(),
            version: "v1".into(),
        },
        ["openapi", "v3", "apis", group, version] => Route::OpenApiV3 {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::ResourceList {
            group: String::new(),
            version: "v1".into(),
        },
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest),
        ["apis"] => Route::GroupList,
        ["apis", group] => Route::Group(group.to_string()),
        ["apis", group, version] => Route::ResourceList {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest),
        _ => Route::NotFound,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let mut parts = rest;
    let mut legacy_watch = false;
    if parts.first() == Some(&"watch") {
        legacy_watch = true;
        parts = &parts[1..];
    }
    let mut namespace = None;
    if parts.first() == Some(&"namespaces") && parts.len() > 2 && !["status", "finalize"].contains(&parts[2]) {
        namespace = Some(parts[1].to_string());
        parts = &parts[2..];
    }
    if parts.is_empty() || parts.len() > 3 {
        return Route::NotFound;
    }
    Route::Resource(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        plural: parts[0].to_string(),
        namespace,
        name: parts.get(1).map(|s| s.to_string()),
        subresource: parts.get(2).map(|s| s.to_string()),
        legacy_watch,
    })
}

/// Query parameters.
#[derive(Debug, Clone, Default)]
pub struct Query {
    params: HashMap<String, String>,
}

impl Query {
    /// Parse a raw query string.
    pub fn parse(raw: Option<&str>) -> Self {
        let params = raw
            .map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Query { params }
    }

    /// A parameter's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// A boolean parameter (`true`/`1`).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true") | Some("1"))
    }
}

/// The representation a client accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Representation {
    /// Plain JSON objects.
    Json,
    /// `meta.k8s.io` Table at this apiVersion.
    Table(String),
    /// `PartialObjectMetadata`(List).
    PartialMetadata,
    /// Aggregated discovery at this `apidiscovery.k8s.io` version.
    AggregatedDiscovery(String),
}

/// Pick the first acceptable representation of an `Accept` header (JSON when nothing else fits).
pub fn negotiate(accept: Option<&str>) -> Representation {
    let Some(accept) = accept else {
        return Representation::Json;
    };
    for range in accept.split(',') {
        let mut pieces = range.split(';').map(str::trim);
        let media = pieces.next().unwrap_or("").to_ascii_lowercase();
        let params: HashMap<String, String> = pieces
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let json_like = matches!(
            media.as_str(),
            "application/json" | "*/*" | "application/*" | "application/yaml"
        );
        if !json_like {
            continue;
        }
        let group = params.get("g").map(String::as_str).unwrap_or("");
        let version = params.get("v").map(String::as_str).unwrap_or("");
        match params.get("as").map(String::as_str) {
            None => return Representation::Json,
            Some("Table") if group == "meta.k8s.io" && (version == "v1" || version == "v1beta1") => {
                return Representation::Table(format!("meta.k8s.io/{version}"));
            }
            Some("PartialObjectMetadata") | Some("PartialObjectMetadataList")
                if group == "meta.k8s.io" && (version == "v1" || version == "v1beta1") =>
            {
                return Representation::PartialMetadata;
            }
            Some("APIGroupDiscoveryList")
                if group == "apidiscovery.k8s.io" && (version == "v2" || version == "v2beta1") =>
            {
                return Representation::AggregatedDiscovery(version.to_string());
            }
            Some(_) => continue,
        }
    }
    Representation::Json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route("/api/v1/namespaces/default/configmaps/x"),
            Route::Resource(ResourcePath {
                group: "".into(),
                version: "v1".into(),
                plural: "configmaps".into(),
                namespace: Some("default".into()),
                name: Some("x".into()),
                ..Default::default()
            })
        );
        let Route::Resource(ns) = route("/api/v1/namespaces/foo/status") else {
            panic!("namespace status is a resource route");
        };
        assert_eq!(
            (ns.plural.as_str(), ns.name.as_deref(), ns.subresource.as_deref()),
            ("namespaces", Some("foo"), Some("status"))
        );
        let Route::Resource(deploy) = route("/apis/apps/v1/deployments") else {
            panic!("cluster-wide list");
        };
        assert_eq!(deploy.namespace, None);
        assert_eq!(route("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(route("/nope"), Route::NotFound);
    }

    #[test]
    fn negotiation() {
        assert_eq!(
            negotiate(Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
            )),
            Representation::Table("meta.k8s.io/v1".into())
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf,application/json")),
            Representation::Json
        );
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf")),
            Representation::Json
        );
        assert_eq!(
            negotiate(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            )),
            Representation::AggregatedDiscovery("v2".into())
        );
    }
}
