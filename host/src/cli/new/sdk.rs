//! Where a new project's SDK comes from: a checkout of this repository by path, or the published package, and the
//! lock files that pin what the SDK is built with.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::Language;
use super::templates::TYPESCRIPT_TOOLS_LOCK;

/// The name of every language's SDK package (crates.io, PyPI and npm alike).
pub const PACKAGE: &str = "wasm-reconciler-sdk";
/// Version of the published Rust SDK that matches this binary (the workspace shares one version).
pub const RUST_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Version of the published Python SDK that matches this binary (`guest-sdk-python/pyproject.toml`).
pub const PYTHON_VERSION: &str = "0.1.0";
/// Version of the published TypeScript SDK that matches this binary (`guest-sdk-js/package.json`).
pub const TYPESCRIPT_VERSION: &str = "0.1.0";

/// Why the SDK could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    /// `--sdk-path` names neither the SDK nor a checkout holding it.
    #[error(
        "--sdk-path {path}: no {language} SDK there; give the SDK's directory ({directory}/ of a wasm-reconciler \
         checkout) or the checkout itself"
    )]
    NotFound {
        /// The path given.
        path: PathBuf,
        /// The language.
        language: Language,
        /// The SDK's directory in a checkout.
        directory: &'static str,
    },
    /// A file of the SDK could not be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The SDK's `package.json` does not parse.
    #[error("{path} is not valid JSON")]
    PackageJson {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
}

/// Where the SDK comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sdk {
    /// A directory of a checkout.
    Path {
        /// The SDK's directory, absolute.
        directory: PathBuf,
        /// How the project's manifests name it: relative to the project when both are in the same checkout (so the
        /// checkout can move as a whole), else absolute.
        reference: String,
        /// The path from the project to it, as npm's lock file records a linked package.
        relative: String,
    },
    /// The published package.
    Published {
        /// Its version.
        version: &'static str,
    },
}

impl Language {
    /// The SDK's directory in a checkout.
    pub fn sdk_directory(self) -> &'static str {
        match self {
            Self::Rust => "guest-sdk",
            Self::Python => "guest-sdk-python",
            Self::Typescript => "guest-sdk-js",
        }
    }

    /// The manifest that names the SDK package.
    fn sdk_manifest(self) -> &'static str {
        match self {
            Self::Rust => "Cargo.toml",
            Self::Python => "pyproject.toml",
            Self::Typescript => "package.json",
        }
    }

    /// The published SDK's version.
    fn published_version(self) -> &'static str {
        match self {
            Self::Rust => RUST_VERSION,
            Self::Python => PYTHON_VERSION,
            Self::Typescript => TYPESCRIPT_VERSION,
        }
    }
}

/// The checkout this binary was built from.
pub fn build_checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether `directory` holds the SDK of `language`: its manifest names the package.
fn is_sdk(language: Language, directory: &Path) -> bool {
    let Ok(manifest) = std::fs::read_to_string(directory.join(language.sdk_manifest())) else {
        return false;
    };
    match language {
        Language::Typescript => {
            serde_json::from_str::<Value>(&manifest).is_ok_and(|package| package["name"] == PACKAGE)
        }
        Language::Rust | Language::Python => manifest
            .lines()
            .any(|line| line.trim() == format!("name = \"{PACKAGE}\"")),
    }
}

/// Decides where the SDK comes from: the published package when asked, else the SDK at `explicit` (its directory or
/// a checkout holding it), else the SDK of the checkout this binary was built from when it still exists, else the
/// published package.
pub fn locate(language: Language, explicit: Option<&Path>, published: bool, project: &Path) -> Result<Sdk, SdkError> {
    let published_sdk = Sdk::Published {
        version: language.published_version(),
    };
    if published {
        return Ok(published_sdk);
    }
    let found = match explicit {
        Some(path) => Some(
            [path.to_path_buf(), path.join(language.sdk_directory())]
                .into_iter()
                .find(|candidate| is_sdk(language, candidate))
                .ok_or_else(|| SdkError::NotFound {
                    path: path.to_path_buf(),
                    language,
                    directory: language.sdk_directory(),
                })?,
        ),
        None => Some(build_checkout().join(language.sdk_directory())).filter(|sdk| is_sdk(language, sdk)),
    };
    let Some(directory) = found else {
        return Ok(published_sdk);
    };
    let directory = directory.canonicalize().map_err(|source| SdkError::Read {
        path: directory.clone(),
        source,
    })?;
    let relative = relative_path(project, &directory);
    let inside_checkout = directory.parent().is_some_and(|checkout| project.starts_with(checkout));
    let reference = if inside_checkout {
        relative.clone()
    } else {
        directory.to_string_lossy().into_owned()
    };
    Ok(Sdk::Path {
        directory,
        reference,
        relative,
    })
}

