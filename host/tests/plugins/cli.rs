//! The `wasm-reconciler` binary as a user runs it: `plugin inspect` and `render`.

use std::process::{Command, Output};

use wasm_reconciler_artifacts::{CHAOS, CONFIGMAPSET, FUTURE_WIT, WEBAPP};

fn wasm_reconciler(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasm-reconciler"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn inspect_prints_the_spec_of_both_example_plugins() {
    let output = wasm_reconciler(&["plugin", "inspect", CONFIGMAPSET]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let inspection: serde_json::Value = serde_saphyr::from_slice(&output.stdout).unwrap();
    assert_eq!(inspection["wit"], "wasm-reconciler:plugin@0.3.0");
    assert_eq!(inspection["spec"]["primary"]["kind"], "ConfigMapSet");
    assert_eq!(inspection["spec"]["owns"][0]["kind"], "ConfigMap");
    assert_eq!(inspection["spec"]["finalizer"], "examples.wasm-reconciler.io/drain");
    assert_eq!(inspection["sha256"].as_str().unwrap().len(), 64);
    // A Rust plugin with HashMaps imports only the fixed seed: no clock, no per-call randomness.
    assert_eq!(inspection.get("readsClock"), None, "{inspection}");
    assert_eq!(inspection.get("readsRandomness"), None, "{inspection}");

    let output = wasm_reconciler(&["plugin", "inspect", wasm_reconciler_artifacts::CLOCK]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let inspection: serde_json::Value = serde_saphyr::from_slice(&output.stdout).unwrap();
    assert_eq!(inspection["readsClock"], true, "{inspection}");

    let output = wasm_reconciler(&["plugin", "inspect", WEBAPP, "-o", "json"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let inspection: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(inspection["spec"]["primary"]["kind"], "WebApp");
    let owned: Vec<&str> = inspection["spec"]["owns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["kind"].as_str().unwrap())
        .collect();
    assert_eq!(owned, ["Deployment", "Service", "ConfigMap"]);
}

#[test]
fn inspect_refuses_an_unsupported_contract_with_a_clear_message() {
    let output = wasm_reconciler(&["plugin", "inspect", FUTURE_WIT]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("built against wasm-reconciler:plugin@0.4.0"),
        "{stderr}"
    );
}

#[test]
fn render_prints_the_outcome_as_yaml() {
    let world = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../plugins/configmapset/fixtures/fresh-create.world.yaml"
    );
    let output = wasm_reconciler(&["render", "--plugin", CONFIGMAPSET, "--world", world]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let outcome: serde_json::Value = serde_saphyr::from_slice(&output.stdout).unwrap();
    assert!(!outcome["children"].as_array().unwrap().is_empty());
    assert_eq!(outcome["finalized"], false);
}

#[test]
fn render_exits_non_zero_with_the_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world.yaml");
    std::fs::write(
        &world,
        "primary: {apiVersion: test.wasm-reconciler.io/v1, kind: Chaos, metadata: {name: c, namespace: default}}\nconfig: {behaviour: loop}\n",
    )
    .unwrap();
    let output = wasm_reconciler(&[
        "render",
        "--plugin",
        CHAOS,
        "--world",
        world.to_str().unwrap(),
        "--deadline-ms",
        "100",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr).trim(),
        "error: plugin exceeded its deadline of 100ms"
    );

    std::fs::write(&world, "primary: {kind: Chaos}\n").unwrap();
    let output = wasm_reconciler(&["render", "--plugin", CHAOS, "--world", world.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("`primary` needs `apiVersion` and `kind`"),
        "{}",
        text(&output.stderr)
    );
}

/// The real control plane's binaries, built by `tests/kube/build.sh` (`make kube-harness`, which `make test` runs).
fn real_control_plane_bin_dir() -> std::path::PathBuf {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/kube/build.sh");
    let output = Command::new(script)
        .arg("--print-bin-dir")
        .output()
        .expect("runs build.sh");
    let bin = std::path::PathBuf::from(text(&output.stdout).trim());
    assert!(
        bin.join("kube-harness").exists(),
        "the real control plane is not built in {}: run `make kube-harness` first",
        bin.display()
    );
    bin
}

/// Polls `check` every 200 ms until it holds or `timeout` passes.
fn wait_until(timeout: std::time::Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !check() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn dev_runs_the_same_loop_on_the_real_control_plane() {
    use std::io::{BufRead, BufReader};
    use std::time::Duration;

    let bin = real_control_plane_bin_dir();
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(plugins.join("configmapset")).unwrap();
    std::fs::copy(CONFIGMAPSET, plugins.join("configmapset/plugin.wasm")).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/configmapset/crd.yaml"),
        plugins.join("configmapset/crd.yaml"),
    )
    .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut dev = Command::new(env!("CARGO_BIN_EXE_wasm-reconciler"))
        .args(["dev", "--server", "real", "--kube-harness"])
        .arg(bin.join("kube-harness"))
        .arg("--data-dir")
        .arg(dir.path().join("cluster"))
        .arg("--plugins-dir")
        .arg(&plugins)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("dev starts");
    // `dev` prints the server and the kubeconfig once the control plane is ready.
    let stdout = dev.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut printed = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    while !printed.iter().any(|line: &String| line.contains("kubeconfig:")) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines_rx.recv_timeout(left) {
            Ok(line) => printed.push(line),
            Err(_) => {
                let _ = dev.kill();
                panic!("dev printed no kubeconfig in time: {printed:?}");
            }
        }
    }
    assert!(
        printed
            .iter()
            .any(|line| line.contains("Kubernetes API server: https://127.0.0.1:")
                && line.contains("(real kube-apiserver)")),
        "{printed:?}"
    );
    let kubectl = |args: &[&str]| {
        Command::new(bin.join("kubectl"))
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .expect("kubectl runs")
    };
    // The plugin's CRD is installed on the real server, and the plugin reconciles there.
    wait_until(Duration::from_secs(60), "the ConfigMapSet CRD", || {
        kubectl(&["get", "crd", "configmapsets.examples.wasm-reconciler.io"])
            .status
            .success()
    });
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../plugins/configmapset/examples/configmapset.yaml"
    );
    wait_until(Duration::from_secs(60), "a ConfigMapSet applied", || {
        kubectl(&["apply", "-f", example]).status.success()
    });
    wait_until(
        Duration::from_secs(60),
        "ConfigMaps reconciled on the real server",
        || {
            let listed = kubectl(&[
                "get",
                "configmaps",
                "-l",
                "examples.wasm-reconciler.io/configmapset",
                "-o",
                "name",
            ]);
            text(&listed.stdout).lines().count() >= 2
        },
    );
    let _ = Command::new("kill").args(["-TERM", &dev.id().to_string()]).status();
    let status = dev.wait().expect("dev exits");
    assert!(status.success(), "dev exited with {status}");
}
