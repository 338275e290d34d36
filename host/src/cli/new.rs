//! `wasm-reconciler plugin new`: a buildable plugin project in Rust, Python or TypeScript, from templates embedded in
//! the binary (no network): the reconciler, its unit tests, the kind's CRD, a world fixture with its expected
//! outcome, a Makefile and a README.

mod generated;
mod names;
mod sdk;
mod templates;

use std::fmt;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use self::generated::YamlError;
use self::names::{Kind, NameError, PluginName};
use self::sdk::{Sdk, SdkError};
use self::templates::{CHECK_TARGET, RUN_SECTION, TemplateError};

/// The Rust toolchain a Rust project pins: the one this repository builds and tests plugins with.
const RUST_TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");

/// Arguments of `plugin new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The plugin's name: a DNS-1123 label starting with a letter, e.g. `configmap-mirror`. It names the project
    /// directory and package, and labels the ConfigMaps the plugin writes.
    pub name: String,
    /// The language of the project.
    #[arg(long, value_enum)]
    pub lang: Language,
    /// The kind the plugin reconciles [default: example.com/v1/<Name>, Name being NAME in UpperCamelCase].
    #[arg(long, value_name = "GROUP/VERSION/KIND")]
    pub kind: Option<String>,
    /// Where to write the project; it must not exist, or be an empty directory [default: ./NAME].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Depend on the SDK at this path: the language's SDK directory, or a wasm-reconciler checkout holding it
    /// [default: the checkout this binary was built from if it still exists, else the published package].
    #[arg(long, value_name = "PATH", conflicts_with = "published_sdk")]
    pub sdk_path: Option<PathBuf>,
    /// Depend on the published SDK package (crates.io, PyPI or npm) even when a checkout is at hand.
    #[arg(long)]
    pub published_sdk: bool,
}

/// The language of a plugin project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Language {
    /// Rust with `wasm-reconciler-sdk`, built with cargo for `wasm32-wasip2`.
    Rust,
    /// Python with `wasm_reconciler`, built with componentize-py.
    Python,
    /// TypeScript with `wasm-reconciler-sdk`, built with componentize-qjs.
    Typescript,
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rust => "Rust",
            Self::Python => "Python",
            Self::Typescript => "TypeScript",
        })
    }
}

/// Why no project was written.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The name or the kind is not usable.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The target is a file or a directory with something in it.
    #[error("{0} exists and is not an empty directory: choose another --dir, or remove it first")]
    NotEmpty(PathBuf),
    /// The SDK could not be located or read.
    #[error(transparent)]
    Sdk(#[from] SdkError),
    /// A template does not render (a defect of the binary).
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A generated file does not serialise (a defect of the binary).
    #[error(transparent)]
    Yaml(#[from] YamlError),
    /// The rendered `package.json` does not parse (a defect of the binary).
    #[error("the generated package.json is not valid JSON")]
    PackageJson(#[source] serde_json::Error),
    /// The filesystem refused.
    #[error("{what} {path}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl NewError {
    fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self::Io { what, path, source }
    }
}

/// A project ready to be written: where, and every file's path and text.
#[derive(Debug)]
struct Project {
    directory: PathBuf,
    language: Language,
    name: PluginName,
    kind: Kind,
    sdk: Sdk,
    files: Vec<(String, String)>,
}

pub(super) fn run(args: &NewArgs) -> Result<(), Box<dyn std::error::Error>> {
    let project = plan(args)?;
    write(&project)?;
    print_summary(&project);
    Ok(())
}

/// Validates the arguments and renders every file in memory; nothing is written yet.
fn plan(args: &NewArgs) -> Result<Project, NewError> {
    let name = PluginName::parse(&args.name)?;
    if args.lang == Language::Rust {
        name.check_rust()?;
    }
    let kind = match &args.kind {
        Some(text) => Kind::parse(text)?,
        None => Kind::derived_from(&name)?,
    };
    let directory = args.dir.clone().unwrap_or_else(|| PathBuf::from(name.as_str()));
    ensure_empty(&directory)?;
    let resolved = resolve(&directory).map_err(NewError::io("resolving", &directory))?;
    let sdk = sdk::locate(args.lang, args.sdk_path.as_deref(), args.published_sdk, &resolved)?;

    let mut values: Vec<(&str, String)> = vec![
        ("name", name.to_string()),
        ("crate_name", name.crate_name()),
        ("kind", kind.kind.clone()),
        ("group", kind.group.clone()),
        ("version", kind.version.clone()),
        ("api_version", kind.api_version()),
        ("singular", kind.singular()),
        ("plural", kind.plural()),
        ("sdk_dependency", sdk.dependency(args.lang)),
        ("sdk_source", sdk.source(args.lang)),
        ("check_target", CHECK_TARGET.trim_end().to_owned()),
        ("deliver", delivery_note(args.lang, &name)),
    ];
    let run_section = templates::render("common/run.md", RUN_SECTION, &values)?;
    values.push(("run_section", run_section.trim_end().to_owned()));

    let mut files = Vec::new();
    for template in templates::templates(args.lang) {
        files.push((
            template.path.to_owned(),
            templates::render(template.path, template.text, &values)?,
        ));
    }
    files.push(("crd.yaml".into(), generated::crd_yaml(&kind)?));
    files.push(("example.yaml".into(), generated::example_yaml(&kind)?));
    files.push((
        "fixtures/create.world.yaml".into(),
        generated::world_fixture_yaml(&kind)?,
    ));
    files.push((
        "fixtures/create.outcome.yaml".into(),
        generated::expected_outcome_yaml(&name)?,
    ));
    match args.lang {
        Language::Rust => {
            files.push(("rust-toolchain.toml".into(), RUST_TOOLCHAIN.to_owned()));
            if let Some(lock) = sdk.cargo_lock()? {
                files.push(("Cargo.lock".into(), lock));
            }
        }
        Language::Python => {}
        Language::Typescript => {
            let package = files
                .iter()
                .find(|(path, _)| path == "package.json")
                .map(|(_, text)| serde_json::from_str(text))
                .expect("the TypeScript templates have a package.json")
                .map_err(NewError::PackageJson)?;
            files.push(("package-lock.json".into(), sdk.package_lock(&package)?));
        }
    }
    Ok(Project {
        directory,
        language: args.lang,
        name,
        kind,
        sdk,
        files,
    })
}

/// How the README says the plugin reaches a cluster.
fn delivery_note(language: Language, name: &PluginName) -> String {
    match language {
        Language::Python => {
            "A Python component (about 19 MB) is larger than a ConfigMap can hold: in a cluster, deliver \
                             it through the host's plugin directory (`wasm-reconciler run --plugins-dir`, a volume)."
                .into()
        }
        Language::Rust | Language::Typescript => format!(
            "In a cluster, `wasm-reconciler plugin pack plugin.wasm --name {name} --gzip | kubectl apply -f -` \
             delivers it as a ConfigMap (the host's RBAC must allow the kind; see the wasm-reconciler deploy guide)."
        ),
    }
}

/// Refuses a target that is a file or a non-empty directory.
fn ensure_empty(directory: &Path) -> Result<(), NewError> {
    match std::fs::read_dir(directory) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(NewError::NotEmpty(directory.to_path_buf())),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotADirectory || directory.is_file() => {
            Err(NewError::NotEmpty(directory.to_path_buf()))
        }
        Err(error) => Err(NewError::io("reading", directory)(error)),
    }
}

