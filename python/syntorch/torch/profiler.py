"""torch.profiler.record_function: a named span of the program on the host timeline (in traces,
and the top-level ones in trace_manager.stats()["steps"] with their simulated begin and end)."""

import _syntorch
from syntorch._scopes import CppScope as _CppScope


class record_function(_CppScope):
    def __init__(self, name, args=None):
        self.name = str(name)

    def _make(self):
        return _syntorch._RecordScope(self.name)

