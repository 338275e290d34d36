//! The names a new plugin project is built from: its DNS-1123 name and the group, version and kind it reconciles.

use std::fmt;

use crate::plugin::{is_dns_label, is_dns_subdomain};

/// Why a name or a kind cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The plugin name is not a DNS-1123 label starting with a letter.
    #[error(
        "plugin name `{0}` is not a DNS-1123 label: use at most 63 lowercase letters, digits and '-', starting with \
         a letter and ending with a letter or digit (e.g. `configmap-mirror`)"
    )]
    Name(String),
    /// The plugin name is a word Rust reserves for itself, so it cannot name the crate.
    #[error("plugin name `{0}` cannot name a Rust crate (it is a keyword or a reserved crate name); choose another")]
    RustReserved(String),
    /// `--kind` does not have three parts.
    #[error("--kind `{0}` is not GROUP/VERSION/KIND (e.g. `example.com/v1/Widget`)")]
    KindShape(String),
    /// The group is not a DNS subdomain with a dot.
    #[error(
        "group `{0}` is not valid for a CustomResourceDefinition: it must be a DNS subdomain with at least one dot, \
         in lowercase letters, digits, '-' and '.' (e.g. `example.com`)"
    )]
    Group(String),
    /// The group belongs to Kubernetes.
    #[error(
        "group `{0}` is reserved for Kubernetes APIs (groups ending in k8s.io or kubernetes.io need API review); use \
         a domain you own"
    )]
    ReservedGroup(String),
    /// The version is not a DNS-1035 label.
    #[error(
        "version `{0}` is not a DNS-1035 label: use at most 63 lowercase letters, digits and '-', starting with a \
         letter (e.g. `v1`, `v1alpha1`)"
    )]
    Version(String),
    /// The kind is not UpperCamelCase.
    #[error(
        "kind `{0}` is not valid: it must start with an uppercase letter and hold only letters and digits, and its \
         lowercase plural must fit in 63 characters (e.g. `Widget`)"
    )]
    Kind(String),
    /// The default kind derived from the plugin name is not usable.
    #[error("no kind can be derived from plugin name `{0}`; give one with --kind GROUP/VERSION/KIND")]
    DerivedKind(String),
}

/// Words a Rust crate may not be named (keywords, and the names cargo refuses), separated by spaces.
const RUST_RESERVED: &str = "as async await box break const continue crate dyn else enum extern false fn for gen if \
    impl in let loop match mod move mut pub ref return self static struct super trait true try type unsafe use where \
    while yield abstract become do final macro override priv typeof unsized virtual alloc core std proc-macro test \
    build deps examples incremental";

/// A plugin's name: a DNS-1123 label starting with a letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginName(String);

impl PluginName {
    /// Checks `name`.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let valid = is_dns_label(name) && name.starts_with(|c: char| c.is_ascii_lowercase());
        if valid {
            Ok(Self(name.to_owned()))
        } else {
            Err(NameError::Name(name.to_owned()))
        }
    }

    /// Checks that the name can also name a Rust crate.
    pub fn check_rust(&self) -> Result<(), NameError> {
        if RUST_RESERVED.split_whitespace().any(|reserved| reserved == self.0) {
            Err(NameError::RustReserved(self.0.clone()))
        } else {
            Ok(())
        }
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as a Rust crate identifier (`-` becomes `_`).
    pub fn crate_name(&self) -> String {
        self.0.replace('-', "_")
    }

    /// The name in UpperCamelCase (`configmap-mirror` → `ConfigmapMirror`).
    pub fn upper_camel_case(&self) -> String {
        self.0
            .split('-')
            .filter(|part| !part.is_empty())
            .map(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            })
            .collect()
    }
}

impl fmt::Display for PluginName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kind a new plugin reconciles, with the names its CustomResourceDefinition needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// API group, e.g. `example.com`.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Widget`.
    pub kind: String,
}

impl Kind {
    /// The group every derived kind lives in.
    pub const DEFAULT_GROUP: &'static str = "example.com";
    /// The version every derived kind has.
    pub const DEFAULT_VERSION: &'static str = "v1";

    /// Parses `GROUP/VERSION/KIND`.
    pub fn parse(text: &str) -> Result<Self, NameError> {
        let parts: Vec<&str> = text.split('/').collect();
        let [group, version, kind] = parts.as_slice() else {
            return Err(NameError::KindShape(text.to_owned()));
        };
        Self::new(group, version, kind)
    }

    /// `example.com/v1/<Name>` for a plugin name.
    pub fn derived_from(name: &PluginName) -> Result<Self, NameError> {
        Self::new(Self::DEFAULT_GROUP, Self::DEFAULT_VERSION, &name.upper_camel_case())
            .map_err(|_| NameError::DerivedKind(name.to_string()))
    }

