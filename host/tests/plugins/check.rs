//! `wasm-reconciler plugin check` as an author runs it: the example plugins pass on their CRDs and fixtures, each
//! deliberate bug of the `flawed` test plugin is found with a sequence that replays it, and bad input is refused
//! with a clear error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use wasm_reconciler_artifacts::{CONFIGMAPSET, FLAWED, WEBAPP};

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

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

/// `plugin check --json` of a component on a CRD and fixtures; the report and whether the command passed.
fn check(component: &str, crd: &Path, world: &Path, extra: &[&str]) -> (Value, bool, String) {
    let crd = crd.display().to_string();
    let world = world.display().to_string();
    let mut args = vec!["plugin", "check", component, "--crd", &crd, "--world", &world, "--json"];
    args.extend_from_slice(extra);
    let output = wasm_reconciler(&args);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: not a JSON report:\n{}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    (report, output.status.success(), text(&output.stderr))
}

fn kinds(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_passes(plugin: &str, component: &str) {
    let directory = checkout().join("plugins").join(plugin);
    let (report, passed, stderr) = check(component, &directory.join("crd.yaml"), &directory.join("fixtures"), &[]);
    assert!(
        passed && kinds(&report).is_empty(),
        "{plugin} has findings:\n{}\n{stderr}",
        serde_json::to_string_pretty(&report["findings"]).unwrap()
    );
    let fixtures = report["fixtures"].as_array().unwrap();
    assert!(fixtures.len() >= 4, "{report}");
    for fixture in fixtures {
        assert!(fixture["settledAfter"].as_u64().is_some(), "{fixture}");
        assert!(fixture["reconciles"].as_u64().unwrap() > 0, "{fixture}");
    }
    let mutated: Vec<&Value> = fixtures.iter().filter(|f| f.get("mutationSkipped").is_none()).collect();
    assert!(!mutated.is_empty(), "{report}");
    for fixture in mutated {
        assert!(fixture["singleSequences"].as_u64().unwrap() >= 5, "{fixture}");
        assert_eq!(fixture["randomSequences"], 12, "{fixture}");
        assert!(fixture["invalidSpecs"].as_u64().unwrap() >= 2, "{fixture}");
    }
}

#[test]
fn check_passes_the_configmapset_plugin() {
    assert_passes("configmapset", CONFIGMAPSET);
}

#[test]
fn check_passes_the_webapp_plugin() {
    assert_passes("webapp", WEBAPP);
}

#[test]
fn check_passes_the_python_and_typescript_ports_of_configmapset() {
    // One fixture and a few random sequences: the ports reconcile in milliseconds where Rust takes microseconds, and
    // their behaviour is held to Rust's outcome by outcome in polyglot.rs.
    let directory = checkout().join("plugins/configmapset");
    for component in [
        wasm_reconciler_artifacts::polyglot(wasm_reconciler_artifacts::CONFIGMAPSET_PY),
        wasm_reconciler_artifacts::polyglot(wasm_reconciler_artifacts::CONFIGMAPSET_TS),
    ] {
        let (report, passed, stderr) = check(
            component,
            &directory.join("crd.yaml"),
            &directory.join("fixtures/steady-state.world.yaml"),
            &["--sequences", "3"],
        );
        assert!(
            passed && kinds(&report).is_empty(),
            "{component} has findings:\n{}\n{stderr}",
            serde_json::to_string_pretty(&report["findings"]).unwrap()
        );
        assert!(report["fixtures"][0]["rejectedSteps"].as_u64().unwrap() > 0, "{report}");
    }
}

fn flawed_dir() -> PathBuf {
    checkout().join("test-guests/flawed")
}

/// `plugin check` of the flawed plugin with `flaw` configured: its report, and whether it passed.
fn check_flaw(flaw: &str, extra: &[&str]) -> (Value, bool) {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), format!("flaw: {flaw}\n")).unwrap();
    let config_path = config.path().display().to_string();
    let mut args = vec!["--config", config_path.as_str()];
    args.extend_from_slice(extra);
    let (report, passed, _) = check(
        FLAWED,
        &flawed_dir().join("crd.yaml"),
        &flawed_dir().join("fixtures"),
        &args,
    );
    (report, passed)
}

#[test]
fn check_finds_each_flaw_and_passes_the_plugin_without_one() {
    let (report, passed) = check_flaw("none", &[]);
    assert!(passed && kinds(&report).is_empty(), "{report:#}");
    for (flaw, expected) in [
        ("leave-alone-at-zero", "differential"),
        ("nondeterministic", "nondeterministic"),
        ("requeue-churn", "requeueChurn"),
        ("sticky-status", "recovery"),
        ("panic-at-five", "crash"),
        ("status-outside-schema", "idleWrites"),
    ] {
        let (report, passed) = check_flaw(flaw, &[]);
        assert!(!passed, "{flaw}: the check passes");
        let found = kinds(&report);
        assert!(
            found.iter().any(|kind| kind == expected),
            "{flaw}: {expected} not in {found:?}:\n{report:#}"
        );
    }
}