/// The path from directory `from` to `to`, both absolute and without `.` or `..`.
fn relative_path(from: &Path, to: &Path) -> String {
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut relative = PathBuf::new();
    for _ in common..from.len() {
        relative.push("..");
    }
    relative.extend(&to[common..]);
    relative.to_string_lossy().into_owned()
}

impl Sdk {
    /// The dependency as the language's manifest writes it: a `Cargo.toml` line, a `requirements.txt` line, or the
    /// JSON value of `package.json`'s dependency.
    pub fn dependency(&self, language: Language) -> String {
        match (self, language) {
            (Self::Path { reference, .. }, Language::Rust) => {
                format!("{PACKAGE} = {{ path = {} }}", toml_string(reference))
            }
            (Self::Published { version }, Language::Rust) => format!("{PACKAGE} = \"{version}\""),
            // pip reads a line starting with `.` or `/` as a local project.
            (Self::Path { reference, .. }, Language::Python) => reference.clone(),
            (Self::Published { version }, Language::Python) => format!("{PACKAGE}=={version}"),
            (Self::Path { reference, .. }, Language::Typescript) => json!(format!("file:{reference}")).to_string(),
            (Self::Published { version }, Language::Typescript) => json!(version).to_string(),
        }
    }

    /// One sentence for the README: where the SDK comes from.
    pub fn source(&self, language: Language) -> String {
        match (self, language) {
            (Self::Path { reference, .. }, Language::Rust) => format!(
                "`{PACKAGE}` by path from `{reference}` (`Cargo.toml`); `Cargo.lock` started as that checkout's lock \
                 file, so dependencies are at the versions the SDK is tested with"
            ),
            (Self::Published { version }, Language::Rust) => {
                format!("`{PACKAGE}` {version} from crates.io (`Cargo.toml`)")
            }
            (Self::Path { reference, .. }, Language::Python) => {
                format!("`{PACKAGE}` installed from `{reference}` (`requirements.txt`)")
            }
            (Self::Published { version }, Language::Python) => {
                format!("`{PACKAGE}=={version}` from PyPI (`requirements.txt`)")
            }
            (Self::Path { reference, .. }, Language::Typescript) => format!(
                "`{PACKAGE}` linked from `{reference}` (`package.json`), which must be built: `npm ci && npm run \
                 build` there"
            ),
            (Self::Published { version }, Language::Typescript) => {
                format!("`{PACKAGE}` {version} from npm (`package.json`)")
            }
        }
    }

    /// The Rust project's `Cargo.lock`: the lock file of the checkout holding the SDK, so the project resolves to
    /// the versions the SDK is built and tested with (cargo drops what the project does not use). `None` for the
    /// published SDK or a checkout without one.
    pub fn cargo_lock(&self) -> Result<Option<String>, SdkError> {
        let Self::Path { directory, .. } = self else {
            return Ok(None);
        };
        let Some(lock) = directory
            .ancestors()
            .map(|dir| dir.join("Cargo.lock"))
            .find(|lock| lock.is_file())
        else {
            return Ok(None);
        };
        std::fs::read_to_string(&lock)
            .map(Some)
            .map_err(|source| SdkError::Read { path: lock, source })
    }