/// `directory` as an absolute path whose existing part has its symbolic links resolved, comparable with the
/// canonical path of the SDK.
fn resolve(directory: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(directory)?;
    let mut existing = absolute.as_path();
    let mut missing = Vec::new();
    while !existing.exists() {
        let Some(parent) = existing.parent() else { break };
        missing.extend(existing.file_name());
        existing = parent;
    }
    let mut resolved = existing.canonicalize()?;
    resolved.extend(missing.iter().rev());
    Ok(resolved)
}

/// Writes the files into a fresh directory beside the target, then renames it into place, so a failure leaves
/// nothing behind.
fn write(project: &Project) -> Result<(), NewError> {
    let target = &project.directory;
    let parent = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(NewError::io("creating", &parent))?;
    let staging = parent.join(format!(".{}.new-{}", project.name, std::process::id()));
    let result = write_files(&staging, &project.files).and_then(|()| {
        if target.exists() {
            // An empty directory: rename over it (refused if something appeared in it meanwhile).
            std::fs::remove_dir(target).map_err(NewError::io("replacing", target))?;
        }
        std::fs::rename(&staging, target).map_err(NewError::io("moving the project to", target))
    });
    if result.is_err() {
        // Best effort: the staging directory is ours and incomplete.
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn write_files(root: &Path, files: &[(String, String)]) -> Result<(), NewError> {
    for (path, text) in files {
        let path = root.join(path);
        if let Some(directory) = path.parent() {
            std::fs::create_dir_all(directory).map_err(NewError::io("creating", directory))?;
        }
        std::fs::write(&path, text).map_err(NewError::io("writing", &path))?;
        tracing::debug!(file = %path.display(), bytes = text.len(), "wrote");
    }
    Ok(())
}

fn print_summary(project: &Project) {
    let Project {
        directory,
        language,
        name,
        kind,
        sdk,
        files,
    } = project;
    let sdk_text = match sdk {
        Sdk::Path { directory, .. } => format!("SDK by path: {}", directory.display()),
        Sdk::Published { version } => format!("SDK {} {version}", sdk::PACKAGE),
    };
    println!(
        "Created the {language} plugin `{name}` in {} (kind {kind}, plural {}, {sdk_text}):",
        directory.display(),
        kind.plural()
    );
    let mut paths: Vec<&str> = files.iter().map(|(path, _)| path.as_str()).collect();
    paths.sort_unstable();
    for path in paths {
        println!("  {path}");
    }
    if let (Language::Typescript, Sdk::Path { directory: sdk, .. }) = (language, sdk)
        && !sdk.join("dist/src/index.js").is_file()
    {
        println!(
            "The SDK at {} is not built yet: (cd {} && npm ci && npm run build)",
            sdk.display(),
            sdk.display()
        );
    }
    println!("Next:\n  cd {}", directory.display());
    println!("  make test     # the unit tests");
    println!("  make build    # the component, plugin.wasm");
    println!(
        "  make check    # render the fixtures with plugin.wasm and compare with their expected outcomes, then plugin check"
    );
    tracing::debug!(plugin = %name, language = %language, directory = %directory.display(), files = files.len(), "created a plugin project");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(name: &str, lang: Language) -> NewArgs {
        NewArgs {
            name: name.into(),
            lang,
            kind: None,
            dir: None,
            sdk_path: None,
            published_sdk: false,
        }
    }

    #[test]
    fn every_language_renders_with_no_placeholder_left() {
        let dir = tempfile::tempdir().unwrap();
        for language in [Language::Rust, Language::Python, Language::Typescript] {
            for published in [false, true] {
                let project = plan(&NewArgs {
                    dir: Some(dir.path().join(format!("{language}-{published}"))),
                    published_sdk: published,
                    kind: Some("apps.example.org/v1beta1/Policy".into()),
                    ..args("policy-keeper", language)
                })
                .unwrap();
                for (path, text) in &project.files {
                    assert!(
                        !text.contains("{{"),
                        "{language} {path} has a placeholder left:\n{text}"
                    );
                }
                let text = |wanted: &str| {
                    &project
                        .files
                        .iter()
                        .find(|(path, _)| path == wanted)
                        .unwrap_or_else(|| panic!("{language} has {wanted}"))
                        .1
                };
                assert!(text("README.md").contains("kubectl get policies,configmaps"));
                assert!(text("Makefile").contains("render --plugin plugin.wasm"));
                assert!(
                    text("Makefile")
                        .contains("plugin check plugin.wasm --crd crd.yaml --world fixtures $(CHECK_FLAGS)")
                );
                assert!(text("crd.yaml").contains("name: policies.apps.example.org"));
            }
        }
    }

    #[test]
    fn the_sdk_dependency_follows_the_choice() {
        let dir = tempfile::tempdir().unwrap();
        let file = |project: &Project, wanted: &str| {
            project
                .files
                .iter()
                .find(|(path, _)| path == wanted)
                .map(|(_, text)| text.clone())
                .unwrap()
        };
        let by_path = plan(&NewArgs {
            dir: Some(dir.path().join("a")),
            ..args("widget", Language::Rust)
        })
        .unwrap();
        assert!(file(&by_path, "Cargo.toml").contains("wasm-reconciler-sdk = { path = \"/"));
        assert!(by_path.files.iter().any(|(path, _)| path == "Cargo.lock"));
        let published = plan(&NewArgs {
            dir: Some(dir.path().join("b")),
            published_sdk: true,
            ..args("widget", Language::Typescript)
        })
        .unwrap();
        assert!(file(&published, "package.json").contains("\"wasm-reconciler-sdk\": \"0.1.0\""));
        let published = plan(&NewArgs {
            dir: Some(dir.path().join("c")),
            published_sdk: true,
            ..args("widget", Language::Python)
        })
        .unwrap();
        assert!(file(&published, "requirements.txt").contains("\nwasm-reconciler-sdk==0.1.0\n"));
    }

    #[test]
    fn a_non_empty_directory_or_a_file_is_refused_and_an_empty_one_used() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let refused = |target: PathBuf| {
            let error = plan(&NewArgs {
                dir: Some(target.clone()),
                ..args("widget", Language::Python)
            })
            .unwrap_err();
            assert!(
                matches!(error, NewError::NotEmpty(ref path) if *path == target),
                "{error}"
            );
        };
        refused(dir.path().to_path_buf());
        refused(dir.path().join("file"));

        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let project = plan(&NewArgs {
            dir: Some(empty.clone()),
            ..args("widget", Language::Python)
        })
        .unwrap();
        write(&project).unwrap();
        assert!(empty.join("app.py").is_file());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 2, "no staging directory left: {leftovers:?}");
    }

    #[test]
    fn invalid_names_and_kinds_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x");
        let error = |name: &str, kind: Option<&str>, lang: Language| {
            plan(&NewArgs {
                dir: Some(target.clone()),
                kind: kind.map(str::to_owned),
                ..args(name, lang)
            })
            .unwrap_err()
            .to_string()
        };
        assert!(error("My_Plugin", None, Language::Python).contains("not a DNS-1123 label"));
        assert!(error("crate", None, Language::Rust).contains("cannot name a Rust crate"));
        assert!(error("widget", Some("example.com/Widget"), Language::Python).contains("not GROUP/VERSION/KIND"));
        assert!(!target.exists());
        // A Rust keyword is a fine name for the other languages.
        assert!(
            plan(&NewArgs {
                dir: Some(target.clone()),
                ..args("crate", Language::Typescript)
            })
            .is_ok()
        );
    }
}
