//! Guests that misbehave on purpose produce typed errors, and the runtime stays usable after each.

use std::time::{Duration, Instant};

use serde_json::json;
use wasm_reconciler::plugin::{Limits, LoadError, ReconcileError, WorldView};
use wasm_reconciler_artifacts::{CHAOS, DESCRIBE_PANICS, FUTURE_WIT};

fn view(behaviour: &str) -> WorldView {
    WorldView::from_json(
        &json!({"apiVersion": "test.wasm-reconciler.io/v1", "kind": "Chaos", "metadata": {"name": "c", "namespace": "default"}}),
        &[],
        &json!({"behaviour": behaviour}),
    )
}

/// Runs `behaviour`, then proves the same plugin still answers a well-behaved call. Returns the error and how
/// long the failing call took.
fn run_then_recover_timed(limits: Limits, behaviour: &str) -> (ReconcileError, Duration) {
    let plugin = super::load(CHAOS, limits);
    let started = Instant::now();
    let error = plugin
        .reconcile(view(behaviour), super::reader(vec![]))
        .expect_err("misbehaviour fails");
    let elapsed = started.elapsed();
    let outcome = plugin
        .reconcile(view("ok"), super::reader(vec![]))
        .expect("runtime stays usable");
    assert_eq!(outcome.status, Some(json!({"behaved": true})));
    (error, elapsed)
}

fn run_then_recover(limits: Limits, behaviour: &str) -> ReconcileError {
    run_then_recover_timed(limits, behaviour).0
}

#[test]
fn endless_loop_times_out_within_the_deadline() {
    let deadline = Duration::from_millis(200);
    let (error, elapsed) = run_then_recover_timed(
        Limits {
            deadline,
            ..Limits::default()
        },
        "loop",
    );
    assert!(
        matches!(error, ReconcileError::Timeout { deadline: d } if d == deadline),
        "{error:?}"
    );
    assert_eq!(error.reason(), "Timeout");
    assert!(
        elapsed >= deadline,
        "interrupted after {elapsed:?}, before the deadline"
    );
    // Slack for instantiation and a loaded CI machine.
    assert!(
        elapsed < deadline + Duration::from_millis(300),
        "interrupted only after {elapsed:?}"
    );
}

#[test]
fn a_burst_of_epoch_ticks_never_cuts_a_call_short() {
    // A ticker stalled by a busy machine catches up with a burst of ticks; the deadline is still wall-clock time.
    let engine = wasm_reconciler::plugin::PluginEngine::new(None).expect("engine starts");
    let deadline = Duration::from_millis(200);
    let plugin = super::load_on(
        &engine,
        CHAOS,
        Limits {
            deadline,
            ..Limits::default()
        },
    );
    let started = Instant::now();
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            while started.elapsed() < Duration::from_millis(50) {
                for _ in 0..1000 {
                    engine.engine().increment_epoch();
                }
                std::thread::yield_now();
            }
        });
        plugin.reconcile(view("loop"), super::reader(vec![]))
    });
    let elapsed = started.elapsed();
    let error = result.expect_err("the loop is interrupted");
    assert_eq!(error.reason(), "Timeout", "{error:?}");
    assert!(
        elapsed >= deadline,
        "interrupted after {elapsed:?}, before the deadline"
    );
}

#[test]
fn memory_bomb_exhausts_memory() {
    let limits = Limits {
        memory_bytes: 16 * 1024 * 1024,
        ..Limits::default()
    };
    let error = run_then_recover(limits, "memory-bomb");
    assert!(
        matches!(error, ReconcileError::MemoryExhausted { limit_bytes } if limit_bytes == 16 * 1024 * 1024),
        "{error:?}"
    );
    assert_eq!(error.reason(), "MemoryExhausted");
}

#[test]
fn panic_is_a_trap_with_the_message() {
    let error = run_then_recover(Limits::default(), "panic");
    let ReconcileError::Trap { message } = &error else {
        panic!("expected a trap, got {error:?}")
    };
    assert!(message.contains("chaos guest panicked on purpose"), "{message}");
    assert!(message.starts_with("panicked at "), "{message}");
    assert_eq!(error.reason(), "PluginTrapped");
}