    /// The TypeScript project's `package-lock.json`, for a project whose `package.json` is `package`: the build tools
    /// at the versions the repository pins, and the SDK linked by path. Without the SDK by path the lock holds the
    /// tools only, and `npm install` adds the SDK.
    pub fn package_lock(&self, package: &Value) -> Result<String, SdkError> {
        let tools: Map<String, Value> =
            serde_json::from_str(TYPESCRIPT_TOOLS_LOCK).expect("the embedded tools lock is valid JSON");
        let mut root = Map::new();
        for field in ["name", "version", "license", "dependencies", "devDependencies"] {
            if let Some(value) = package.get(field) {
                root.insert(field.to_owned(), value.clone());
            }
        }
        let mut entries: Vec<(String, Value)> = tools.into_iter().collect();
        if let Self::Path {
            directory, relative, ..
        } = self
        {
            let manifest_path = directory.join("package.json");
            let text = std::fs::read_to_string(&manifest_path).map_err(|source| SdkError::Read {
                path: manifest_path.clone(),
                source,
            })?;
            let manifest: Value = serde_json::from_str(&text).map_err(|source| SdkError::PackageJson {
                path: manifest_path,
                source,
            })?;
            // What npm records of a linked package: its manifest's identity and dependency fields.
            let mut linked: Map<String, Value> = [
                "name",
                "version",
                "license",
                "bin",
                "dependencies",
                "devDependencies",
                "engines",
                "peerDependencies",
                "peerDependenciesMeta",
            ]
            .into_iter()
            .filter_map(|field| Some((field.to_owned(), manifest.get(field)?.clone())))
            .collect();
            // npm records `bin` as an object of paths without a leading `./`.
            if let Some(bin) = linked.get_mut("bin") {
                *bin = match bin.take() {
                    Value::String(path) => json!({manifest["name"].as_str().unwrap_or(PACKAGE): path}),
                    other => other,
                };
                if let Some(paths) = bin.as_object_mut() {
                    for path in paths.values_mut() {
                        if let Some(text) = path.as_str() {
                            *path = json!(text.trim_start_matches("./"));
                        }
                    }
                }
            }
            entries.push((relative.clone(), Value::Object(linked)));
            entries.push((
                format!("node_modules/{PACKAGE}"),
                json!({"resolved": relative, "link": true}),
            ));
        }
        // npm writes the root first, then every other entry by path.
        entries.sort_by(|(left, _), (right, _)| left.cmp(right));
        let mut packages = Map::new();
        packages.insert(String::new(), Value::Object(root));
        packages.extend(entries);
        let lock = json!({
            "name": package["name"],
            "version": package["version"],
            "lockfileVersion": 3,
            "requires": true,
            "packages": packages,
        });
        Ok(serde_json::to_string_pretty(&lock).expect("JSON values serialise") + "\n")
    }
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkout() -> PathBuf {
        build_checkout().canonicalize().unwrap()
    }

    #[test]
    fn the_checkout_holds_every_sdk() {
        for language in [Language::Rust, Language::Python, Language::Typescript] {
            let sdk = locate(language, None, false, Path::new("/elsewhere/project")).unwrap();
            let Sdk::Path {
                directory,
                reference,
                relative,
            } = sdk
            else {
                panic!("{language}: the SDK of the checkout is found");
            };
            assert_eq!(directory, checkout().join(language.sdk_directory()));
            assert_eq!(reference, directory.to_string_lossy(), "absolute outside the checkout");
            assert!(relative.starts_with("../../"), "{relative}");
            assert!(relative.ends_with(language.sdk_directory()), "{relative}");
        }
    }

    #[test]
    fn relative_paths_climb_to_the_common_ancestor() {
        assert_eq!(
            relative_path(Path::new("/tmp/a/b"), Path::new("/work/main/guest-sdk-js")),
            "../../../work/main/guest-sdk-js"
        );
        assert_eq!(
            relative_path(Path::new("/work/main/plugins/x"), Path::new("/work/main/guest-sdk")),
            "../../guest-sdk"
        );
    }

    #[test]
    fn a_project_inside_the_checkout_names_the_sdk_relatively() {
        let project = checkout().join("plugins/new-one");
        let sdk = locate(Language::Python, Some(&checkout()), false, &project).unwrap();
        assert_eq!(
            sdk,
            Sdk::Path {
                directory: checkout().join("guest-sdk-python"),
                reference: "../../guest-sdk-python".into(),
                relative: "../../guest-sdk-python".into(),
            }
        );
        assert_eq!(sdk.dependency(Language::Python), "../../guest-sdk-python");
    }

    #[test]
    fn a_path_without_the_sdk_is_refused_and_published_needs_no_path() {
        let error = locate(
            Language::Typescript,
            Some(Path::new("/nonexistent")),
            false,
            Path::new("/p"),
        )
        .unwrap_err();
        assert!(error.to_string().contains("guest-sdk-js/"), "{error}");
        let published = locate(Language::Rust, None, true, Path::new("/p")).unwrap();
        assert_eq!(
            published.dependency(Language::Rust),
            format!("{PACKAGE} = \"{RUST_VERSION}\"")
        );
        assert_eq!(
            Sdk::Published { version: "0.1.0" }.dependency(Language::Typescript),
            "\"0.1.0\""
        );
    }

