"""Values a program reads from its tensors: `.item()`, `.tolist()`, `.numpy()`, `bool(t)`,
`float(t)`, `int(t)` and formatting a one-element tensor (`f"{loss:.3f}"`).

The simulator runs shapes, dtypes and costs, not values. A read still costs what it costs on a
GPU (the copy to the host and the wait: the C++ layer's item), and returns a placeholder of the
right type: 0 (0.0, False) for each element. Each call site of the program warns once
(ValuePlaceholderWarning) and is counted; `syntorch.value_reads()` and the run's summary list
them. The mode is per process: "placeholder" (the default); "strict", where a read raises
RuntimeError instead, for a program whose control flow must not depend on values it cannot
have; or "functional", where values are computed on the host beside the simulation (PyTorch on
the CPU, syntorch._functional says how) up to a limit of bytes kept, reads past it falling back
to placeholders. `syntorch.set_value_mode(mode, limit_bytes=None)` sets it; SYNTORCH_VALUES sets
it for a run (and SYNTORCH_VALUES_LIMIT the functional mode's limit: 1073741824, 512MiB, 2GiB)."""

import os
import sys
import threading
import warnings

MODES = ("placeholder", "strict", "functional")


class ValuePlaceholderWarning(UserWarning):
    """A program read a tensor's value, which the simulator does not compute: a placeholder came back."""


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.mode = "placeholder"
        self.reads = {}  # (file, line, kind) -> count, in first-read order
        self.env_checked = False
        self.env_error = None  # a bad SYNTORCH_VALUES, raised by value_mode() until set_value_mode


_state = _State()
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def set_value_mode(mode, limit_bytes=None):
    """"placeholder" (reads return zeros of the right type, warning once per call site), "strict"
    (reads raise RuntimeError) or "functional" (values computed on the host, at most
    `limit_bytes` of them kept at once; syntorch._functional.DEFAULT_LIMIT_BYTES when not told).
    Choose it before building the model: tensors made before have no values."""
    if mode not in MODES:
        raise ValueError(f"set_value_mode: expected one of {', '.join(MODES)}, got {mode!r}")
    if limit_bytes is not None and mode != "functional":
        raise ValueError(f"set_value_mode: limit_bytes applies to the functional mode, not {mode!r}")
    from syntorch import _functional
    if mode == "functional":
        _functional.enable(limit_bytes)
    else:
        _functional.disable()
    _state.mode = mode
    _state.env_checked = True
    _state.env_error = None


def value_mode():
    if not _state.env_checked:
        _state.env_checked = True
        try:
            apply_environment()
        except (ValueError, RuntimeError) as e:  # raised again by each call, naming the variable
            _state.env_error = e
    if _state.env_error is not None:
        raise type(_state.env_error)(str(_state.env_error))
    return _state.mode


def apply_environment():
    """SYNTORCH_VALUES (and SYNTORCH_VALUES_LIMIT), read when syntorch.torch is imported."""
    env = os.environ.get("SYNTORCH_VALUES")
    limit = os.environ.get("SYNTORCH_VALUES_LIMIT")
    if env is None:
        if limit is not None:
            raise ValueError("SYNTORCH_VALUES_LIMIT: applies to SYNTORCH_VALUES=functional, and SYNTORCH_VALUES is "
                             "not set")
        return
    if env not in MODES:
        raise ValueError(f"SYNTORCH_VALUES: expected one of {', '.join(MODES)}, got {env!r}")
    if limit is not None and env != "functional":
        raise ValueError(f"SYNTORCH_VALUES_LIMIT: applies to SYNTORCH_VALUES=functional, not {env!r}")
    from syntorch import _functional
    set_value_mode(env, None if limit is None else _functional.parse_bytes(limit, "SYNTORCH_VALUES_LIMIT"))


def value_reads():
    """Where the program read values, in the order first read: a list of {"file", "line", "kind",
    "count"} (kind: item, tolist, numpy, bool, float, int, format)."""
    with _state.lock:
        return [{"file": f, "line": line, "kind": kind, "count": n} for (f, line, kind), n in _state.reads.items()]


def clear_value_reads():
    with _state.lock:
        _state.reads.clear()


def _call_site():
    """The program's frame that asked: the first one outside the syntorch package (and not a
    wrapper that hides itself from tracebacks, pytest's __tracebackhide__)."""
    frame = sys._getframe(2)
    while frame is not None and (os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR) or
                                 frame.f_locals.get("__tracebackhide__")):
        frame = frame.f_back
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


def note_read(kind):
    """Counts a read at the caller's site; warns on its first, or raises in strict mode."""
    file, line = _call_site()
    what = f"{kind}(tensor)" if kind in ("bool", "float", "int", "format") else f"Tensor.{kind}()"
    if value_mode() == "strict":
        raise RuntimeError(f"{file}:{line}: {what} reads a value, and the simulator computes none "
                           "(strict value mode; syntorch.set_value_mode('placeholder') returns placeholders)")
    key = (file, line, kind)
    with _state.lock:
        first = key not in _state.reads
        _state.reads[key] = _state.reads.get(key, 0) + 1
    if first:
        warnings.warn_explicit(f"{what}: the simulator computes no values; a placeholder (zeros) is "
                               "returned (syntorch.value_reads() lists every read)", ValuePlaceholderWarning,
                               file, line)


def placeholder(dtype):
    """The placeholder of one element of `dtype`, as Python's type for it."""
    if dtype.is_floating_point:
        return 0.0
    if dtype.is_complex:
        return 0j
    if str(dtype) == "torch.bool":
        return False
    return 0


def nested_zeros(shape, value):
    if not shape:
        return value
    return [nested_zeros(shape[1:], value) for _ in range(shape[0])]
