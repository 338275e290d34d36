//! Plugin references: where a ConfigMap's `plugin.ref` says the component lives — an OCI artifact
//! (`oci://registry/repository[:tag][@sha256:…]`) or a file at an `https://` URL — parsed and checked without I/O.

use std::fmt;
use std::net::IpAddr;

/// ConfigMap data key holding the reference.
pub const REF_KEY: &str = "plugin.ref";

/// Why a reference is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReferenceError {
    /// Neither `oci://` nor `https://`/`http://`.
    #[error("{0:?} is not a plugin reference: it must start with `oci://` or `https://`")]
    Scheme(String),
    /// No repository after the registry.
    #[error(
        "{0:?} names no repository: write oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST"
    )]
    NoRepository(String),
    /// Neither a tag nor a digest.
    #[error("{0:?} names neither a tag nor a digest: add :TAG or @sha256:DIGEST")]
    NoTagOrDigest(String),
    /// A malformed part.
    #[error("{reference:?}: {message}")]
    Invalid {
        /// The reference given.
        reference: String,
        /// What is wrong.
        message: String,
    },
}

/// Local result alias.
pub type Result<T, E = ReferenceError> = std::result::Result<T, E>;

/// Where a plugin's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginReference {
    /// An artifact in an OCI registry.
    Oci(OciReference),
    /// A component file served over HTTP(S); its sha256 must be pinned by the ConfigMap.
    Url(UrlReference),
}

impl PluginReference {
    /// Parses `oci://…`, `https://…` or `http://…` (the last one only reaches loopback or insecure hosts).
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix("oci://") {
            OciReference::parse_without_scheme(text, rest).map(Self::Oci)
        } else if text.starts_with("https://") || text.starts_with("http://") {
            UrlReference::parse(text).map(Self::Url)
        } else {
            Err(ReferenceError::Scheme(text.to_owned()))
        }
    }

    /// The registry or server, `host[:port]`.
    pub fn authority(&self) -> &str {
        match self {
            Self::Oci(reference) => &reference.registry,
            Self::Url(reference) => &reference.authority,
        }
    }
}

impl fmt::Display for PluginReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Oci(reference) => reference.fmt(f),
            Self::Url(reference) => f.write_str(&reference.url),
        }
    }
}

/// `oci://registry/repository[:tag][@sha256:…]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OciReference {
    /// `host[:port]`.
    pub registry: String,
    /// `path/to/repository`.
    pub repository: String,
    /// The tag, if named.
    pub tag: Option<String>,
    /// The manifest digest (`sha256:<64 hex>`), if pinned.
    pub digest: Option<String>,
}

impl OciReference {
    /// Parses `oci://…`.
    pub fn parse(text: &str) -> Result<Self> {
        match PluginReference::parse(text)? {
            PluginReference::Oci(reference) => Ok(reference),
            PluginReference::Url(_) => Err(ReferenceError::Scheme(text.to_owned())),
        }
    }

