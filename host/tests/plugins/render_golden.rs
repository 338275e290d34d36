//! Golden tests: every fixture of the example plugins renders to its checked-in expected outcome.
//!
//! Regenerate the expected files with `UPDATE_GOLDEN=1 cargo test -p wasm-reconciler --test plugins`.

use std::path::{Path, PathBuf};

use wasm_reconciler::cli::render_file;
use wasm_reconciler::plugin::Limits;

fn plugins_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins")
}

fn check_fixtures(plugin: &str, wasm: &str) {
    let fixtures = plugins_dir().join(plugin).join("fixtures");
    let mut worlds: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap_or_else(|e| panic!("reading {}: {e}", fixtures.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".world.yaml"))
        .collect();
    worlds.sort();
    assert!(worlds.len() >= 4, "{plugin} has only {} fixtures", worlds.len());
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for world in &worlds {
        let outcome = render_file(Path::new(wasm), world, None, Limits::default())
            .unwrap_or_else(|e| panic!("rendering {}: {}", world.display(), wasm_reconciler::error_chain(&e)));
        let rendered = serde_saphyr::to_string(&outcome).unwrap();
        let expected_path = PathBuf::from(world.to_string_lossy().replace(".world.yaml", ".outcome.yaml"));
        if update {
            std::fs::write(&expected_path, &rendered).unwrap();
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(expected) if expected == rendered => {}
            Ok(expected) => mismatches.push(format!(
                "{}:\n--- expected\n{expected}\n--- rendered\n{rendered}",
                expected_path.display()
            )),
            Err(_) => mismatches.push(format!(
                "{} is missing (run with UPDATE_GOLDEN=1)",
                expected_path.display()
            )),
        }
    }
    assert!(
        mismatches.is_empty(),
        "outcomes differ from the golden files:\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn configmapset_fixtures_render_as_expected() {
    check_fixtures("configmapset", wasm_reconciler_artifacts::CONFIGMAPSET);
}

#[test]
fn webapp_fixtures_render_as_expected() {
    check_fixtures("webapp", wasm_reconciler_artifacts::WEBAPP);
}