    #[test]
    fn paths_are_quoted_for_toml() {
        let sdk = Sdk::Path {
            directory: PathBuf::from("/a"),
            reference: r#"/odd "dir"\sdk"#.into(),
            relative: String::new(),
        };
        assert_eq!(
            sdk.dependency(Language::Rust),
            r#"wasm-reconciler-sdk = { path = "/odd \"dir\"\\sdk" }"#
        );
    }

    /// The published versions named by this binary are the versions of the SDKs in the checkout.
    #[test]
    fn published_versions_match_the_checkout() {
        let pyproject = std::fs::read_to_string(checkout().join("guest-sdk-python/pyproject.toml")).unwrap();
        assert!(
            pyproject
                .lines()
                .any(|line| line == format!("version = \"{PYTHON_VERSION}\"")),
            "guest-sdk-python/pyproject.toml has version {PYTHON_VERSION}"
        );
        let package: Value =
            serde_json::from_str(&std::fs::read_to_string(checkout().join("guest-sdk-js/package.json")).unwrap())
                .unwrap();
        assert_eq!(package["version"], TYPESCRIPT_VERSION);
    }

    /// The tools a TypeScript project locks are the repository's TypeScript plugin's, entry for entry.
    #[test]
    fn the_typescript_tools_lock_matches_the_repository() {
        let repository: Value = serde_json::from_str(
            &std::fs::read_to_string(checkout().join("plugins/configmapset-ts/package-lock.json")).unwrap(),
        )
        .unwrap();
        let tools: Map<String, Value> = serde_json::from_str(TYPESCRIPT_TOOLS_LOCK).unwrap();
        for (key, entry) in &tools {
            assert_eq!(&repository["packages"][key], entry, "{key}");
        }
        let template: Value = serde_json::from_str(
            include_str!("../../../templates/plugin/typescript/package.json")
                .replace("{{name}}", "x")
                .replace("{{kind}}", "X")
                .replace("{{sdk_dependency}}", "\"0\"")
                .as_str(),
        )
        .unwrap();
        let mut pinned = repository["packages"][""]["devDependencies"]
            .as_object()
            .unwrap()
            .clone();
        pinned.remove("yaml");
        assert_eq!(template["devDependencies"], Value::Object(pinned));
        for tool in pinned_tool_entries(&template) {
            assert!(tools.contains_key(&tool), "{tool} is locked");
        }
    }

    fn pinned_tool_entries(package: &Value) -> Vec<String> {
        package["devDependencies"]
            .as_object()
            .unwrap()
            .keys()
            .map(|name| format!("node_modules/{name}"))
            .collect()
    }

    /// Python projects pin the build and test tools the repository's Python plugin is built with.
    #[test]
    fn the_python_pins_match_the_repository() {
        let repository = std::fs::read_to_string(checkout().join("guest-sdk-python/requirements.txt")).unwrap();
        let template = include_str!("../../../templates/plugin/python/requirements.txt");
        for pin in template.lines().filter(|line| line.contains("==")) {
            assert!(
                repository.lines().any(|line| line == pin),
                "{pin} is pinned by guest-sdk-python"
            );
        }
    }

    #[test]
    fn the_package_lock_links_the_sdk_and_locks_the_tools() {
        let package = json!({
            "name": "demo", "version": "0.1.0",
            "dependencies": {PACKAGE: "file:../guest-sdk-js"},
            "devDependencies": {"typescript": "5.9.3"},
        });
        let sdk = Sdk::Path {
            directory: checkout().join("guest-sdk-js"),
            reference: "/absolute/guest-sdk-js".into(),
            relative: "../guest-sdk-js".into(),
        };
        let lock: Value = serde_json::from_str(&sdk.package_lock(&package).unwrap()).unwrap();
        let packages = lock["packages"].as_object().unwrap();
        assert_eq!(packages.keys().next().map(String::as_str), Some(""));
        assert_eq!(packages[""]["dependencies"], package["dependencies"]);
        assert_eq!(packages["../guest-sdk-js"]["name"], PACKAGE);
        assert_eq!(
            packages["node_modules/wasm-reconciler-sdk"],
            json!({"resolved": "../guest-sdk-js", "link": true})
        );
        assert_eq!(packages["node_modules/typescript"]["version"], "5.9.3");
        let keys: Vec<&String> = packages.keys().skip(1).collect();
        assert!(keys.is_sorted(), "{keys:?}");

        let published: Value =
            serde_json::from_str(&Sdk::Published { version: "0.1.0" }.package_lock(&package).unwrap()).unwrap();
        assert!(published["packages"].get("node_modules/wasm-reconciler-sdk").is_none());
    }
}
