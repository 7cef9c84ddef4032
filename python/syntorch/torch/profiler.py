"""torch.profiler.record_function: a named span of the program on the host timeline (in traces,
and the top-level ones in trace_manager.stats()["steps"] with their simulated begin and end)."""

import contextlib

import _syntorch


class record_function(contextlib.ContextDecorator):
    def __init__(self, name, args=None):
        self.name = str(name)
        self._scope = None

    def __enter__(self):
        self._scope = _syntorch._RecordScope(self.name)
        self._scope.__enter__()
        return self

    def __exit__(self, *exc):
        self._scope.__exit__(*exc)
        self._scope = None
        return False