#[test]
fn malformed_json_is_an_invalid_outcome() {
    let error = run_then_recover(Limits::default(), "invalid-json");
    let ReconcileError::InvalidOutcome(message) = &error else {
        panic!("expected invalid outcome, got {error:?}")
    };
    assert!(message.starts_with("child 0 is not valid JSON"), "{message}");
}

#[test]
fn wrongly_shaped_status_is_an_invalid_outcome() {
    let error = run_then_recover(Limits::default(), "status-not-object");
    assert!(
        matches!(&error, ReconcileError::InvalidOutcome(m) if m == "status must be a JSON object, got an array"),
        "{error:?}"
    );
}

#[test]
fn oversized_outcome_is_an_invalid_outcome() {
    let error = run_then_recover(
        Limits {
            memory_bytes: 128 * 1024 * 1024,
            ..Limits::default()
        },
        "oversized",
    );
    let ReconcileError::InvalidOutcome(message) = &error else {
        panic!("expected invalid outcome, got {error:?}")
    };
    assert!(message.contains("over the limit of 4194304 bytes"), "{message}");
}

#[test]
fn plugin_errors_are_reported_as_such() {
    let error = run_then_recover(Limits::default(), "no-such-behaviour");
    assert!(
        matches!(&error, ReconcileError::Plugin(m) if m == "unknown behaviour \"no-such-behaviour\""),
        "{error:?}"
    );
    assert_eq!(error.reason(), "PluginError");
}

#[test]
fn chatty_output_is_bounded_not_fatal() {
    let plugin = super::load(CHAOS, Limits::default());
    let outcome = plugin
        .reconcile(view("noisy"), super::reader(vec![]))
        .expect("noise is not an error");
    assert_eq!(outcome.status, Some(json!({"behaved": true})));
}

#[test]
fn describe_panic_fails_the_load_with_the_message() {
    let wasm = wasm_reconciler_artifacts::read(DESCRIBE_PANICS);
    let error = super::engine()
        .load("broken", &wasm, Limits::default())
        .expect_err("load fails");
    let LoadError::Describe(ReconcileError::Trap { message }) = &error else {
        panic!("{error:?}")
    };
    assert!(message.contains("describe is broken on purpose"), "{message}");
}

#[test]
fn a_future_contract_version_is_refused_clearly() {
    let wasm = wasm_reconciler_artifacts::read(FUTURE_WIT);
    let error = super::engine()
        .load("future", &wasm, Limits::default())
        .expect_err("load fails");
    assert!(
        matches!(&error, LoadError::UnsupportedVersion { found, .. } if found == "0.4.0"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the plugin is built against wasm-reconciler:plugin@0.4.0, but this host supports wasm-reconciler:plugin@0.1.x, wasm-reconciler:plugin@0.2.x and wasm-reconciler:plugin@0.3.x; rebuild it with a matching wasm-reconciler-sdk"
    );
}

#[test]
fn bytes_that_are_not_a_component_are_refused_clearly() {
    let engine = super::engine();
    let not_wasm = engine
        .load("x", b"#!/bin/sh\necho hi\n", Limits::default())
        .expect_err("not wasm");
    assert_eq!(
        not_wasm.to_string(),
        "not a WebAssembly binary (it starts with bytes 23 21 2f 62, not the `\\0asm` magic)"
    );
    let core = engine
        .load("x", b"\0asm\x01\0\0\0", Limits::default())
        .expect_err("core module");
    assert!(matches!(core, LoadError::CoreModule));
    let mut truncated = wasm_reconciler_artifacts::read(wasm_reconciler_artifacts::CHAOS);
    truncated.truncate(truncated.len() / 2);
    let error = engine.load("x", &truncated, Limits::default()).expect_err("truncated");
    assert!(matches!(error, LoadError::Compile(_)), "{error:?}");
}
