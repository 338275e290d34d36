//! Builds every guest component (example plugins and test guests) for `wasm32-wasip2` with the
//! `wasm-release` profile, where `make plugins` builds the example plugins, and writes their paths as constants.

use std::path::{Path, PathBuf};
use std::process::Command;

/// (constant name, package name) of every guest.
const GUESTS: &[(&str, &str)] = &[
    ("CONFIGMAPSET", "configmapset"),
    ("WEBAPP", "webapp"),
    ("DNSRECORD", "dnsrecord"),
    ("ECHO", "test-guest-echo"),
    ("MIRROR", "test-guest-mirror"),
    ("FLAWED", "test-guest-flawed"),
    ("CHAOS", "test-guest-chaos"),
    ("DESCRIBE_PANICS", "test-guest-describe-panics"),
    ("FUTURE_WIT", "test-guest-future-wit"),
    ("OUTBOUND", "test-guest-outbound"),
    ("UNGRANTED", "test-guest-ungranted"),
    ("FLOOR", "test-guest-floor"),
    ("CONFIGMAPSET_V0_1", "test-guest-configmapset-v0-1"),
    ("CLOCK", "test-guest-clock"),
];

/// (constant name, file name) of every guest `make polyglot` builds into `<target>/polyglot/`.
const POLYGLOT_GUESTS: &[(&str, &str)] = &[
    ("CONFIGMAPSET_PY", "configmapset-py.wasm"),
    ("CONFIGMAPSET_TS", "configmapset-ts.wasm"),
    ("OUTBOUND_PY", "outbound-py.wasm"),
    ("OUTBOUND_TS", "outbound-ts.wasm"),
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .parent()
        .expect("artifacts/ lives in the workspace root")
        .to_path_buf();
    for watched in ["wit", "contract", "guest-sdk", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", workspace.join(watched).display());
    }
    // The Rust crates under plugins/ and test-guests/ only: cargo scans a watched directory file by file, and the
    // Python and TypeScript projects beside them hold virtual environments and node_modules.
    for parent in ["plugins", "test-guests"] {
        let entries = std::fs::read_dir(workspace.join(parent)).expect("reading the guests' directories");
        for entry in entries.flatten() {
            if entry.path().join("Cargo.toml").is_file() {
                println!("cargo:rerun-if-changed={}", entry.path().display());
            }
        }
    }

    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // The guests go to <target>/wasm32-wasip2/wasm-release, where `make plugins` builds the example plugins with the
    // same command: whichever comes first builds them for both. The nested cargo takes the locks of that profile's
    // directories, not those of the outer build. WASM_RECONCILER_GUESTS_TARGET_DIR names another <target>: `make
    // test`'s clippy, which checks in a target directory of its own, shares the guests of the build.
    println!("cargo:rerun-if-env-changed=WASM_RECONCILER_GUESTS_TARGET_DIR");
    let target_dir = match std::env::var_os("WASM_RECONCILER_GUESTS_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => outer_target_dir(&out_dir),
    };

    // One `cargo rustc --crate-type cdylib` per guest rather than one `cargo build`: the guests are also rlibs (the
    // host links some natively), and cargo does no link-time optimisation for a crate with an rlib output, which
    // left each component about a quarter larger and slower.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for (_, package) in GUESTS {
        let mut command = Command::new(&cargo);
        command
            .current_dir(&workspace)
            .args(["rustc", "-p", package, "--lib", "--crate-type", "cdylib"])
            .args(["--target", "wasm32-wasip2", "--profile", "wasm-release", "--target-dir"])
            .arg(&target_dir);
        // The outer build's flags are for the host target, not for wasm; and under clippy, the guests are built
        // as any build builds them (clippy checks their crates as members of the workspace).
        for variable in [
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTFLAGS",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_TARGET_DIR",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "CLIPPY_ARGS",
        ] {
            command.env_remove(variable);
        }
        let status = command.status().expect("running cargo to build the guest components");
        assert!(
            status.success(),
            "building the guest component {package} failed; is the wasm32-wasip2 target installed? (`rustup target add wasm32-wasip2`)"
        );
    }

    let wasm_dir = target_dir.join("wasm32-wasip2").join("wasm-release");
    let mut constants = String::new();
    for (constant, package) in GUESTS {
        let path = wasm_dir.join(format!("{}.wasm", package.replace('-', "_")));
        assert!(path.exists(), "expected {} after building the guests", path.display());
        constants.push_str(&format!(
            "/// The `{package}` component.\npub const {constant}: &str = {:?};\n",
            path.display().to_string()
        ));
    }
    // Plugins in Python and TypeScript are built by `make polyglot` (pinned componentize-py and npm tools), not
    // here: their paths are constants all the same, and `polyglot` reads them or names that command.
    let polyglot_dir = target_dir.join("polyglot");
    for (constant, file) in POLYGLOT_GUESTS {
        constants.push_str(&format!(
            "/// The `{file}` component built by `make polyglot`.\npub const {constant}: &str = {:?};\n",
            polyglot_dir.join(file).display().to_string()
        ));
    }
    write_if_changed(&out_dir.join("artifacts.rs"), &constants);
}

/// The outer build's target directory: OUT_DIR is <target>[/<triple>]/<profile>/build/<package>-<hash>/out, with the
/// triple when the build names a target.
fn outer_target_dir(out_dir: &Path) -> PathBuf {
    let profile_parent = out_dir
        .ancestors()
        .nth(4)
        .expect("OUT_DIR is inside the target directory");
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    match profile_parent.file_name() {
        Some(name) if name == target.as_str() => profile_parent.parent().expect("the triple's directory has a parent"),
        _ => profile_parent,
    }
    .to_path_buf()
}

fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(contents) {
        std::fs::write(path, contents).expect("writing artifacts.rs");
    }
}
