//! The contract versions this host serves, which one a component is built against (read from the version of the
//! `controller` interface it exports), and what it asks of the host beyond its contract (read from its imports).
//!
//! The rule (see `wit/v0.2/reconciler.wit`): the package version is the contract version; a host serves every
//! plugin of a major version it supports (for 0.x, of a minor version it supports) and refuses others with a
//! message naming the version found and the versions served. This host serves 0.1.x, 0.2.x and 0.3.x.

use std::fmt;

use super::WIT_PACKAGE;

/// The interface every plugin exports, whatever its contract version.
pub(crate) const EXPORTED_INTERFACE: &str = "wasm-reconciler:plugin/controller";
/// Where a component's import of outbound HTTP is named.
const OUTBOUND_HTTP_IMPORT: &str = "wasi:http/outgoing-handler";
/// Every `wasi:http` interface; the host links them for contract 0.2 plugins only.
const HTTP_PACKAGE: &str = "wasi:http/";
/// Where a component's import of variables is named.
const VARIABLES_IMPORT: &str = "wasm-reconciler:plugin/variables";
/// The clocks: `wasi:clocks/wall-clock` and `wasi:clocks/monotonic-clock`.
const CLOCKS_PACKAGE: &str = "wasi:clocks/";
/// Randomness a call cannot repeat: `wasi:random/random` (secure) and `wasi:random/insecure`. Only
/// `wasi:random/insecure-seed` (what Rust's `HashMap` seeds itself with) is answered alike on every call.
const RANDOM_IMPORTS: [&str; 2] = ["wasi:random/random@", "wasi:random/insecure@"];

/// A contract version this host serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Contract {
    /// `wasm-reconciler:plugin@0.1.x`: reads and logs only.
    V0_1,
    /// `wasm-reconciler:plugin@0.2.x`: 0.1 plus variables and outbound HTTP, granted per plugin.
    V0_2,
    /// `wasm-reconciler:plugin@0.3.x`: 0.2 with the view lent as a resource and children that share bases.
    V0_3,
}

impl Contract {
    /// Every version served, oldest first.
    pub const SERVED: [Self; 3] = [Self::V0_1, Self::V0_2, Self::V0_3];

    /// The served version `version` (`0.2.0`, `0.2.3`) belongs to, following semver: for 0.x the same minor
    /// version, else the same major version.
    pub fn of_version(version: &str) -> Option<Self> {
        let mut parts = version.split(['.', '-', '+']);
        let major: u64 = parts.next()?.parse().ok()?;
        let minor: u64 = parts.next()?.parse().ok()?;
        match (major, minor) {
            (0, 1) => Some(Self::V0_1),
            (0, 2) => Some(Self::V0_2),
            (0, 3) => Some(Self::V0_3),
            _ => None,
        }
    }

    /// The versions it covers: `0.1.x`.
    pub fn range(self) -> &'static str {
        match self {
            Self::V0_1 => "0.1.x",
            Self::V0_2 => "0.2.x",
            Self::V0_3 => "0.3.x",
        }
    }

    /// Whether a plugin of this version may be granted outbound HTTP and variables.
    pub fn grants_outbound(self) -> bool {
        matches!(self, Self::V0_2 | Self::V0_3)
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{WIT_PACKAGE}@{}", self.range())
    }
}

/// `wasm-reconciler:plugin@0.1.x, wasm-reconciler:plugin@0.2.x and wasm-reconciler:plugin@0.3.x`.
pub(crate) fn served_versions() -> String {
    let versions: Vec<String> = Contract::SERVED.iter().map(ToString::to_string).collect();
    match versions.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The contract version in the name of a `controller` export, `Some("")` for an unversioned one.
pub(crate) fn exported_version(export: &str) -> Option<&str> {
    let rest = export.strip_prefix(EXPORTED_INTERFACE)?;
    Some(rest.strip_prefix('@').unwrap_or(""))
}

/// What a component asks of the host beyond reads and logs, from its imports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// It imports `wasi:http/outgoing-handler`: it wants to send HTTP requests.
    pub outbound_http: bool,
    /// It imports `variables`: it wants values from its settings' Secrets.
    pub variables: bool,
    /// It imports a clock: what it answers may depend on when it is called.
    pub clock: bool,
    /// It imports randomness that differs from call to call (`wasi:random/random` or `wasi:random/insecure`).
    pub randomness: bool,
}

