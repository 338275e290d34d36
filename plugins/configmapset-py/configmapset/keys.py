"""What Kubernetes accepts in a ConfigMap the template describes — label keys and values, annotation keys, ConfigMap
keys — checked before anything is written, with the messages of the Rust plugin (``plugins/configmapset/src/keys.rs``)."""

from __future__ import annotations

from .resource import ConfigMapTemplate

#: Longest label value, and longest name part of a label or annotation key.
MAX_NAME = 63
#: Longest prefix of a label or annotation key, and longest ConfigMap key.
MAX_SUBDOMAIN = 253

_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_NAME_CHARS = _ALNUM | frozenset("-_.")
_SUBDOMAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")

_NAME_RULE = (
    "a name of at most 63 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit, optionally "
    "after a DNS subdomain and '/'"
)


def check_template(template: ConfigMapTemplate) -> str | None:
    """The first problem of `template`, as a message naming its field; labels, then annotations, then data, each in
    key order."""
    for key, value in template.metadata.labels.items():
        if not is_qualified_name(key):
            return f"spec.template.metadata.labels: `{key}` is not a valid label key: {_NAME_RULE}"
        if not is_label_value(value):
            return (
                f"spec.template.metadata.labels: the value `{value}` of `{key}` is not a valid label value: at most "
                "63 letters, digits, '-', '_' and '.' that start and end with a letter or digit, or empty"
            )
    for key in template.metadata.annotations:
        if not is_qualified_name(key):
            return f"spec.template.metadata.annotations: `{key}` is not a valid annotation key: {_NAME_RULE}"
    for key in template.data:
        if not is_config_map_key(key):
            return (
                f"spec.template.data: `{key}` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' "
                "and '.', and not `.` or `..`"
            )
    return None


def is_qualified_name(key: str) -> bool:
    """A label or annotation key: ``[prefix/]name``, the prefix a DNS-1123 subdomain."""
    prefix, slash, name = key.partition("/")
    if not slash:
        return _is_name(key)
    return _is_subdomain(prefix) and _is_name(name)


def is_label_value(value: str) -> bool:
    """A label value: empty, or a name."""
    return value == "" or _is_name(value)


def is_config_map_key(key: str) -> bool:
    """A ConfigMap key: letters, digits, ``-``, ``_`` and ``.``, at most 253, not ``.`` or ``..``."""
    return 0 < len(key) <= MAX_SUBDOMAIN and key not in (".", "..") and all(c in _NAME_CHARS for c in key)


def _is_name(name: str) -> bool:
    return (
        0 < len(name) <= MAX_NAME
        and name[0] in _ALNUM
        and name[-1] in _ALNUM
        and all(c in _NAME_CHARS for c in name)
    )


def _is_subdomain(prefix: str) -> bool:
    return 0 < len(prefix) <= MAX_SUBDOMAIN and all(
        0 < len(label) <= MAX_NAME
        and label[0] in _SUBDOMAIN_CHARS - {"-"}
        and label[-1] in _SUBDOMAIN_CHARS - {"-"}
        and all(c in _SUBDOMAIN_CHARS for c in label)
        for label in prefix.split(".")
    )
