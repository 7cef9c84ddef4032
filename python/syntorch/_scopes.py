"""The Python side of the extension's scope objects (C++ RAII guards: grad mode, autocast, a
record_function span): a context manager and decorator whose every entry makes its own guard.
The guards entered and not yet left are kept per thread, so one instance (a module-level
@torch.no_grad()) can be used by every rank's thread of a many-rank run at once."""

import contextlib
import threading


class CppScope(contextlib.ContextDecorator):
    def _make(self):
        """The extension's scope object for one entry."""
        raise NotImplementedError

    def __enter__(self):
        scope = self._make()
        scope.__enter__()
        local = self.__dict__.get("_entered")
        if local is None:
            local = self.__dict__.setdefault("_entered", threading.local())
        if not hasattr(local, "stack"):
            local.stack = []
        local.stack.append(scope)
        return self

    def __exit__(self, *exc):
        self._entered.stack.pop().__exit__(*exc)
        return False
