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
    assert_eq!(inspection["wit"], "wasm-reconciler:plugin@0.1.0");
    assert_eq!(inspection["spec"]["primary"]["kind"], "ConfigMapSet");
    assert_eq!(inspection["spec"]["owns"][0]["kind"], "ConfigMap");
    assert_eq!(inspection["spec"]["finalizer"], "examples.wasm-reconciler.io/drain");
    assert_eq!(inspection["sha256"].as_str().unwrap().len(), 64);

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
        stderr.contains("built against wasm-reconciler:plugin@0.3.0"),
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
