//! `wasm-reconciler plugin new` as a plugin author runs it, in each language: the project it writes builds with its
//! own Makefile and the pinned tools, passes its own unit tests, its component renders the scaffolded fixture to the
//! scaffolded outcome, and `make check` runs `plugin check` on it without a finding. The Rust project then runs
//! under `wasm-reconciler dev` as its README says: the CRD installs, the example object turns Ready with its
//! ConfigMap, and the API server validates objects against the generated schema.
//!
//! Build caches are reused: the Rust project builds into the workspace's target directory, so that its component
//! shares the dependencies the workspace's own components were compiled with (same profile, same features); the
//! Python one uses the virtual environment `make polyglot` creates, the TypeScript one installs from npm's cache
//! (`--offline`) with the SDK built by `make polyglot`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

/// The binary under test.
const BINARY: &str = env!("CARGO_BIN_EXE_wasm-reconciler");

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The target directory the binary was built in (`<target>[/<triple>]/<profile>/wasm-reconciler`): the one holding
/// cargo's `.rustc_info.json`.
fn target_dir() -> PathBuf {
    Path::new(BINARY)
        .ancestors()
        .find(|dir| dir.join(".rustc_info.json").is_file())
        .expect("the binary lives in a cargo target directory")
        .to_path_buf()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command, failing with everything it printed when it fails; returns its stdout.
fn run_ok(command: &mut Command, what: &str) -> String {
    let output = output_of(command, what);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

fn output_of(command: &mut Command, what: &str) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {:?}: {e}", command.get_program()))
}

/// `make TARGETS…` in a project, with a clean environment for the build tools it runs: nothing of this test's own
/// cargo invocation (flags, jobserver) leaks into the project's builds.
fn make(project: &Path, targets: &[&str]) -> Command {
    let mut command = Command::new("make");
    command
        .current_dir(project)
        .args(["--no-print-directory"])
        .args(targets);
    for variable in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    command
}

/// A project written by `plugin new` into a fresh temporary directory.
struct Scaffold {
    _dir: tempfile::TempDir,
    project: PathBuf,
    /// What the command printed.
    summary: String,
}

impl Scaffold {
    fn new(name: &str, language: &str, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join(name);
        let summary = run_ok(
            Command::new(BINARY)
                .args(["plugin", "new", name, "--lang", language, "--dir"])
                .arg(&project)
                .args(extra)
                .env_remove("RUST_LOG"),
            &format!("plugin new {name} --lang {language}"),
        );
        Self {
            _dir: dir,
            project,
            summary,
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.project.join(file)
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.path(file)).unwrap_or_else(|e| panic!("reading {file}: {e}"))
    }

    /// `wasm-reconciler render` of the scaffolded fixture with the built component prints the scaffolded outcome.
    fn assert_renders_the_expected_outcome(&self) {
        let world = self.path("fixtures/create.world.yaml");
        let rendered = run_ok(
            Command::new(BINARY)
                .arg("render")
                .arg("--plugin")
                .arg(self.path("plugin.wasm"))
                .arg("--world")
                .arg(&world)
                .env_remove("RUST_LOG"),
            "render",
        );
        let expected = self.read("fixtures/create.outcome.yaml");
        assert!(
            rendered == expected,
            "rendering {} differs from the expected outcome:\n{}",
            world.display(),
            pretty_assertions::StrComparison::new(&expected, &rendered)
        );
    }
}

/// `make check` ran `plugin check` on the component, the CRD and the fixtures, which found nothing.
fn assert_checked(output: &str) {
    assert!(
        output.contains("plugin check plugin.wasm --crd crd.yaml --world fixtures"),
        "{output}"
    );
    assert!(output.contains("fixtures/create.world.yaml: settled after"), "{output}");
    assert!(output.contains("no findings"), "{output}");
}

#[test]
fn a_rust_project_tests_builds_renders_its_fixture_and_runs_under_dev() {
    let scaffold = Scaffold::new("greeter", "rust", &[]);
    assert!(
        scaffold.summary.contains("kind example.com/v1/Greeter"),
        "{}",
        scaffold.summary
    );
    let manifest = scaffold.read("Cargo.toml");
    let sdk = checkout().join("guest-sdk").canonicalize().unwrap();
    assert!(
        manifest.contains(&format!("wasm-reconciler-sdk = {{ path = \"{}\" }}", sdk.display())),
        "the SDK of this checkout by path:\n{manifest}"
    );
    assert!(
        scaffold.path("Cargo.lock").is_file(),
        "the checkout's lock file pins the dependencies"
    );

    let cargo_target = target_dir();
    let test_output = run_ok(
        make(&scaffold.project, &["test", "build"]).env("CARGO_TARGET_DIR", &cargo_target),
        "make test build (cargo test; cargo build --target wasm32-wasip2 --profile wasm-release)",
    );
    assert!(test_output.contains("test result: ok. 5 passed"), "{test_output}");
    scaffold.assert_renders_the_expected_outcome();

    // `make check` renders every fixture and fails on a difference, showing it.
    let with_binary = format!("WASM_RECONCILER={BINARY}");
    let check = run_ok(
        make(&scaffold.project, &["check", &with_binary]).env("CARGO_TARGET_DIR", &cargo_target),
        "make check",
    );
    assert!(check.contains("render fixtures/create.world.yaml"), "{check}");
    assert_checked(&check);
    let expected = scaffold.read("fixtures/create.outcome.yaml");
    std::fs::write(
        scaffold.path("fixtures/create.outcome.yaml"),
        expected.replace("keys: 2", "keys: 3"),
    )
    .unwrap();
    let failed = output_of(
        make(&scaffold.project, &["check", &with_binary]).env("CARGO_TARGET_DIR", &cargo_target),
        "make check",
    );
    assert!(!failed.status.success(), "make check passes a wrong outcome");
    assert!(
        text(&failed.stdout).contains("-  keys: 3\n+  keys: 2"),
        "{}",
        text(&failed.stdout)
    );

    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(runs_under_dev(&scaffold));
}

/// The README's "Try it": the plugin directory under `wasm-reconciler dev`, then the example applied.
async fn runs_under_dev(scaffold: &Scaffold) {
    let plugin_dir = scaffold.path(".dev/plugins/greeter");
    std::fs::create_dir_all(&plugin_dir).unwrap();
    for file in ["plugin.wasm", "crd.yaml"] {
        std::fs::copy(scaffold.path(file), plugin_dir.join(file)).unwrap();
    }
    let kubeconfig = scaffold.path(".dev/kubeconfig");
    let dev = DevProcess(
        Command::new(BINARY)
            .current_dir(&scaffold.project)
            .args([
                "dev",
                "--plugins-dir",
                ".dev/plugins",
                "--kubeconfig-out",
                ".dev/kubeconfig",
            ])
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting wasm-reconciler dev"),
    );
    wait_for("dev to write its kubeconfig", || kubeconfig.is_file().then_some(())).await;
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Greeter"), "greeters");
    let greeters: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);

    // The host installs crd.yaml when it loads the plugin; until then the kind is not served.
    let example: DynamicObject = serde_saphyr::from_str(&scaffold.read("example.yaml")).unwrap();
    let create = || {
        let greeters = greeters.clone();
        let example = example.clone();
        async move { greeters.create(&PostParams::default(), &example).await.ok() }
    };
    wait_for_async("the example Greeter to be accepted", create).await;

    let ready = wait_for_async("the example Greeter to be Ready", || {
        let greeters = greeters.clone();
        async move {
            let object = greeters.get("example").await.ok()?;
            let conditions = object.data["status"]["conditions"].as_array()?.clone();
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
                .then_some(object)
        }
    })
    .await;
    assert_eq!(ready.data["status"]["configMap"], "example");
    assert_eq!(ready.data["status"]["keys"], 1);

    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), "default");
    let config_map = config_maps.get("example").await.unwrap();
    assert_eq!(
        config_map.data.unwrap_or_default().get("greeting").map(String::as_str),
        Some("hello")
    );
    assert_eq!(
        config_map.metadata.labels.unwrap_or_default()["app.kubernetes.io/managed-by"],
        "greeter"
    );

    // The generated schema is enforced: spec.data holds strings only.
    let invalid: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Greeter",
        "metadata": {"name": "invalid", "namespace": "default"},
        "spec": {"data": {"count": 3}},
    }))
    .unwrap();
    let refused = greeters.create(&PostParams::default(), &invalid).await.unwrap_err();
    assert!(
        matches!(&refused, kube::Error::Api(status) if status.code == 422),
        "{refused}"
    );
    drop(dev);
}