#[test]
fn a_differential_finding_names_its_steps_and_replays_alone() {
    let (report, _) = check_flaw("leave-alone-at-zero", &[]);
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["kind"] == "differential")
        .unwrap_or_else(|| panic!("{report:#}"))
        .clone();
    let steps: Vec<&str> = finding["sequence"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step.as_str().unwrap())
        .collect();
    assert!(
        steps.iter().any(|step| step.starts_with("spec.replicas = 0")),
        "{finding:#}"
    );
    let details = finding["details"].to_string();
    assert!(
        details.contains("demo-0: in the sequence, not in a fresh apply"),
        "{details}"
    );
    assert!(details.contains("leave children alone"), "{details}");
    let replay = finding["replay"].as_str().unwrap();
    let id = finding["sequence"]["id"].as_u64().unwrap().to_string();
    assert!(replay.ends_with(&format!("--sequence {id}")), "{replay}");

    // The replay runs that one sequence and finds the same.
    let (again, passed) = check_flaw("leave-alone-at-zero", &["--sequence", &id]);
    assert!(!passed);
    let replayed = again["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|found| found["kind"] == "differential")
        .unwrap_or_else(|| panic!("{again:#}"));
    assert_eq!(replayed["sequence"]["steps"], finding["sequence"]["steps"]);
    assert_eq!(replayed["details"], finding["details"]);
}

#[test]
fn the_text_report_shows_each_finding_with_its_steps_and_replay_and_fails() {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "flaw: panic-at-five\n").unwrap();
    let crd = flawed_dir().join("crd.yaml").display().to_string();
    let world = flawed_dir().join("fixtures").display().to_string();
    let config = config.path().display().to_string();
    let output = wasm_reconciler(&[
        "plugin", "check", FLAWED, "--crd", &crd, "--world", &world, "--config", &config, "--seed", "7",
    ]);
    assert!(!output.status.success());
    let stdout = text(&output.stdout);
    assert!(stdout.contains("(seed 7)"), "{stdout}");
    assert!(stdout.contains("[crash]"), "{stdout}");
    assert!(stdout.contains("step 1: spec.replicas = 5"), "{stdout}");
    assert!(
        stdout.contains("five replicas are more than this plugin can count"),
        "{stdout}"
    );
    assert!(stdout.contains("replay: wasm-reconciler plugin check"), "{stdout}");
    assert!(
        text(&output.stderr).contains("plugin check found"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let crd = flawed_dir().join("crd.yaml").display().to_string();
    let world = flawed_dir().join("fixtures").display().to_string();
    let refused = |args: &[&str]| {
        let output = wasm_reconciler(args);
        assert!(!output.status.success(), "{args:?} passed");
        text(&output.stderr)
    };

    let not_wasm = dir.path().join("plugin.wasm");
    std::fs::write(&not_wasm, "not a component").unwrap();
    let not_wasm = not_wasm.display().to_string();
    let stderr = refused(&["plugin", "check", &not_wasm, "--crd", &crd, "--world", &world]);
    assert!(stderr.contains("is not a usable plugin"), "{stderr}");

    let broken_crd = dir.path().join("crd.yaml");
    std::fs::write(
        &broken_crd,
        std::fs::read_to_string(flawed_dir().join("crd.yaml")).unwrap().replace(
            "type: integer\n                minimum",
            "type: whole-number\n                minimum",
        ),
    )
    .unwrap();
    let broken_crd = broken_crd.display().to_string();
    let stderr = refused(&["plugin", "check", FLAWED, "--crd", &broken_crd, "--world", &world]);
    assert!(
        stderr.contains("CRD flaweds.tests.wasm-reconciler.io is invalid"),
        "{stderr}"
    );

    let not_a_crd = flawed_dir().join("fixtures/three.world.yaml").display().to_string();
    let stderr = refused(&["plugin", "check", FLAWED, "--crd", &not_a_crd, "--world", &world]);
    assert!(stderr.contains("is not a CustomResourceDefinition"), "{stderr}");

    let other_kind = dir.path().join("other.world.yaml");
    std::fs::write(
        &other_kind,
        "primary: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}\n",
    )
    .unwrap();
    let other_kind = other_kind.display().to_string();
    let stderr = refused(&["plugin", "check", FLAWED, "--crd", &crd, "--world", &other_kind]);
    assert!(stderr.contains("the fixture's primary is a v1/ConfigMap"), "{stderr}");

    let invalid_spec = dir.path().join("invalid.world.yaml");
    std::fs::write(
        &invalid_spec,
        "primary: {apiVersion: tests.wasm-reconciler.io/v1, kind: Flawed, metadata: {name: x}, spec: {replicas: 9}}\n",
    )
    .unwrap();
    let invalid_spec = invalid_spec.display().to_string();
    let stderr = refused(&["plugin", "check", FLAWED, "--crd", &crd, "--world", &invalid_spec]);
    assert!(stderr.contains("spec.replicas"), "{stderr}");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let empty = empty.display().to_string();
    let stderr = refused(&["plugin", "check", FLAWED, "--crd", &crd, "--world", &empty]);
    assert!(stderr.contains("holds no *.world.yaml fixture"), "{stderr}");

    let stderr = refused(&["plugin", "check", FLAWED, "--world", &world]);
    assert!(
        stderr.contains("give its CRD with --crd") || stderr.contains("neither built in nor defined by a CRD"),
        "{stderr}"
    );
}