    fn parse_without_scheme(whole: &str, rest: &str) -> Result<Self> {
        let invalid = |message: String| ReferenceError::Invalid {
            reference: whole.to_owned(),
            message,
        };
        let (name, digest) = match rest.split_once('@') {
            Some((name, digest)) => {
                check_digest(digest).map_err(invalid)?;
                (name, Some(digest.to_owned()))
            }
            None => (rest, None),
        };
        let Some((registry, path)) = name.split_once('/') else {
            return Err(ReferenceError::NoRepository(whole.to_owned()));
        };
        if registry.is_empty() || path.is_empty() {
            return Err(ReferenceError::NoRepository(whole.to_owned()));
        }
        check_authority(registry).map_err(invalid)?;
        // A tag follows the last `:` of the last path segment (the registry's port is before the first `/`).
        let last_segment_start = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last_segment_start..].rfind(':') {
            Some(colon) => {
                let colon = last_segment_start + colon;
                (&path[..colon], Some(path[colon + 1..].to_owned()))
            }
            None => (path, None),
        };
        check_repository(repository).map_err(invalid)?;
        if let Some(tag) = &tag {
            check_tag(tag).map_err(invalid)?;
        }
        if tag.is_none() && digest.is_none() {
            return Err(ReferenceError::NoTagOrDigest(whole.to_owned()));
        }
        Ok(Self {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag,
            digest,
        })
    }

    /// Whether the reference names its manifest by digest: immutable, never re-resolved.
    pub fn is_pinned(&self) -> bool {
        self.digest.is_some()
    }

    /// The same repository and tag, pinned to `digest`.
    pub fn with_digest(&self, digest: &str) -> Self {
        Self {
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }

    /// The same repository at `tag`, without a digest.
    pub fn with_tag(&self, tag: &str) -> Self {
        Self {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        }
    }

    /// `registry/repository`, the identity cosign signs (`docker-reference`).
    pub fn repository_name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The reference in oci-client's terms (a digest wins over a tag when both are named).
    pub fn to_client(&self) -> oci_client::Reference {
        match (&self.tag, &self.digest) {
            (_, Some(digest)) => {
                oci_client::Reference::with_digest(self.registry.clone(), self.repository.clone(), digest.clone())
            }
            (Some(tag), None) => {
                oci_client::Reference::with_tag(self.registry.clone(), self.repository.clone(), tag.clone())
            }
            (None, None) => unreachable!("parsing requires a tag or a digest"),
        }
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// A component at an `https://` (or, for loopback and insecure hosts, `http://`) URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlReference {
    /// The whole URL.
    pub url: String,
    /// `host[:port]`.
    pub authority: String,
    /// Whether the URL is plain `http://`.
    pub plain_http: bool,
}

impl UrlReference {
    fn parse(text: &str) -> Result<Self> {
        let url = reqwest::Url::parse(text).map_err(|error| ReferenceError::Invalid {
            reference: text.to_owned(),
            message: format!("not a URL: {error}"),
        })?;
        let host = url.host_str().ok_or_else(|| ReferenceError::Invalid {
            reference: text.to_owned(),
            message: "the URL has no host".into(),
        })?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(ReferenceError::Invalid {
                reference: text.to_owned(),
                message: "credentials do not belong in a reference; name a pull secret in the settings".into(),
            });
        }
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Ok(Self {
            url: url.to_string(),
            authority,
            plain_http: url.scheme() == "http",
        })
    }
}

/// `sha256:` and 64 lowercase hex digits.
pub fn check_digest(digest: &str) -> std::result::Result<(), String> {
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(format!("digest {digest:?} is not sha256:<64 hex digits>"));
    };
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(format!("digest {digest:?} is not sha256:<64 lowercase hex digits>"));
    }
    Ok(())
}

fn check_authority(authority: &str) -> std::result::Result<(), String> {
    let (host, port) = split_authority(authority);
    let host_ok = !host.is_empty()
        && (host.parse::<IpAddr>().is_ok()
            || host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'));
    if !host_ok {
        return Err(format!("registry {authority:?} is not a host name or address"));
    }
    if let Some(port) = port
        && port.parse::<u16>().is_err()
    {
        return Err(format!("registry {authority:?} has an invalid port"));
    }
    Ok(())
}

/// Repository path components as the distribution spec allows them: `[a-z0-9]+([._-][a-z0-9]+)*`.
fn check_repository(repository: &str) -> std::result::Result<(), String> {
    let component_ok = |component: &str| {
        !component.is_empty()
            && component
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
            && component.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && component.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
    };
    if repository.is_empty() || !repository.split('/').all(component_ok) {
        return Err(format!(
            "repository {repository:?} is not lowercase letters, digits and separators (._-) in /-separated parts"
        ));
    }
    if repository.len() > 255 {
        return Err("the repository name is longer than 255 characters".into());
    }
    Ok(())
}

/// Tags as the distribution spec allows them: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
fn check_tag(tag: &str) -> std::result::Result<(), String> {
    let mut bytes = tag.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !first_ok || tag.len() > 128 || !bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        return Err(format!(
            "tag {tag:?} is not a valid tag (letters, digits, _ . -; at most 128)"
        ));
    }
    Ok(())
}

