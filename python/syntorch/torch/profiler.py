"""torch.profiler over the simulated run: `profile` records a window of this rank's trace (host
ops, kernels and copies on their streams, memory) as PyTorch's profiler records a program's,
with `schedule` choosing which steps, `export_chrome_trace`, `key_averages().table()` and
`on_trace_ready` handlers (`tensorboard_trace_handler`); `record_function` names a span of the
program. Times are the simulated machine's."""

import enum
import os
import shutil
import tempfile

import _syntorch
from syntorch._scopes import CppScope as _CppScope
from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.profiler")


class record_function(_CppScope):
    """A named span of the program on the host timeline (in traces, and the top-level ones in
    trace_manager.stats()["steps"] with their simulated begin and end)."""

    def __init__(self, name, args=None):
        self.name = str(name)

    def _make(self):
        return _syntorch._RecordScope(self.name)


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """PyTorch's step schedule: skip_first steps, then cycles of wait, warmup and active steps
    (repeat cycles, 0 for no limit); the last active step of a cycle is RECORD_AND_SAVE."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    cycle = wait + warmup + active

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        within = step % cycle
        if within < wait:
            return ProfilerAction.NONE
        if within < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if within == cycle - 1 else ProfilerAction.RECORD
    return action


def _always_record(step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready handler writing each recorded window to dir_name/worker.step.pt.trace.json."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        import syntorch.torch as torch
        # Ranks are threads of one process here: the rank tells their traces apart.
        name = worker_name or f"{os.uname().nodename}_{os.getpid()}_{torch.cuda.current_device()}"
        path = os.path.join(dir_name, f"{name}.{prof.step_num}.pt.trace.json" + (".gz" if use_gzip else ""))
        prof.export_chrome_trace(path)
    return handler


class _KeyAverages:
    """key_averages(): the window's ops and kernels by name, as the table() PyTorch prints."""

    def __init__(self, text):
        self._text = text

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, header=None, top_level_events_only=False):
        return self._text

    def __str__(self):
        return self._text


class profile:
    """Records windows of the simulated run's trace, as torch.profiler.profile records a program:

        with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                                    schedule=torch.profiler.schedule(wait=1, warmup=1, active=2),
                                    on_trace_ready=handler) as prof:
            for batch in loader:
                train_step(batch)
                prof.step()
        print(prof.key_averages().table())

    Without a schedule everything between start and stop is recorded. Stopping a window waits
    for the simulated device (as the profiler's flush does). record_shapes, profile_memory,
    with_stack, with_flops and with_modules are accepted: the trace always carries the ops'
    shapes and the device memory."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None):
        for a in activities or ():
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity values, got {a!r}")
        if execution_trace_observer is not None:
            raise NotImplementedError("torch.profiler.profile: execution_trace_observer is not supported (write a "
                                      "Chakra trace with syntorch.init(trace='run.et'))")
        self.activities = set(activities or (ProfilerActivity.CPU, ProfilerActivity.CUDA))
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self._dir = tempfile.mkdtemp(prefix="syntorch-profile-")
        self._window = None       # the open window's id
        self._trace = None        # the last closed window's file
        self._table = ""          # ... and its summary
        self._step_scope = None
        self._started = False

    # --- windows ---
    def _open(self):
        import syntorch
        syntorch.current_session()
        path = os.path.join(self._dir, f"window{self.step_num}.json")
        self._window = _syntorch.profiler_start_window(path)
        self._pending = path

    def _close(self, save):
        if self._window is None:
            return
        self._table = _syntorch.profiler_stop_window(self._window)
        self._window = None
        self._trace = self._pending
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _enter_step(self):
        self._step_scope = record_function(f"ProfilerStep#{self.step_num}")
        self._step_scope.__enter__()

    def _leave_step(self):
        if self._step_scope is not None:
            self._step_scope.__exit__(None, None, None)
            self._step_scope = None

    def start(self):
        self._started = True
        if self.schedule(self.step_num) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._open()
        self._enter_step()

    def step(self):
        """Ends a step: the schedule decides whether the window opens, goes on or closes (saved)."""
        if not self._started:
            raise RuntimeError("profile.step() before start()")
        before = self.schedule(self.step_num)
        self._leave_step()
        self.step_num += 1
        after = self.schedule(self.step_num)
        if before == ProfilerAction.RECORD_AND_SAVE or (self._window is not None and
                                                       after in (ProfilerAction.NONE, ProfilerAction.WARMUP)):
            self._close(save=before == ProfilerAction.RECORD_AND_SAVE)
        if self._window is None and after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._open()
        self._enter_step()

    def stop(self):
        self._leave_step()
        self._close(save=True)
        self._started = False

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stop()
        else:  # an error in the block is the one to see
            try:
                self.stop()
            except Exception:
                pass
        return False

    # --- results ---
    def _require_trace(self):
        if self._trace is None:
            raise RuntimeError("the profiler has recorded no window yet (leave its block, or step past an "
                               "active step of its schedule)")

    def export_chrome_trace(self, path):
        """Writes the last recorded window as a Chrome JSON trace (Perfetto and chrome://tracing read it)."""
        self._require_trace()
        shutil.copyfile(self._trace, path)
        return path

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        self._require_trace()
        return _KeyAverages(self._table)

    def __del__(self):
        shutil.rmtree(getattr(self, "_dir", ""), ignore_errors=True)
