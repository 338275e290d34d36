"""Unit tests of the Python SDK: builders, the wire conversion, error messages and the in-process host."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from wasm_reconciler import (
    Condition,
    ConditionStatus,
    ControllerSpec,
    Error,
    Event,
    EventType,
    Gvk,
    HostError,
    Outcome,
    Reconciler,
    WorldView,
    ensure,
    export_reconciler,
    host,
)
from wasm_reconciler.build import CONTRACTS, WIT_DIR, bindings_command, componentize_command, main
from wasm_reconciler.error import error_message
from wasm_reconciler.host import Level, RefusedCall
from wasm_reconciler.testing import MemoryHost, with_host
from wasm_reconciler.wire import ReconcileFailed, WireOutcome, WireWorldView, describe, reconcile

WIDGET = Gvk("example.com", "v1", "Widget")
CONFIG_MAP = Gvk("", "v1", "ConfigMap")
SECRET = Gvk("", "v1", "Secret")


class Echo(Reconciler):
    def describe(self) -> ControllerSpec:
        return ControllerSpec(
            WIDGET, owns=[CONFIG_MAP], reads=[SECRET], finalizer="example.com/cleanup", resync=timedelta(minutes=1)
        )

    def reconcile(self, view: WorldView) -> Outcome:
        ensure(view.attempt < 3, f"gave up after {view.attempt} attempts")
        return (
            Outcome()
            .children(view.children())
            .status({"name": view.name, "config": view.config})
            .condition(Condition.status_unknown("Ready", "Waiting", "m"))
            .event(Event.warning("Seen", "n"))
            .requeue_after(timedelta(milliseconds=250))
            .finalized()
        )


def wire_view(**changes: object) -> WireWorldView:
    fields: dict[str, object] = {
        "primary": '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}',
        "children": ['{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}'],
        "config": '{"a":1}',
        "deleting": True,
        "attempt": 0,
    }
    fields.update(changes)
    return WireWorldView(**fields)  # type: ignore[arg-type]


def test_gvk_spells_and_matches_api_versions() -> None:
    assert Gvk("apps", "v1", "Deployment").api_version == "apps/v1"
    assert CONFIG_MAP.api_version == "v1"
    assert Gvk.from_api_version("apps/v1", "Deployment") == Gvk("apps", "v1", "Deployment")
    assert str(Gvk("apps", "v1", "Deployment")) == "apps/v1/Deployment"
    deployment = Gvk("apps", "v1", "Deployment")
    assert deployment.matches({"apiVersion": "apps/v1", "kind": "Deployment"})
    assert not deployment.matches({"apiVersion": "apps/v1beta1", "kind": "Deployment"})
    assert not deployment.matches({"kind": "Deployment"})
    assert not deployment.matches("Deployment")


def test_controller_spec_keeps_one_of_each_kind_and_rounds_resync_up() -> None:
    spec = ControllerSpec(WIDGET, owns=[CONFIG_MAP, Gvk("", "v1", "ConfigMap")], reads=[SECRET, SECRET])
    assert spec.owns == [CONFIG_MAP] and spec.reads == [SECRET]
    assert spec.resync_seconds is None
    assert ControllerSpec(WIDGET, resync=1.5).resync_seconds == 2
    assert ControllerSpec(WIDGET, resync=timedelta(0)).resync_seconds == 1
    assert ControllerSpec(WIDGET, resync=2**40).resync_seconds == 2**32 - 1
    with pytest.raises(TypeError):
        ControllerSpec(WIDGET, owns=["v1/ConfigMap"])  # type: ignore[list-item]


def test_condition_and_event_helpers() -> None:
    assert Condition.status_true("Ready", "R", "m").status is ConditionStatus.TRUE
    assert Condition.status_false("Ready", "R", "m").status is ConditionStatus.FALSE
    assert Condition.status_unknown("Ready", "R", "m").status is ConditionStatus.UNKNOWN
    assert Condition.from_bool("Ready", True, "R", "m").is_true
    assert Condition.from_bool("Ready", False, "R", "m") == Condition.status_false("Ready", "R", "m")
    assert Event.normal("A", "b").type is EventType.NORMAL
    assert Event.warning("A", "b").type is EventType.WARNING


def test_world_view_reads_metadata_and_filters_children() -> None:
    view = WorldView(
        {"metadata": {"name": "w", "namespace": "ns", "uid": "u-1", "generation": 2}},
        children=[
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
        ],
    )
    assert (view.name, view.namespace, view.uid, view.generation) == ("w", "ns", "u-1", 2)
    assert [child["metadata"]["name"] for child in view.children(CONFIG_MAP)] == ["a"]
    assert len(view.children()) == 2
    assert view.config == {} and not view.deleting and view.attempt == 0
    empty = WorldView({})
    assert (empty.name, empty.namespace, empty.generation) == ("", None, None)
    assert WorldView({"metadata": {"generation": True}}).generation is None


def test_outcome_declares_a_set_or_leaves_children_alone_explicitly() -> None:
    undecided = Outcome()
    assert undecided.desired_children is None and not undecided.leaves_children_alone
    assert Outcome().children([]).desired_children == []
    assert Outcome().delete_all_children().desired_children == []
    alone = Outcome().leave_children_alone()
    assert alone.desired_children is None and alone.leaves_children_alone


def test_declaring_children_and_leaving_them_alone_is_an_error() -> None:
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    both = "^the outcome both declares desired children and leaves children alone: choose one$"
    with pytest.raises(Error, match=both):
        Outcome().child(child).leave_children_alone()
    with pytest.raises(Error, match=both):
        Outcome().leave_children_alone().child(child)
    with pytest.raises(Error, match=both):
        Outcome().leave_children_alone().children([])
    with pytest.raises(Error, match=both):
        Outcome().delete_all_children().leave_children_alone()


class Chooser(Reconciler):
    """Owns ConfigMaps and answers as its configuration says: a set, leave alone, or nothing said."""

    def describe(self) -> ControllerSpec:
        return ControllerSpec(WIDGET, owns=[CONFIG_MAP])

    def reconcile(self, view: WorldView) -> Outcome:
        replicas = view.config.get("replicas", 0)
        outcome = Outcome()
        choice = view.config.get("children")
        if choice == "loop":
            for index in range(replicas):
                outcome.child({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c-{index}"}})
        elif choice == "set":
            outcome.children(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c-{index}"}}
                for index in range(replicas)
            )
        elif choice == "alone":
            outcome.leave_children_alone()
        return outcome


def test_a_plugin_owning_kinds_must_say_what_to_do_with_children() -> None:
    def answer(children: str, replicas: int) -> WireOutcome:
        return reconcile(Chooser(), wire_view(config=json.dumps({"children": children, "replicas": replicas})))

    assert len(answer("loop", 2).children or []) == 2
    undecided = "^" + re.escape(
        "the outcome does not say what to do with the owned children: declare the complete desired set with "
        "children(...) (an empty set deletes them all) or call leave_children_alone()"
    ) + "$"
    # Scaling to zero with a `child` loop: refused, where it used to leave the stale children in place.
    with pytest.raises(ReconcileFailed, match=undecided):
        answer("loop", 0)
    assert answer("set", 0).children == []
    assert answer("alone", 0).children is None
    with pytest.raises(ReconcileFailed, match=undecided):
        answer("", 0)
    # A plugin owning no kind needs neither call.
    assert reconcile(Broken(), wire_view(primary='{"spec": {"replicas": 1}}')).children is None


def test_outcome_refuses_children_without_kind_or_name() -> None:
    outcome = Outcome().child({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    with pytest.raises(Error, match=r"^desired child #1: has no `kind`$"):
        outcome.child({"apiVersion": "v1", "metadata": {"name": "x"}})
    with pytest.raises(Error, match=r"^desired child #0: has no `metadata.name`$"):
        Outcome().child({"apiVersion": "v1", "kind": "ConfigMap"})
    with pytest.raises(Error, match=r"^status: must be a JSON object, got 3$"):
        Outcome().status(3)  # type: ignore[arg-type]


def test_outcome_requeue_has_millisecond_precision_and_last_condition_wins() -> None:
    outcome = (
        Outcome()
        .requeue_after(timedelta(microseconds=100_900))
        .condition(Condition.status_false("Ready", "A", ""))
        .condition(Condition.status_true("Ready", "C", ""))
    )
    assert outcome.requeue_after_ms == 100
    assert Outcome().requeue_after(0.1).requeue_after_ms == 100
    ready = outcome.condition_of_type("Ready")
    assert ready is not None and ready.reason == "C"
    assert outcome.condition_of_type("Degraded") is None
    with pytest.raises(Error):
        Outcome().requeue_after(-1)


def test_describe_converts_every_field() -> None:
    spec = describe(Echo())
    assert spec.primary == WIDGET
    assert spec.owns == [CONFIG_MAP] and spec.reads == [SECRET]
    assert spec.finalizer == "example.com/cleanup"
    assert spec.resync_seconds == 60


def test_reconcile_round_trips_every_field() -> None:
    outcome = reconcile(Echo(), wire_view())
    assert outcome.children == ['{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}']
    assert outcome.status == '{"name":"w","config":{"a":1}}'
    assert outcome.conditions == [Condition.status_unknown("Ready", "Waiting", "m")]
    assert outcome.events == [Event.warning("Seen", "n")]
    assert outcome.requeue_after_ms == 250
    assert outcome.finalized


def test_an_empty_config_reads_as_an_empty_object() -> None:
    assert reconcile(Echo(), wire_view(config="")).status == '{"name":"w","config":{}}'


def test_a_plugin_error_becomes_the_error_string() -> None:
    with pytest.raises(ReconcileFailed) as failed:
        reconcile(Echo(), wire_view(attempt=3))
    assert failed.value.message == "gave up after 3 attempts"


def test_a_malformed_view_is_reported_before_the_plugin_runs() -> None:
    with pytest.raises(ReconcileFailed, match=r"^world view: child #0 is not JSON: "):
        reconcile(Echo(), wire_view(children=["{"]))
    with pytest.raises(ReconcileFailed, match=r"^world view: primary is not JSON: "):
        reconcile(Echo(), wire_view(primary="nope"))


class Broken(Reconciler):
    def describe(self) -> ControllerSpec:
        return ControllerSpec(WIDGET)

    def reconcile(self, view: WorldView) -> Outcome:
        return Outcome().status({"replicas": view.primary["spec"]["replicas"]})


def test_an_unexpected_exception_is_reported_with_type_message_and_place_never_raised() -> None:
    with pytest.raises(ReconcileFailed) as failed:
        reconcile(Broken(), wire_view())
    assert failed.value.message.startswith("KeyError: 'spec' (at test_sdk.py:")
    assert "in reconcile" in failed.value.message


def test_an_outcome_that_is_not_json_is_a_plugin_error() -> None:
    class Unencodable(Broken):
        def reconcile(self, view: WorldView) -> Outcome:
            return Outcome().status({"when": object()})

    with pytest.raises(ReconcileFailed, match=r"^building the outcome: status is not JSON: "):
        reconcile(Unencodable(), wire_view())


def test_error_causes_are_flattened_without_repeats() -> None:
    try:
        try:
            raise Error("template has no data")
        except Error as inner:
            raise Error("building children") from inner
    except Error as outer:
        assert error_message(outer) == "building children: template has no data"
    try:
        try:
            json.loads("{")
        except ValueError as cause:
            raise Error("reading config") from cause
    except Error as outer:
        assert error_message(outer).startswith("reading config: JSONDecodeError: Expecting")
    assert Error("step").context("outer").message == "outer: step"


def test_export_reconciler_serves_wire_records_natively_and_refuses_other_types() -> None:
    controller = export_reconciler(Echo)()
    assert controller.describe().primary == WIDGET
    assert controller.reconcile(wire_view()).finalized
    with pytest.raises(TypeError, match="subclass of wasm_reconciler.Reconciler"):
        export_reconciler(dict)  # type: ignore[arg-type]


def cluster() -> MemoryHost:
    def config_map(namespace: str, name: str, labels: dict[str, str]) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, "labels": labels}}

    return MemoryHost(
        [
            config_map("a", "web", {"app": "web", "tier": "front"}),
            config_map("a", "db", {"app": "db", "tier": "back", "legacy": "yes"}),
            config_map("b", "web", {"app": "web"}),
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "web", "namespace": "a"}},
        ]
    )


def names(selector: str) -> list[str]:
    with with_host(cluster()):
        return [obj["metadata"]["name"] for obj in host.list(CONFIG_MAP, None, selector)]


def test_host_get_finds_by_kind_namespace_and_name() -> None:
    with with_host(cluster()):
        found = host.get(SECRET, "a", "web")
        assert found is not None and found["kind"] == "Secret"
        assert host.get(CONFIG_MAP, "c", "web") is None
        assert len(host.list(CONFIG_MAP, "b")) == 1


def test_host_list_filters_by_label_selector() -> None:
    assert names("app=web") == ["web", "web"]
    assert names("app==db") == ["db"]
    assert names("app!=web") == ["db"]
    assert names("tier") == ["web", "db"]
    assert names("!legacy") == ["web", "web"]
    assert names("tier in (front, back),app=db") == ["db"]
    assert names("tier notin (front)") == ["db", "web"]
    assert names("") == ["web", "db", "web"]


def test_a_refused_call_is_a_host_error_naming_the_call() -> None:
    with pytest.raises(HostError, match=r"^host list v1/ConfigMap: invalid label selector term `tier within \(x\)`$"):
        names("tier within (x)")

    class Refusing(MemoryHost):
        def get(self, kind: Gvk, namespace: str | None, name: str) -> str | None:
            raise RefusedCall("kind not declared")

    with with_host(Refusing()), pytest.raises(HostError) as refused:
        host.get(SECRET, "a", "s")
    assert str(refused.value) == "host get v1/Secret a/s: kind not declared"


def test_logs_reach_the_installed_host_and_hosts_nest() -> None:
    outer, inner = MemoryHost(), MemoryHost()
    with with_host(outer):
        with with_host(inner):
            host.info("inner")
        host.warn("outer")
    assert inner.logs == [(Level.INFO, "inner")]
    assert outer.logs == [(Level.WARN, "outer")]
    with pytest.raises(RuntimeError), with_host(outer):
        raise RuntimeError("plugin bug")
    assert host.current() is None


def test_calls_without_a_host_explain_what_to_do() -> None:
    with pytest.raises(RuntimeError, match="outside `wasm_reconciler.testing.with_host`|outside a component"):
        host.get(CONFIG_MAP, None, "x")


REPOSITORY_WIT = Path(__file__).resolve().parents[2] / "wit"


def test_the_shipped_wit_is_the_contract() -> None:
    assert (WIT_DIR / "reconciler.wit").read_text() == (REPOSITORY_WIT / "reconciler.wit").read_text()


def test_the_shipped_wit_of_contract_0_2_holds_both_contract_packages_and_the_wasi_http_it_imports() -> None:
    wit_v0_2 = CONTRACTS["0.2"].wit_dir
    deps = wit_v0_2 / "deps"
    assert (deps / "plugin-0.1.0" / "reconciler.wit").read_text() == (REPOSITORY_WIT / "reconciler.wit").read_text()
    contract_0_2 = (REPOSITORY_WIT / "v0.2" / "reconciler.wit").read_text()
    assert (deps / "plugin-0.2.0" / "reconciler.wit").read_text() == contract_0_2
    world = (wit_v0_2 / "reconciler.wit").read_text()
    assert "include wasm-reconciler:plugin/reconciler@0.2.0;" in world
    assert "import wasi:http/outgoing-handler@0.2.12;" in world
    assert (deps / "http" / "http.wit").read_text().startswith("package wasi:http@0.2.12;")


def test_the_build_command_uses_the_shipped_wit_and_finds_the_sdk() -> None:
    command = componentize_command("app", [], "plugin.wasm", "componentize-py")
    assert command[:6] == ["componentize-py", "-d", str(WIT_DIR), "-w", "reconciler", "componentize"]
    assert command[-2:] == ["-o", "plugin.wasm"]
    assert str(WIT_DIR.parent.parent) in command


def test_contract_0_2_builds_against_its_world_with_the_contract_records_named_as_in_0_1() -> None:
    command = componentize_command("app", ["src"], "plugin.wasm", "componentize-py", contract="0.2")
    renaming = ["--import-interface-name", "wasm-reconciler:plugin/types@0.1.0=types"]
    world = ["-d", str(CONTRACTS["0.2"].wit_dir), "-w", "reconciler"]
    assert command[:8] == ["componentize-py", *world, *renaming, "componentize"]
    assert command[8:11] == ["app", "-p", "src"]
    assert bindings_command("out", "componentize-py", contract="0.2") == [*command[:7], "bindings", "out"]
    with pytest.raises(ValueError, match=r"^no contract 0\.3: this SDK builds against 0\.1 and 0\.2$"):
        componentize_command("app", [], "plugin.wasm", "componentize-py", contract="0.3")


def test_the_wit_command_prints_the_directory_of_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wit"]) == 0
    assert main(["wit", "--contract", "0.2"]) == 0
    assert capsys.readouterr().out.splitlines() == [str(WIT_DIR), str(CONTRACTS["0.2"].wit_dir)]
