"""The error a plugin raises from `reconcile`, and how any exception becomes the plugin's error message."""

from __future__ import annotations

import traceback

__all__ = ["Error", "HostError", "ensure", "error_message"]

#: Frames of an unexpected exception's traceback kept in the error message.
TRACEBACK_FRAMES = 3


class Error(Exception):
    """A plugin's own error: the host records its message on the object (`Reconciled=False`, reason
    `PluginError`) and retries with backoff.

    Raise it for an invalid spec or anything the plugin refuses; its message is reported as it is. A cause
    given with ``raise Error("reading spec") from exc`` is appended (``reading spec: <cause>``), like the
    flattened source chain of the Rust SDK.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def context(self, context: str) -> Error:
        """A new error whose message is prefixed with what was being done: ``context: message``."""
        return Error(f"{context}: {self.message}")

    def __str__(self) -> str:
        return self.message


class HostError(Error):
    """A call the host refused: a `host.get` or `host.list` (an undeclared kind, a malformed selector), or a
    `variables.get` (no such variable, its Secret unreadable)."""


def ensure(condition: bool, message: str) -> None:
    """Raises `Error(message)` unless `condition` holds."""
    if not condition:
        raise Error(message)


def error_message(error: BaseException) -> str:
    """The message the host records for an exception raised by `reconcile`.

    An `Error` gives its message, followed by its causes (``outer: cause: root cause``; a cause already in
    the message is not repeated). Any other exception is a bug in the plugin: its type and message, then
    where it was raised, as the last frames of its traceback (``at replicas.py:42 in converge <- ...``).
    """
    if isinstance(error, Error):
        message = error.message
        cause = error.__cause__
        while cause is not None:
            text = _describe(cause) if not isinstance(cause, Error) else cause.message
            if text not in message:
                message = f"{message}: {text}"
            cause = cause.__cause__
        return message
    return f"{_describe(error)} ({_where(error)})"


def _describe(error: BaseException) -> str:
    text = str(error)
    name = type(error).__name__
    return f"{name}: {text}" if text else name


def _where(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)[-TRACEBACK_FRAMES:]
    if not frames:
        return "no traceback"
    places = [f"{_file_name(frame.filename)}:{frame.lineno} in {frame.name}" for frame in reversed(frames)]
    return "at " + " <- ".join(places)


def _file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]
