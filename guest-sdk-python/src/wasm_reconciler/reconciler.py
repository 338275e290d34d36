"""The base class of a plugin's reconcile logic."""

from __future__ import annotations

from abc import ABC, abstractmethod

from .controller_spec import ControllerSpec
from .outcome import Outcome
from .world_view import WorldView

__all__ = ["Reconciler"]


class Reconciler(ABC):
    """A plugin's reconcile logic. Subclass it, then export it from the app module with
    ``Controller = export_reconciler(MyReconciler)``.

    The class is instantiated once, with no arguments, when the component starts.
    """

    @abstractmethod
    def describe(self) -> ControllerSpec:
        """What this plugin reconciles. Called once when the host loads the plugin; it must depend on nothing
        but the plugin itself."""

    @abstractmethod
    def reconcile(self, view: WorldView) -> Outcome:
        """The desired outcome for one primary object. Must be a pure function of `view` and what `host` reads
        return: the host calls it again whenever anything it read changes, and retries with backoff when it
        raises. An `Error` is reported with its message; any other exception with its type, message and
        where it was raised."""