/// `host` and optional `port` of `host[:port]` (IPv6 in brackets).
pub fn split_authority(authority: &str) -> (&str, Option<&str>) {
    if let Some(rest) = authority.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':')),
            None => (authority, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, Some(port)),
        _ => (authority, None),
    }
}

/// Whether `host[:port]` is this machine: `localhost`, 127.0.0.0/8 or `::1`.
pub fn is_loopback(authority: &str) -> bool {
    let (host, _) = split_authority(authority);
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn oci(text: &str) -> OciReference {
        OciReference::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn tags_digests_and_ports() {
        let tagged = oci("oci://127.0.0.1:5000/plugins/echo:v1");
        assert_eq!(
            (
                tagged.registry.as_str(),
                tagged.repository.as_str(),
                tagged.tag.as_deref(),
                tagged.digest.as_deref()
            ),
            ("127.0.0.1:5000", "plugins/echo", Some("v1"), None)
        );
        assert!(!tagged.is_pinned());

        let pinned = oci(&format!("oci://ghcr.io/acme/plugins/echo:v1@{DIGEST}"));
        assert_eq!(pinned.tag.as_deref(), Some("v1"));
        assert_eq!(pinned.digest.as_deref(), Some(DIGEST));
        assert!(pinned.is_pinned());
        assert_eq!(
            pinned.to_client().digest(),
            Some(DIGEST),
            "the digest wins over the tag"
        );
        assert_eq!(
            pinned.to_string(),
            format!("oci://ghcr.io/acme/plugins/echo:v1@{DIGEST}")
        );

        let digest_only = oci(&format!("oci://localhost:5000/echo@{DIGEST}"));
        assert_eq!(digest_only.tag, None);
        assert_eq!(digest_only.repository_name(), "localhost:5000/echo");
        assert_eq!(digest_only.with_tag("v2").to_string(), "oci://localhost:5000/echo:v2");
        assert_eq!(
            tagged.with_digest(DIGEST).to_string(),
            format!("oci://127.0.0.1:5000/plugins/echo:v1@{DIGEST}")
        );
    }

    #[test]
    fn malformed_references_say_what_is_wrong() {
        let error = |text: &str| PluginReference::parse(text).unwrap_err().to_string();
        assert!(error("ghcr.io/acme/echo:v1").contains("must start with `oci://` or `https://`"));
        assert!(error("oci://ghcr.io").contains("names no repository"));
        assert!(error("oci://ghcr.io/acme/echo").contains("neither a tag nor a digest"));
        assert!(error("oci://ghcr.io/Acme/echo:v1").contains("is not lowercase letters"));
        assert!(error("oci://ghcr.io/acme/echo:-v1").contains("is not a valid tag"));
        assert!(error("oci://ghcr.io/acme/echo@sha256:abc").contains("64 lowercase hex"));
        assert!(error("oci://ghcr.io/acme/echo@md5:abc").contains("is not sha256:"));
        assert!(error("oci://ghcr.io:port/acme/echo:v1").contains("invalid port"));
        assert!(error("https://user:pw@example.com/p.wasm").contains("credentials do not belong"));
    }

    #[test]
    fn urls() {
        let reference = PluginReference::parse("https://example.com:8443/plugins/echo.wasm").unwrap();
        let PluginReference::Url(url) = &reference else {
            panic!("{reference:?}")
        };
        assert_eq!(url.authority, "example.com:8443");
        assert!(!url.plain_http);
        assert_eq!(reference.authority(), "example.com:8443");
        let plain = PluginReference::parse("http://127.0.0.1:5000/v2/echo/blobs/sha256:00").unwrap();
        let PluginReference::Url(plain) = plain else { panic!() };
        assert!(plain.plain_http);
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "localhost:5000",
            "127.0.0.1:5000",
            "127.1.2.3",
            "[::1]:5000",
            "::1",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in ["example.com", "10.0.0.1:5000", "localhost.example.com", "[::2]:5000"] {
            assert!(!is_loopback(host), "{host}");
        }
        assert_eq!(split_authority("[::1]:5000"), ("::1", Some("5000")));
        assert_eq!(split_authority("registry:5000"), ("registry", Some("5000")));
    }
}