    /// Checks each part.
    pub fn new(group: &str, version: &str, kind: &str) -> Result<Self, NameError> {
        if !is_dns_subdomain(group) || !group.contains('.') {
            return Err(NameError::Group(group.to_owned()));
        }
        if group == "k8s.io"
            || group.ends_with(".k8s.io")
            || group == "kubernetes.io"
            || group.ends_with(".kubernetes.io")
        {
            return Err(NameError::ReservedGroup(group.to_owned()));
        }
        if !is_dns_label(version) || !version.starts_with(|c: char| c.is_ascii_lowercase()) {
            return Err(NameError::Version(version.to_owned()));
        }
        let kind_valid = kind.len() <= 63
            && kind.starts_with(|c: char| c.is_ascii_uppercase())
            && kind.chars().all(|c| c.is_ascii_alphanumeric());
        if !kind_valid {
            return Err(NameError::Kind(kind.to_owned()));
        }
        let parsed = Self {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        };
        // The plural must be a DNS-1035 label, and the CRD's name a DNS subdomain.
        if parsed.plural().len() > 63 || parsed.crd_name().len() > 253 {
            return Err(NameError::Kind(kind.to_owned()));
        }
        Ok(parsed)
    }

    /// `group/version`, the objects' `apiVersion`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The lowercase singular resource name, e.g. `widget`.
    pub fn singular(&self) -> String {
        self.kind.to_ascii_lowercase()
    }

    /// The lowercase plural resource name, by the English rules most CRDs follow: `widgets`, `classes`,
    /// `boxes`, `batches`, `policies` (but `gateways`).
    pub fn plural(&self) -> String {
        let singular = self.singular();
        let ends_with_consonant_y = singular.ends_with('y')
            && !singular[..singular.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u'])
            && singular.len() > 1;
        if ends_with_consonant_y {
            format!("{}ies", &singular[..singular.len() - 1])
        } else if ["s", "x", "z", "ch", "sh"].iter().any(|end| singular.ends_with(end)) {
            format!("{singular}es")
        } else {
            format!("{singular}s")
        }
    }

    /// The CustomResourceDefinition's name, `<plural>.<group>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural(), self.group)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.group, self.version, self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_are_dns_labels_starting_with_a_letter() {
        for good in ["a", "widget", "configmap-mirror", "v2-sync", &"a".repeat(63)] {
            assert!(PluginName::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "Widget", "-a", "a-", "1abc", "a_b", "a.b", "ä", &"a".repeat(64)] {
            assert_eq!(PluginName::parse(bad), Err(NameError::Name(bad.to_owned())), "{bad}");
        }
        assert!(PluginName::parse("self").unwrap().check_rust().is_err());
        assert!(PluginName::parse("test").unwrap().check_rust().is_err());
        assert!(PluginName::parse("self-check").unwrap().check_rust().is_ok());
    }

    #[test]
    fn names_convert_to_crate_and_type_names() {
        let name = PluginName::parse("configmap-mirror").unwrap();
        assert_eq!(name.crate_name(), "configmap_mirror");
        assert_eq!(name.upper_camel_case(), "ConfigmapMirror");
        assert_eq!(
            Kind::derived_from(&name).unwrap().to_string(),
            "example.com/v1/ConfigmapMirror"
        );
        assert_eq!(
            Kind::derived_from(&PluginName::parse("v2-x9").unwrap()).unwrap().kind,
            "V2X9"
        );
    }

    #[test]
    fn kinds_parse_and_explain_what_is_wrong() {
        let kind = Kind::parse("apps.example.org/v1alpha1/Gadget").unwrap();
        assert_eq!(kind.api_version(), "apps.example.org/v1alpha1");
        assert_eq!(kind.crd_name(), "gadgets.apps.example.org");
        assert_eq!(
            Kind::parse("example.com/v1"),
            Err(NameError::KindShape("example.com/v1".into()))
        );
        assert_eq!(Kind::parse("a/b/c/d"), Err(NameError::KindShape("a/b/c/d".into())));
        assert_eq!(
            Kind::parse("example/v1/Widget"),
            Err(NameError::Group("example".into()))
        );
        assert_eq!(
            Kind::parse("Example.com/v1/Widget"),
            Err(NameError::Group("Example.com".into()))
        );
        assert_eq!(Kind::parse("/v1/Widget"), Err(NameError::Group("".into())));
        assert_eq!(
            Kind::parse("apps.k8s.io/v1/Widget"),
            Err(NameError::ReservedGroup("apps.k8s.io".into()))
        );
        assert_eq!(
            Kind::parse("example.com/V1/Widget"),
            Err(NameError::Version("V1".into()))
        );
        assert_eq!(Kind::parse("example.com/1/Widget"), Err(NameError::Version("1".into())));
        assert_eq!(
            Kind::parse("example.com/v1/widget"),
            Err(NameError::Kind("widget".into()))
        );
        assert_eq!(
            Kind::parse("example.com/v1/My-Kind"),
            Err(NameError::Kind("My-Kind".into()))
        );
        let message = Kind::parse("example.com/v1/widget").unwrap_err().to_string();
        assert!(message.contains("uppercase letter"), "{message}");
    }

    #[test]
    fn plurals_follow_the_usual_rules() {
        let plural = |kind: &str| Kind::new("example.com", "v1", kind).unwrap().plural();
        assert_eq!(plural("Widget"), "widgets");
        assert_eq!(plural("Policy"), "policies");
        assert_eq!(plural("Gateway"), "gateways");
        assert_eq!(plural("Class"), "classes");
        assert_eq!(plural("Box"), "boxes");
        assert_eq!(plural("Batch"), "batches");
        assert_eq!(plural("Mesh"), "meshes");
        assert_eq!(plural("Y"), "ys");
    }
}
