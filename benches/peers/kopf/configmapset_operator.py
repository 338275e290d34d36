"""The configmapset controller written with Kopf, a peer of the wasm plugin for the benchmark in benches/peers.

Run with ``kopf run --standalone --all-namespaces configmapset_operator.py`` (``KUBECONFIG`` names the cluster).
Kopf adds and removes the ``examples.wasm-reconciler.io/drain`` finalizer around the ``on.delete`` handler and
retries a handler that raises ``kopf.TemporaryError`` after its delay: that is how a round asks for the next one
while work remains. Kopf watches only the sets; each round lists the set's ConfigMaps from the API server (by the
set label), so it always sees what the previous round wrote. (A ``@kopf.index`` of ConfigMaps is Kopf's cache, but
it is fed by the same event loop that runs the handlers: under a burst of sets it fell minutes behind, and rounds
that saw no children re-applied them again and again.)
"""

from __future__ import annotations

import datetime
import logging
import sys
from pathlib import Path
from typing import Any

import kopf
import kubernetes

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replicas  # noqa: E402
from replicas import Child, ConditionState, Round  # noqa: E402
from status import RECONCILED, desired_status  # noqa: E402

GROUP = "examples.wasm-reconciler.io"
VERSION = "v1alpha1"
PLURAL = "configmapsets"
KIND = "ConfigMapSet"
FINALIZER = "examples.wasm-reconciler.io/drain"
MANAGER = "configmapset-kopf"
REQUEUE_WHILE_CONVERGING = 0.1
CONCURRENCY = 4

core: kubernetes.client.CoreV1Api


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, logger: logging.Logger, **_: Any) -> None:
    """Our finalizer name, four handlers at once (synchronous handlers run in Kopf's thread pool), the client."""
    global core
    settings.persistence.finalizer = FINALIZER
    settings.execution.max_workers = CONCURRENCY
    kubernetes.config.load_kube_config()
    core = kubernetes.client.CoreV1Api()
    logger.info("configmapset operator configured: %d handlers at once", CONCURRENCY)


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
def converge(
    name: str,
    namespace: str,
    uid: str,
    spec: Any,
    status: Any,
    meta: Any,
    body: Any,
    patch: kopf.Patch,
    **_: Any,
) -> None:
    """One round: write missing and drifted children, delete excess ones, report; retry while work remains."""
    spec = dict(spec)
    observed = observed_children(namespace, name, uid)
    round_ = replicas.converge(name, spec, observed)
    act(name, namespace, uid, spec, status, meta, body, patch, round_)
    # Kopf does not watch the children: a round that wrote something is followed by one that observes the
    # result, as are rounds that left work for later.
    if round_.requeue or round_.apply or round_.delete:
        raise kopf.TemporaryError("converging", delay=REQUEUE_WHILE_CONVERGING)


@kopf.on.delete(GROUP, VERSION, PLURAL)
def drain(
    name: str,
    namespace: str,
    uid: str,
    spec: Any,
    status: Any,
    meta: Any,
    body: Any,
    patch: kopf.Patch,
    **_: Any,
) -> None:
    """One round of draining; Kopf removes the finalizer once this returns without raising."""
    spec = dict(spec)
    observed = observed_children(namespace, name, uid)
    round_ = replicas.drain(name, spec, observed)
    act(name, namespace, uid, spec, status, meta, body, patch, round_)
    if not round_.finalized:
        raise kopf.TemporaryError("draining", delay=REQUEUE_WHILE_CONVERGING)


def observed_children(namespace: str, name: str, uid: str) -> list[Child]:
    """The set's ConfigMaps: those with its label whose controller is this set."""
    children = core.list_namespaced_config_map(namespace, label_selector=f"{replicas.SET_LABEL}={name}")
    return [
        Child(
            child.metadata.name,
            child.metadata.uid,
            dict(child.metadata.labels or {}),
            dict(child.metadata.annotations or {}),
            dict(child.data or {}),
        )
        for child in children.items
        if any(owner.controller and owner.uid == uid for owner in child.metadata.owner_references or [])
    ]


def act(
    name: str,
    namespace: str,
    uid: str,
    spec: dict[str, Any],
    status: Any,
    meta: Any,
    body: Any,
    patch: kopf.Patch,
    round_: Round,
) -> None:
    """Writes the round: children, events, and the status (through Kopf's patch) when it changed."""
    try:
        write_children(name, namespace, uid, spec, round_)
    except kubernetes.client.ApiException as error:
        reconciled = ConditionState(RECONCILED, False, "ApplyFailed", f"{error.status} {error.reason}")
        update_status(status, meta, patch, round_, reconciled)
        raise kopf.TemporaryError(f"writing children: {error.status} {error.reason}", delay=1) from error
    for reason, note in round_.events:
        kopf.event(body, type="Normal", reason=reason, message=note)
    update_status(status, meta, patch, round_, ConditionState(RECONCILED, True, "Succeeded", "the desired state was applied"))


def write_children(name: str, namespace: str, uid: str, spec: dict[str, Any], round_: Round) -> None:
    owner = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for index in round_.apply:
        metadata: dict[str, Any] = {
            "name": replicas.child_name(name, index),
            "namespace": namespace,
            "labels": replicas.desired_labels(name, spec),
            "ownerReferences": [owner],
        }
        annotations = replicas.desired_annotations(spec)
        if annotations:
            metadata["annotations"] = annotations
        child: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
        data = replicas.desired_data(spec)
        if data:
            child["data"] = data
        core.patch_namespaced_config_map(
            metadata["name"],
            namespace,
            child,
            field_manager=MANAGER,
            force=True,
            _content_type="application/apply-patch+yaml",
        )
    for child in round_.delete:
        options = kubernetes.client.V1DeleteOptions(
            propagation_policy="Background",
            preconditions=kubernetes.client.V1Preconditions(uid=child.uid),
        )
        try:
            core.delete_namespaced_config_map(child.name, namespace, body=options)
        except kubernetes.client.ApiException as error:
            # Already gone: deleted since the list.
            if error.status != 404:
                raise


def update_status(status: Any, meta: Any, patch: kopf.Patch, round_: Round, reconciled: ConditionState) -> None:
    observed = dict(status)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    desired = desired_status(observed, round_, reconciled, meta.get("generation"), now)
    if desired != observed:
        for key, value in desired.items():
            patch.status[key] = value