/// A `wasm-reconciler dev` this test started, stopped when dropped.
struct DevProcess(Child);

impl Drop for DevProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const CONVERGE: Duration = Duration::from_secs(60);

/// Polls `check` until it gives a value, failing after a minute.
async fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    wait_for_async(what, || std::future::ready(check())).await
}

async fn wait_for_async<T, F: Future<Output = Option<T>>>(what: &str, mut check: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + CONVERGE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {CONVERGE:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Python of the virtual environment `make polyglot` creates, found as the Makefile finds it.
fn polyglot_python() -> PathBuf {
    let venv = match std::env::var_os("POLYGLOT_VENV") {
        Some(venv) => PathBuf::from(venv),
        None if std::env::var_os("CI").is_some() => {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/wasm-reconciler/polyglot-venv")
        }
        None => target_dir().join("polyglot-venv"),
    };
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "{} is missing: create the Python tools' virtual environment with `make polyglot`",
        python.display()
    );
    python
}

#[test]
fn a_python_project_tests_builds_and_renders_its_fixture() {
    let python = polyglot_python();
    let scaffold = Scaffold::new("greeter-py", "python", &["--kind", "apps.example.org/v1alpha1/Policy"]);
    let sdk = checkout().join("guest-sdk-python").canonicalize().unwrap();
    assert!(
        scaffold
            .read("requirements.txt")
            .contains(&format!("\n{}\n", sdk.display())),
        "the SDK of this checkout by path"
    );
    assert!(scaffold.read("crd.yaml").contains("name: policies.apps.example.org"));

    // The venv holds the pinned tools; the SDK comes from this checkout, as requirements.txt names it.
    let output = run_ok(
        make(&scaffold.project, &["test", "check"])
            .arg(format!("PYTHON={}", python.display()))
            .arg(format!("WASM_RECONCILER={BINARY}"))
            .env("PYTHONPATH", sdk.join("src")),
        "make test check (pytest; python -m wasm_reconciler build; render; plugin check)",
    );
    assert!(output.contains("5 passed"), "{output}");
    assert_checked(&output);
    scaffold.assert_renders_the_expected_outcome();
}

#[test]
fn a_typescript_project_tests_builds_and_renders_its_fixture() {
    let sdk = checkout().join("guest-sdk-js").canonicalize().unwrap();
    assert!(
        sdk.join("dist/src/index.js").is_file(),
        "the TypeScript SDK is not built in {}: run `make polyglot`",
        sdk.display()
    );
    let scaffold = Scaffold::new("greeter-ts", "typescript", &[]);
    let package: Value = serde_json::from_str(&scaffold.read("package.json")).unwrap();
    assert_eq!(
        package["dependencies"]["wasm-reconciler-sdk"],
        format!("file:{}", sdk.display())
    );

    // package-lock.json pins the tools at the repository's versions; npm takes them from its cache.
    let with_binary = format!("WASM_RECONCILER={BINARY}");
    let output = run_ok(
        &mut make(
            &scaffold.project,
            &["test", "check", "NPM_INSTALL_FLAGS=--offline", &with_binary],
        ),
        "make test check (npm install --offline, from the cache `make polyglot` fills; tsc; node --test; \
         wasm-reconciler-build; render; plugin check)",
    );
    assert!(output.contains("# pass 5"), "{output}");
    assert_checked(&output);
    let lock: Value = serde_json::from_str(&scaffold.read("package-lock.json")).unwrap();
    assert_eq!(lock["packages"]["node_modules/componentize-qjs"]["version"], "0.4.5");
    assert_eq!(lock["packages"]["node_modules/wasm-reconciler-sdk"]["link"], true);
    scaffold.assert_renders_the_expected_outcome();
}

#[test]
fn invalid_input_is_refused_with_a_clear_message_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("project");
    let refused = |args: &[&str]| {
        let output = output_of(
            Command::new(BINARY)
                .args(["plugin", "new"])
                .args(args)
                .arg("--dir")
                .arg(&target)
                .env_remove("RUST_LOG"),
            "plugin new",
        );
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        text(&output.stderr)
    };
    let message = refused(&["My_Plugin", "--lang", "rust"]);
    assert!(
        message.contains("plugin name `My_Plugin` is not a DNS-1123 label"),
        "{message}"
    );
    let message = refused(&["widget", "--lang", "python", "--kind", "example.com/Widget"]);
    assert!(
        message.contains("--kind `example.com/Widget` is not GROUP/VERSION/KIND"),
        "{message}"
    );
    let message = refused(&["widget", "--lang", "python", "--kind", "example.com/v1/widget"]);
    assert!(message.contains("kind `widget` is not valid"), "{message}");
    let message = refused(&["widget", "--lang", "typescript", "--sdk-path", "/nonexistent"]);
    assert!(message.contains("no TypeScript SDK there"), "{message}");
    assert!(!target.exists(), "nothing written");

    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("notes.txt"), "mine").unwrap();
    let message = refused(&["widget", "--lang", "rust"]);
    assert!(message.contains("exists and is not an empty directory"), "{message}");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 1, "left as it was");
}