impl Capabilities {
    /// Reads them from a component's import names.
    pub(crate) fn of_imports<'a>(imports: impl IntoIterator<Item = &'a str>) -> Self {
        let mut capabilities = Self::default();
        for import in imports {
            capabilities.outbound_http |= import.starts_with(OUTBOUND_HTTP_IMPORT);
            capabilities.variables |= import.starts_with(VARIABLES_IMPORT);
            capabilities.clock |= import.starts_with(CLOCKS_PACKAGE);
            capabilities.randomness |= RANDOM_IMPORTS.iter().any(|random| import.starts_with(random));
        }
        capabilities
    }

    /// Whether the component's answer is a function of what it is given alone: it imports no outbound HTTP, no
    /// variables, no clock and no randomness that differs between calls. Only then may a call be skipped for an
    /// unchanged world.
    pub fn is_pure(&self) -> bool {
        !(self.outbound_http || self.variables || self.clock || self.randomness)
    }

    /// The first import a contract 0.1 plugin may not have, named as the component imports it.
    pub(crate) fn beyond_v0_1<'a>(imports: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        imports
            .into_iter()
            .find(|import| import.starts_with(HTTP_PACKAGE) || import.starts_with(VARIABLES_IMPORT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_map_to_what_the_host_serves() {
        assert_eq!(Contract::of_version("0.1.0"), Some(Contract::V0_1));
        assert_eq!(Contract::of_version("0.1.7"), Some(Contract::V0_1));
        assert_eq!(Contract::of_version("0.2.0"), Some(Contract::V0_2));
        assert_eq!(Contract::of_version("0.2.1-rc.1"), Some(Contract::V0_2));
        assert_eq!(Contract::of_version("0.3.0"), Some(Contract::V0_3));
        assert_eq!(Contract::of_version("0.4.0"), None);
        assert_eq!(Contract::of_version("1.0.0"), None);
        assert_eq!(Contract::of_version(""), None);
        assert_eq!(
            served_versions(),
            "wasm-reconciler:plugin@0.1.x, wasm-reconciler:plugin@0.2.x and wasm-reconciler:plugin@0.3.x"
        );
    }

    #[test]
    fn exports_name_their_version() {
        assert_eq!(
            exported_version("wasm-reconciler:plugin/controller@0.2.0"),
            Some("0.2.0")
        );
        assert_eq!(exported_version("wasm-reconciler:plugin/controller"), Some(""));
        assert_eq!(exported_version("wasi:cli/run@0.2.0"), None);
    }

    #[test]
    fn capabilities_come_from_imports() {
        let imports = [
            "wasi:io/poll@0.2.12",
            "wasi:http/outgoing-handler@0.2.12",
            "wasm-reconciler:plugin/variables@0.2.0",
        ];
        assert_eq!(
            Capabilities::of_imports(imports),
            Capabilities {
                outbound_http: true,
                variables: true,
                ..Capabilities::default()
            }
        );
        assert_eq!(
            Capabilities::beyond_v0_1(imports),
            Some("wasi:http/outgoing-handler@0.2.12")
        );
        assert_eq!(
            Capabilities::of_imports(["wasi:io/poll@0.2.12"]),
            Capabilities::default()
        );
    }

    #[test]
    fn a_clock_or_randomness_makes_a_component_impure() {
        // What a Rust plugin imports: the seed of its HashMaps, answered alike on every call.
        let rust = ["wasi:io/streams@0.2.12", "wasi:random/insecure-seed@0.2.12"];
        assert!(Capabilities::of_imports(rust).is_pure());
        for import in [
            "wasi:clocks/wall-clock@0.2.12",
            "wasi:clocks/monotonic-clock@0.2.0",
            "wasi:random/random@0.2.12",
            "wasi:random/insecure@0.2.0",
            "wasi:http/outgoing-handler@0.2.12",
            "wasm-reconciler:plugin/variables@0.2.0",
        ] {
            assert!(!Capabilities::of_imports([import]).is_pure(), "{import}");
        }
        let clock = Capabilities::of_imports(["wasi:clocks/wall-clock@0.2.12"]);
        assert!(clock.clock && !clock.randomness);
    }
}
