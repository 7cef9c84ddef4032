"""The functional model: real tensor values computed on the host beside the timing simulation, as
an architecture simulator runs a functional and a timing model together.

With the "functional" value mode (syntorch.set_value_mode("functional", limit_bytes=...), or
SYNTORCH_VALUES=functional and SYNTORCH_VALUES_LIMIT for a run), every op of syntorch.torch, its
Tensor methods, torch.nn.functional, nn.init, linalg, the built-in layers and the optimizers also
runs PyTorch's own CPU implementation on the values of its operands, and the result's value is
kept beside the simulated tensor. `.item()`, `.tolist()`, `.numpy()`, printing and control flow
that depends on values then see real numbers; time, memory and the trace still come from the
simulated machine alone.

How it works: each public callable is wrapped once. The outermost wrapped call (a layer's
forward, a function, a method) computes its value with PyTorch's callable of the same name on
the operands' values (tensors mapped to values, devices to "cpu", syntorch dtypes to PyTorch's);
calls nested inside it compute nothing, so a composed op costs one host evaluation. Built-in
layers keep a PyTorch twin whose parameters are the simulated parameters' values (initialised as
PyTorch initialises them); optimizers keep a PyTorch twin stepping the same values; backward runs
PyTorch's autograd on the values. Values are kept per simulated tensor (by its serial) and dropped
when the tensor is released.

The limit bounds the bytes of values kept at once (views count nothing): a tensor whose value
would pass it gets none, and neither does anything computed from it, so a large model never
computes; its reads return placeholders, as without the mode. Half-precision ops PyTorch's CPU
kernels lack are computed in float32 and rounded back."""

import builtins
import functools
import io
import os
import re
import sys
import threading
import types
import warnings

import _syntorch

DEFAULT_LIMIT_BYTES = 1 << 30
_DEVICE_RE = re.compile(r"^(cuda|cpu|meta)(:\d+)?$")


class _State:
    def __init__(self):
        self.enabled = False
        self.installed = False
        self.limit_bytes = DEFAULT_LIMIT_BYTES
        self.live_bytes = 0
        self.values = {}    # tensor serial -> PyTorch tensor
        self.keys = {}      # tensor serial -> (simulated storage id, the value's storage key)
        self.storages = {}  # a value's storage key -> [values on it, its bytes]: counted once
        self.aliases = {}   # simulated storage id -> serials of the tensors on it that have values
        self.lost = set()   # serials whose value was lost (an op that could not compute wrote them)
        self.lock = threading.RLock()  # ranks are threads
        self.warned = set()
        self.real = None  # PyTorch, once imported
        self.real_modules = {}  # its modules by name
        self.real_dir = ""      # the directory it is installed in
        self.raw_grad = None  # Tensor.grad's getter before the mode wrapped it


_state = _State()
_tls = threading.local()


class _NoValue(Exception):
    """An operand has no value: the result gets none."""


# --- PyTorch itself, imported beside syntorch's alias of it ---

def real_torch():
    """PyTorch, imported even where `import torch` resolves to syntorch (python -m syntorch.run):
    the alias entries step aside while it imports, and come back after. Imports that PyTorch's
    own code makes later (torch.manual_seed imports torch.cuda) find PyTorch's modules through
    an import hook that looks at who imports, so no rank's `import torch` ever sees PyTorch."""
    if _state.real is not None:
        return _state.real
    saved = {k: v for k, v in sys.modules.items() if _is_torch_name(k) and _is_syntorch(v)}
    for k in saved:
        del sys.modules[k]
    try:
        import torch as real
        import torch.utils.data  # noqa: F401  (what the samplers use, imported while nothing is aliased)
        _state.real_modules = {k: v for k, v in sys.modules.items() if _is_torch_name(k) and not _is_syntorch(v)}
    except ImportError as e:
        raise RuntimeError("the functional value mode computes values with PyTorch on the host, and PyTorch is "
                           f"not installed ({e}); Debian's python3-torch provides it") from None
    finally:
        sys.modules.update(saved)
    _state.real = real
    _state.real_dir = os.path.dirname(os.path.abspath(real.__file__)) + os.sep
    _install_import_hook()  # python -m syntorch.run aliases torch after this import, too
    return real


def _is_torch_name(name):
    return name == "torch" or name.startswith("torch.")


def _is_syntorch(module):
    return getattr(module, "__name__", "").startswith("syntorch")


def _install_import_hook():
    """builtins.__import__ giving PyTorch's code PyTorch's modules where sys.modules holds
    syntorch's alias of them; everyone else's imports are untouched."""
    if getattr(builtins.__import__, "_functional_hook", False):
        return
    previous = builtins.__import__

    def real_module(name):
        m = _state.real_modules.get(name)
        if m is None:
            m = _state.real
            for part in name.split(".")[1:]:
                m = getattr(m, part, None)
                if not isinstance(m, types.ModuleType):
                    return None
            _state.real_modules[name] = m
        return m

    lock = threading.RLock()

    def import_real(name):
        """PyTorch's module `name`, imported now with syntorch's aliases stepped aside (a module
        PyTorch's code imports lazily that nothing imported yet: rare, and under a lock)."""
        with lock:
            before = set(sys.modules)
            saved = {k: v for k, v in sys.modules.items() if _is_torch_name(k) and _is_syntorch(v)}
            for k in saved:
                del sys.modules[k]
            restored = {k: v for k, v in _state.real_modules.items() if k not in sys.modules}
            sys.modules.update(restored)
            try:
                import importlib
                module = importlib.import_module(name)
                _state.real_modules.update({k: v for k, v in sys.modules.items()
                                            if _is_torch_name(k) and not _is_syntorch(v)})
                return module
            except ImportError:
                return None
            finally:  # sys.modules as it was (what was imported is kept in real_modules)
                for k in list(sys.modules):
                    if _is_torch_name(k) and not _is_syntorch(sys.modules[k]) and (k not in before or k in restored):
                        del sys.modules[k]
                sys.modules.update(saved)

    def hook(name, globals=None, locals=None, fromlist=(), level=0):
        if globals is not None and _state.real is not None:
            where = globals.get("__file__") or ""
            if where.startswith(_state.real_dir):
                absolute = name
                if level > 0:
                    package = (globals.get("__package__") or "").rsplit(".", level - 1)[0]
                    absolute = f"{package}.{name}" if name else package
                top = absolute.split(".")[0] if not fromlist and level == 0 else absolute
                if _is_torch_name(absolute) and (_is_syntorch(sys.modules.get(top)) or top not in sys.modules):
                    target = real_module(absolute) or import_real(absolute)
                    if target is not None:
                        for sub in fromlist or ():
                            if sub != "*" and not hasattr(target, sub):
                                import_real(f"{absolute}.{sub}")
                        return _state.real if (not fromlist and level == 0) else target
        return previous(name, globals, locals, fromlist, level)
    hook._functional_hook = True
    builtins.__import__ = hook


# --- the mode ---

def enable(limit_bytes=None):
    """Turns the functional model on (installing its wrappers the first time); values start
    afresh."""
    if limit_bytes is None:
        limit_bytes = DEFAULT_LIMIT_BYTES
    if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int) or limit_bytes < 0:
        raise ValueError(f"limit_bytes: expected a non-negative integer, got {limit_bytes!r}")
    _state.limit_bytes = limit_bytes
    real_torch()
    if not _state.installed:
        _install()
    if not _state.enabled:
        _clear()
    _state.enabled = True


def disable():
    _state.enabled = False
    _clear()


def _clear():
    with _state.lock:
        _syntorch._take_released_watched()
        for store in (_state.values, _state.keys, _state.storages, _state.aliases, _state.lost):
            store.clear()
        _state.live_bytes = 0
        _state.warned.clear()


def enabled():
    return _state.enabled


def parse_bytes(text, where):
    """"1073741824", "512MiB", "2GB", "64k" as bytes (binary multiples); ValueError naming `where`."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise ValueError(f"{where}: expected a size in bytes such as 1073741824, 512MiB or 2GiB, got {text!r}")
    return int(m.group(1)) << (10 * " kmgt".index(m.group(2).lower() or " "))


def live_bytes():
    _drain()
    return _state.live_bytes


def limit_bytes():
    return _state.limit_bytes


# --- values kept per simulated tensor ---

def _drain():
    with _state.lock:
        for serial in _syntorch._take_released_watched():
            _forget(serial)
            _state.lost.discard(serial)


def value(t):
    """The value of simulated tensor `t`, or None."""
    return _state.values.get(t._serial)


def _warn_once(key, text):
    """A RuntimeWarning at the program's line that caused it, once per key."""
    if key in _state.warned:
        return
    _state.warned.add(key)
    from syntorch import _values
    file, line = _values._call_site()
    warnings.warn_explicit(f"functional model: {text}", RuntimeWarning, file, line)


def _value_storage(v):
    """The key and bytes of the memory v's value lives in (a view shares its base's)."""
    try:
        st = v.untyped_storage()
    except AttributeError:  # PyTorch before 2.0
        st = v.storage()
    return st.data_ptr(), st.nbytes()


def _forget(serial):
    """Drops serial's value and its share of the limit (under the lock)."""
    if _state.values.pop(serial, None) is None:
        return
    sim, key = _state.keys.pop(serial)
    entry = _state.storages.get(key)
    if entry is not None:
        entry[0] -= 1
        if entry[0] == 0:
            _state.live_bytes -= entry[1]
            del _state.storages[key]
    held = _state.aliases.get(sim)
    if held is not None:
        held.discard(serial)
        if not held:
            del _state.aliases[sim]


def drop(t):
    with _state.lock:
        _forget(t._serial)
        _state.lost.add(t._serial)
        t._watch_release()  # so that `lost` forgets it with the tensor


def drop_aliases(t):
    """Drops the values of t and of every tensor sharing its simulated memory: an in-place write
    that could not be computed made all of them stale."""
    with _state.lock:
        for serial in list(_state.aliases.get(t._storage_id, ())) + [t._serial]:
            _forget(serial)  # (the aliases had values, so they are watched already)
            _state.lost.add(serial)
        t._watch_release()


def _real_dtype(d):
    return getattr(_state.real, str(d).removeprefix("torch."), None)


def attach(t, v, op="an op"):
    """Keeps v as t's value: cast to t's dtype where they differ (autocast, a half kernel run in
    float32), none when the shapes differ, t is on the meta device or the limit would be passed.
    The limit counts each storage of values once (views share their base's)."""
    _drain()
    if t._device == "meta":
        drop(t)
        return
    if tuple(v.shape) != tuple(t.shape):
        _warn_once(("shape", op), f"{op} gave a value of shape {list(v.shape)} for a tensor of shape "
                   f"{list(t.shape)}; that tensor gets no value")
        drop(t)
        return
    want = _real_dtype(t.dtype)
    if want is None:
        drop(t)
        return
    if v.dtype != want:
        v = v.to(want)
    key, nbytes = _value_storage(v)
    serial = t._serial
    with _state.lock:
        if _state.values.get(serial) is v:
            return
        _forget(serial)
        added = 0 if key in _state.storages else nbytes
        if _state.live_bytes + added > _state.limit_bytes:
            _warn_once(("limit",), f"values over the limit of {_state.limit_bytes} bytes are not computed (the "
                       f"first: {op}, {list(t.shape)}); reads of them return placeholders")
            _state.lost.add(serial)
            t._watch_release()
            return
        t._watch_release()
        entry = _state.storages.setdefault(key, [0, nbytes])
        entry[0] += 1
        _state.live_bytes += added
        sim = t._storage_id
        _state.values[serial] = v
        _state.keys[serial] = (sim, key)
        _state.aliases.setdefault(sim, set()).add(serial)
        _state.lost.discard(serial)


def real_generator(generator):
    """PyTorch's generator standing for a syntorch torch.Generator (its seed; kept with it, so its
    draws go on from where they were, until it is seeded again); None for None."""
    if generator is None:
        return None
    seed = generator._seed
    kept = generator.__dict__.get("_functional_real")
    if kept is None or kept[0] != seed:
        kept = (seed, real_torch().Generator().manual_seed(seed))
        generator.__dict__["_functional_real"] = kept
    return kept[1]


def value_bytes(t):
    """t's value as raw bytes (a checkpoint keeps them), or None."""
    v = _state.values.get(t._serial) if _state.enabled else None
    if v is None:
        return None
    real = _state.real
    return bytes(v.detach().contiguous().view(-1).view(real.uint8).numpy())


def attach_bytes(t, data):
    """t's value from a checkpoint's raw bytes (value_bytes), when the mode is on."""
    if not _state.enabled:
        return
    real = _state.real
    want = _real_dtype(t.dtype)
    if want is None:
        return
    if not data:
        v = real.empty(list(t.shape), dtype=want)
    else:
        v = real.frombuffer(bytearray(data), dtype=real.uint8).view(want).reshape(list(t.shape)).clone()
    if t.requires_grad:
        v.requires_grad_(True)
    attach(t, v, "torch.load")


def attach_loaded(mine, data):
    """The values of a real PyTorch checkpoint's tensors, read by PyTorch and paired with the
    simulated ones by position (both loads build the same structure)."""
    real = _state.real
    tensors = []

    def collect(a):
        if isinstance(a, _syntorch.Tensor):
            tensors.append(a)
        elif isinstance(a, dict):
            for x in a.values():
                collect(x)
        elif isinstance(a, (list, tuple)):
            for x in a:
                collect(x)
    collect(mine)
    need = sum(t.numel() * t.element_size() for t in tensors)
    if live_bytes() + need > _state.limit_bytes:  # not read at all: PyTorch would hold it twice
        _warn_once(("limit",), f"values over the limit of {_state.limit_bytes} bytes are not computed (the first: "
                   f"a checkpoint of {need} bytes); reads of them return placeholders")
        return
    try:
        import inspect
        extra = {"weights_only": False} if "weights_only" in inspect.signature(real.load).parameters else {}
        theirs = real.load(io.BytesIO(data), map_location="cpu", **extra)
    except Exception as e:
        _warn_once(("load",), f"PyTorch could not read the checkpoint's values ({type(e).__name__}: {e}); its "
                   "tensors have none")
        return

    def pair(a, b):
        if isinstance(a, _syntorch.Tensor):
            if isinstance(b, real.Tensor):
                v = b.detach().clone()
                if a.requires_grad:
                    v.requires_grad_(True)
                attach(a, v, "torch.load")
        elif isinstance(a, dict) and isinstance(b, dict):
            for k in a:
                if k in b:
                    pair(a[k], b[k])
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
            for x, y in zip(a, b):
                pair(x, y)
    pair(mine, theirs)


def derive(t, fn, sources, op):
    """t's value as fn(values of sources) when the mode is on and every source has one (a batch
    that workers stacked elsewhere); none otherwise."""
    if not _state.enabled:
        return
    values = [_state.values.get(x._serial) for x in sources]
    if any(v is None for v in values):
        drop(t)
        return
    with _state.real.no_grad():
        attach(t, fn(_state.real, values), op)


# --- operands and results ---

def _conv(a):
    """An operand as PyTorch takes it: tensors as their values (_NoValue without one), devices as
    the host, syntorch's dtypes and memory formats as PyTorch's."""
    if isinstance(a, _syntorch.Tensor):
        v = _state.values.get(a._serial)
        if v is None:
            raise _NoValue
        return v
    t = type(a)
    if t is str:
        return "cpu" if _DEVICE_RE.match(a) else a
    if t in (int, float, bool, complex) or a is None:
        return a
    if t is list:
        return [_conv(x) for x in a]
    if isinstance(a, tuple):
        items = [_conv(x) for x in a]
        return t(*items) if hasattr(a, "_fields") else tuple(items)
    if t is dict:
        return {k: _conv(v) for k, v in a.items()}
    if isinstance(a, _syntorch.dtype):
        d = _real_dtype(a)
        if d is None:
            raise _NoValue
        return d
    if t is slice:
        return slice(_conv(a.start), _conv(a.stop), _conv(a.step))
    name = t.__name__
    if name == "device":
        return "cpu"
    if name == "_MemoryFormat":
        return getattr(_state.real, a.name)
    return a


def _conv_kwargs(kwargs):
    out = {}
    for k, v in kwargs.items():
        if k == "device":
            out[k] = "cpu" if v is not None else None
        elif k in ("pin_memory", "non_blocking"):
            out[k] = False
        elif k == "generator":
            out[k] = real_generator(v)
        else:
            out[k] = _conv(v)
    return out


def _has_tensor(out):
    if isinstance(out, _syntorch.Tensor):
        return True
    if isinstance(out, (tuple, list)):
        return any(isinstance(o, _syntorch.Tensor) for o in out)
    return False


def _attach_out(out, rout, op, same):
    real = _state.real
    if isinstance(out, _syntorch.Tensor):
        if out._serial in same and out._serial in _state.values:
            return
        if isinstance(rout, real.Tensor):
            attach(out, rout, op)
        else:
            drop(out)
    elif isinstance(out, (tuple, list)):
        if isinstance(rout, (tuple, list)) and len(rout) == len(out):
            for o, r in zip(out, rout):
                _attach_out(o, r, op, same)
        else:
            for o in out:
                if isinstance(o, _syntorch.Tensor):
                    drop(o)


def _upcast_half(x):
    real = _state.real
    if isinstance(x, real.Tensor) and x.dtype in (real.float16, real.bfloat16):
        return x.float()
    if type(x) in (list, tuple):
        return type(x)(_upcast_half(y) for y in x)
    if type(x) is dict:
        return {k: _upcast_half(v) for k, v in x.items()}
    return x


def _as_simulated_dtype(args, kwargs, dtype):
    """Floating operands cast to the dtype the simulated op produced where they differ (float16,
    bfloat16, float32): an op autocast runs in bfloat16 gets bfloat16 operands, one it runs in
    float32 (a loss, a norm) float32 ones, as autocast casts them."""
    real = _state.real
    want = _real_dtype(dtype)
    kinds = (real.float16, real.bfloat16, real.float32)
    if want not in kinds:
        return args, kwargs

    def cast(x):
        if isinstance(x, real.Tensor):
            return x.to(want) if x.dtype in kinds and x.dtype != want else x
        if type(x) in (list, tuple):
            return type(x)(cast(y) for y in x)
        return x
    return [cast(a) for a in args], {k: cast(v) for k, v in kwargs.items()}


def _call_real(fn, args, kwargs, inplace=False):
    """fn on the values, in the simulated grad mode. A half-precision op PyTorch's CPU kernels lack
    runs in float32; in place, its result is written back into the operand (and so its views)."""
    real = _state.real
    with real.set_grad_enabled(_syntorch.is_grad_enabled()):
        try:
            return fn(*args, **kwargs)
        except (RuntimeError, TypeError) as e:
            if "Half" not in str(e) and "BFloat16" not in str(e):
                raise
            if not inplace:
                return fn(*_upcast_half(args), **_upcast_half(kwargs))
            wide = _upcast_half(args)
            out = fn(*wide, **_upcast_half(kwargs))
            args[0].copy_(wide[0])
            return args[0] if out is wide[0] or isinstance(out, real.Tensor) else out


def _compute(op, real_fn, args, kwargs, out, inplace=False, result=False, cast=True):
    """Runs PyTorch's `real_fn` on the operands' values and keeps the result's; returns PyTorch's
    result when `result` (a function whose Python result is itself a value), else None."""
    inplace = inplace or kwargs.get("inplace") is True
    target = args[0] if inplace and args and isinstance(args[0], _syntorch.Tensor) else None

    def lost():
        if target is not None:
            drop_aliases(target)  # written by an op that could not be computed: stale, with its views
        if _has_tensor(out):
            _attach_out(out, None, op, ())

    if real_fn is None:
        return lost()
    try:
        rargs, rkwargs = _conv(list(args)), _conv_kwargs(kwargs)
    except _NoValue:
        return lost()
    if cast and isinstance(out, _syntorch.Tensor) and target is None:
        rargs, rkwargs = _as_simulated_dtype(rargs, rkwargs, out.dtype)
    try:
        rout = _call_real(real_fn, rargs, rkwargs, target is not None)
    except Exception as e:  # PyTorch refused what the simulator took: the result has no value
        _warn_once(("error", op), f"PyTorch's {op} failed on the values ({type(e).__name__}: {e}); its result "
                   "gets no value")
        return lost()
    if result:
        return rout
    # An operand the simulator returned as it is (x[:], a 1-D tensor's .T) keeps its value.
    same = () if target is not None else {a._serial for a in args if isinstance(a, _syntorch.Tensor)}
    _attach_out(out, rout, op, same)
    return None


def _inplace_position(fn):
    """The position of fn's `inplace` argument (F.relu(x, True)), or None."""
    import inspect
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("inplace") if "inplace" in names else None


def _wrapped(fn, op, resolve, inplace=False, always=False, result=False):
    """fn, computing values when the mode is on and this is the outermost wrapped call.
    resolve() gives PyTorch's callable (None: none exists). `always`: run even when fn returns
    no tensor (a seed); `result`: fn's Python result is replaced by PyTorch's (equal, allclose)."""
    at = _inplace_position(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _state.enabled or getattr(_tls, "depth", 0):
            return fn(*args, **kwargs)
        writes = inplace or (at is not None and len(args) > at and args[at] is True)
        if any(isinstance(a, types.GeneratorType) for a in args):  # read once, by both
            args = tuple(list(a) if isinstance(a, types.GeneratorType) else a for a in args)
        _tls.depth = 1
        try:
            out = fn(*args, **kwargs)
        finally:
            _tls.depth = 0
        if always or writes or result or _has_tensor(out):
            r = _compute(op, resolve(), args, kwargs, out, writes, result)
            if result and r is not None:
                return r
        return out
    wrapper._functional_wrapped = True
    return wrapper


# --- value reads (Tensor.item and its kin ask here first) ---

def read(t):
    """t's value for a read, or None (the mode off, or no value): the caller returns a placeholder."""
    if not _state.enabled:
        return None
    v = _state.values.get(t._serial)
    return None if v is None else v.detach()


def tensor_repr(t, text):
    """PyTorch's repr of t's value with the simulated device, or None."""
    v = read(t) if _state.enabled else None
    if v is None:
        return None
    s = repr(_state.values[t._serial])
    device = t._device
    if device != "cpu":
        device = device if ":" in device else f"{device}:0"
        cut = len(s) - 1
        for marker in (", dtype=", ", grad_fn=", ", requires_grad="):
            i = s.rfind(marker)
            if i != -1:
                cut = min(cut, i)
        s = f"{s[:cut]}, device='{device}'{s[cut:]}"
    return s


# --- installing the wrappers ---

_NOT_WRAPPED = {"save", "load"}  # checkpoints carry their values themselves (serialization.py)
_SIDE_EFFECTS = {"manual_seed", "set_default_dtype", "set_printoptions", "use_deterministic_algorithms"}
_VALUE_RESULTS = {"allclose", "is_nonzero"}
_OPERATORS = {f"__{n}__" for n in (
    "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv", "rtruediv", "itruediv",
    "floordiv", "rfloordiv", "ifloordiv", "mod", "rmod", "pow", "rpow", "ipow", "matmul", "rmatmul", "neg", "pos",
    "abs", "invert", "and", "rand", "iand", "or", "ror", "ior", "xor", "rxor", "ixor", "lshift", "rshift", "lt",
    "le", "gt", "ge", "eq", "ne", "getitem", "setitem")}
_CONTAINERS = {"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}
_METHOD_SKIP = {"item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__", "__format__", "__repr__",
                "__str__", "__len__", "__hash__", "__iter__", "__getattr__", "__init__", "__new__", "backward",
                "register_hook", "register_post_accumulate_grad_hook", "record_stream", "data_ptr", "cuda", "cpu",
                "to", "pin_memory", "size", "dim", "numel", "stride", "element_size", "storage_offset",
                "is_contiguous", "is_floating_point", "is_complex", "is_pinned", "get_device", "type",
                "__reduce_ex__", "__deepcopy__", "__getstate__", "__setstate__", "__dir__", "__sizeof__",
                "__class__", "__init_subclass__", "__subclasshook__"}


def _fallbacks(real):
    """PyTorch functions an older PyTorch lacks, written with what it has."""
    F = real.nn.functional

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
        scale = query.shape[-1] ** -0.5 if scale is None else scale
        if enable_gqa and key.shape[-3] != query.shape[-3]:
            key = key.repeat_interleave(query.shape[-3] // key.shape[-3], -3)
            value = value.repeat_interleave(query.shape[-3] // value.shape[-3], -3)
        scores = query @ key.transpose(-2, -1) * scale
        L, S = query.shape[-2], key.shape[-2]
        if is_causal:
            keep = real.ones(L, S, dtype=real.bool).tril()
            scores = scores.masked_fill(~keep, float("-inf"))
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == real.bool \
                else scores + attn_mask
        probs = scores.softmax(-1)
        if dropout_p > 0.0:
            probs = F.dropout(probs, dropout_p)
        return probs @ value

    def rms_norm(input, normalized_shape, weight=None, eps=None):
        dims = tuple(range(-len(normalized_shape), 0))
        eps = real.finfo(input.dtype).eps if eps is None else eps
        out = input * real.rsqrt(input.pow(2).mean(dims, keepdim=True) + eps)
        return out * weight if weight is not None else out

    return {"torch.nn.functional.scaled_dot_product_attention": scaled_dot_product_attention,
            "torch.nn.functional.rms_norm": rms_norm}


# Where PyTorch's function of the same name is deprecated: the one it says to use.
_PREFERRED = {"torch.nn.functional.tanh": "tanh", "torch.nn.functional.sigmoid": "sigmoid"}


def _resolver(real_module, name, fallbacks, path):
    preferred = _PREFERRED.get(f"{path}.{name}")
    fn = getattr(_state.real, preferred) if preferred else getattr(real_module, name, None)
    if fn is None:
        fn = fallbacks.get(f"{path}.{name}")
    if name == "manual_seed":
        fn = _state.real.manual_seed
    return lambda: fn


def _wrap_module_functions(module, real_module, path, fallbacks):
    import inspect
    for name, obj in list(vars(module).items()):
        if name.startswith("_") or name in _NOT_WRAPPED or isinstance(obj, type) or \
                getattr(obj, "_functional_wrapped", False):
            continue
        if not (inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        real_fn = getattr(real_module, name, None) or fallbacks.get(f"{path}.{name}")
        if real_fn is None and name not in _SIDE_EFFECTS:
            continue
        setattr(module, name, _wrapped(obj, f"{path}.{name}", _resolver(real_module, name, fallbacks, path),
                                       inplace=name.endswith("_"), always=name in _SIDE_EFFECTS,
                                       result=name in _VALUE_RESULTS))


def _wrap_tensor(real):
    T = _syntorch.Tensor
    for name in dir(T):
        if name in _METHOD_SKIP or (name.startswith("_") and name not in _OPERATORS):
            continue
        obj = getattr(T, name, None)
        if isinstance(obj, property):
            continue
        if obj is None or not callable(obj) or isinstance(obj, type) or getattr(obj, "_functional_wrapped", False):
            continue
        real_fn = getattr(real.Tensor, name, None)
        if real_fn is None:
            continue
        inplace = (name.endswith("_") and not name.startswith("__")) or name.startswith("__i") and name != "__invert__" \
            or name == "__setitem__"
        setattr(T, name, _wrapped(obj, f"Tensor.{name}", (lambda f: lambda: f)(real_fn), inplace=inplace,
                                  result=name in _VALUE_RESULTS))
    _wrap_moves(T, real)
    _wrap_properties(T, real)
    _wrap_backward(T, real)


def _wrap_moves(T, real):
    """to, cuda, cpu, pin_memory: the value stays on the host; a new simulated tensor (another
    device, another dtype) gets a new value, as PyTorch's copy is one."""
    def to(self, *args, **kwargs):  # PyTorch's to, its operands converted: devices dropped
        keep = [a for a in args if isinstance(a, (real.dtype, real.Tensor, real.memory_format))]
        return self.to(*keep, **{k: v for k, v in kwargs.items() if k not in ("device", "non_blocking")})

    def same(self, *args, **kwargs):
        return self

    for name in ("to", "cuda", "cpu", "pin_memory"):
        orig = getattr(T, name)
        if getattr(orig, "_functional_wrapped", False):
            continue
        wrapper = _wrapped(orig, f"Tensor.{name}", (lambda f: lambda: f)(to if name == "to" else same))

        def copying(self, *args, _w=wrapper, _n=name, **kwargs):
            out = _w(self, *args, **kwargs)
            if _state.enabled and isinstance(out, _syntorch.Tensor) and out._storage_id != self._storage_id:
                v, src = _state.values.get(out._serial), _state.values.get(self._serial)
                if v is not None and src is not None and v.data_ptr() == src.data_ptr():
                    with real.set_grad_enabled(_syntorch.is_grad_enabled()):
                        attach(out, v.clone(), f"Tensor.{_n}")
            return out
        copying._functional_wrapped = True
        functools.update_wrapper(copying, orig)
        setattr(T, name, copying)


def _wrap_properties(T, real):
    for name in ("T", "mT", "H", "mH", "data", "real", "imag"):
        prop = T.__dict__.get(name)
        if not isinstance(prop, property) or getattr(prop.fget, "_functional_wrapped", False):
            continue

        def getter(self, _f=prop.fget, _n=name):
            out = _f(self)
            if _state.enabled and not getattr(_tls, "depth", 0) and isinstance(out, _syntorch.Tensor) and \
                    out._serial != self._serial:  # a 1-D tensor's .T is itself, and keeps its value
                v = _state.values.get(self._serial)
                if v is None:
                    drop(out)
                else:
                    try:
                        attach(out, getattr(v, _n), f"Tensor.{_n}")
                    except Exception:
                        drop(out)
            return out
        getter._functional_wrapped = True
        setattr(T, name, property(getter, prop.fset, prop.fdel, prop.__doc__))

    grad = T.__dict__["grad"]
    _state.raw_grad = grad.fget

    def get_grad(self, _f=grad.fget):
        g = _f(self)
        if _state.enabled and g is not None:
            v = _state.values.get(self._serial)
            if v is not None and v.grad is not None:
                attach(g, v.grad, "Tensor.grad")
            else:
                drop(g)
        return g

    def set_grad(self, g, _f=grad.fset):
        _f(self, g)
        if _state.enabled:
            v = _state.values.get(self._serial)
            if v is not None:
                gv = None if g is None else _state.values.get(g._serial)
                v.grad = gv.detach() if gv is not None else None
    get_grad._functional_wrapped = True
    T.grad = property(get_grad, set_grad, None, grad.__doc__)

    rg = T.__dict__["requires_grad"]

    def set_requires_grad(self, on, _f=rg.fset):
        _f(self, on)
        if _state.enabled:
            v = _state.values.get(self._serial)
            if v is not None and v.is_leaf:
                v.requires_grad_(bool(on))
    T.requires_grad = property(rg.fget, set_requires_grad, None, rg.__doc__)


def _real_backward(tensors, grads, retain_graph):
    real = _state.real
    values, gvalues = [], []
    for i, t in enumerate(tensors):
        v = _state.values.get(t._serial)
        if v is None or not v.requires_grad:
            return
        values.append(v)
        if grads is not None:
            g = _state.values.get(grads[i]._serial)
            if g is None:
                return
            gvalues.append(g)
    try:
        real.autograd.backward(values, gvalues or None, retain_graph=retain_graph)
    except RuntimeError as e:
        _warn_once(("backward",), f"PyTorch's backward failed on the values ({e}); gradients get no value")


def _wrap_backward(T, real):
    orig = T.backward

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if create_graph:
            raise NotImplementedError("Tensor.backward: argument 'create_graph' (higher-order gradients) is not "
                                      "supported")
        if inputs is not None:
            raise NotImplementedError("Tensor.backward: argument 'inputs' is not supported")
        # PyTorch's first, so that hooks running inside the simulated backward (DDP's, an optimizer
        # stepping in a post-accumulate hook) see this iteration's gradients.
        if _state.enabled:
            _real_backward([self], None if gradient is None else [gradient], bool(retain_graph))
        orig(self, gradient, bool(retain_graph))
    backward._functional_wrapped = True
    T.backward = backward


def _wrap_autograd(autograd):
    orig = autograd.backward

    @functools.wraps(orig)
    def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
        gs = [grad_tensors] if isinstance(grad_tensors, _syntorch.Tensor) else grad_tensors
        if _state.enabled and not create_graph and inputs is None and (gs is None or None not in list(gs)):
            ts = [tensors] if isinstance(tensors, _syntorch.Tensor) else list(tensors)
            _real_backward(ts, None if gs is None else list(gs), bool(retain_graph))
        orig(tensors, grad_tensors, retain_graph, create_graph, inputs)
    autograd.backward = backward


# --- layers: a PyTorch twin per built-in layer ---

def _fallback_init(real, name, v):
    """A value for a parameter PyTorch's twin does not give: a norm's weight ones, a bias zeros,
    anything else uniform in +-1/sqrt(fan_in) (nn.Linear's default)."""
    leaf = name.rsplit(".", 1)[-1]
    with real.no_grad():
        if leaf == "bias" or v.dim() == 0:
            v.zero_()
        elif v.dim() == 1:
            v.fill_(1.0)
        else:
            bound = (v.shape[1] * (v[0][0].numel() if v.dim() > 2 else 1)) ** -0.5
            v.uniform_(-bound, bound)
    return v


def _new_value(real, t):
    d = _real_dtype(t.dtype)
    if d is None:
        return None
    return real.empty(list(t.shape), dtype=d)


def _init_values(module, real, given=frozenset()):
    """Values for a freshly built layer's parameters and buffers: its PyTorch twin's, or defaults.
    Tensors it was given (a module DDP wraps: `given`, their serials) keep what they have."""
    twin = None
    cls = module.__dict__.get("_functional_class")
    args, kwargs = module.__dict__.get("_functional_args", ((), {}))
    real_cls = getattr(real.nn, cls.__name__, None) if cls is not None else None
    want = sum(p.numel() * p.element_size() for _, p in _named_tensors(module))
    if want + live_bytes() > _state.limit_bytes:
        _warn_once(("limit",), f"values over the limit of {_state.limit_bytes} bytes are not computed (the first: "
                   f"{type(module).__name__}'s parameters); reads of them return placeholders")
        return
    if real_cls is not None:
        try:
            with real.no_grad():
                twin = real_cls(*_conv(list(args)), **_conv_kwargs(kwargs))
        except Exception as e:
            _warn_once(("twin", real_cls.__name__), f"PyTorch's nn.{real_cls.__name__} could not be built from the "
                       f"same arguments ({type(e).__name__}: {e}); its parameters get default values")
            twin = None
    theirs = dict(_named_tensors(twin)) if twin is not None else {}
    for name, t in _named_tensors(module):
        if t._serial in _state.values or t._serial in given:  # made before (a wrapped module's): kept
            continue
        v = theirs.get(name)
        if v is None or tuple(v.shape) != tuple(t.shape):
            v = _new_value(real, t)
            if v is None:
                continue
            if v.is_floating_point():
                _fallback_init(real, name, v)
            else:
                v.zero_()
        v = v.detach()
        if t.requires_grad:
            v.requires_grad_(True)
        attach(t, v, f"nn.{type(module).__name__}")
    if twin is not None:
        object.__setattr__(module, "_functional_twin", twin)


def _named_tensors(module):
    if module is None:
        return []
    out = list(module.named_parameters()) + [(n, b) for n, b in module.named_buffers() if b is not None]
    return out


def _set_path(root, name, v):
    *path, leaf = name.split(".")
    m = root
    for p in path:
        m = getattr(m, p)
    if leaf in m._parameters:
        m._parameters[leaf] = v
    else:
        m._buffers[leaf] = v


def _twin_call(module):
    """PyTorch's twin of `module` with the simulated layer's current values in it (a tied or
    reassigned parameter included), or None."""
    twin = module.__dict__.get("_functional_twin")
    if twin is None:
        return None
    for name, t in _named_tensors(module):
        v = _state.values.get(t._serial)
        if v is None:
            raise _NoValue
        _set_path(twin, name, v)
    twin.train(module.training)
    return twin


def _twin_fits(module):
    """Whether the layer's PyTorch twin computes what the simulated layer does: not with hooks
    (they see and may change the simulated arguments and output), under autocast (the ops cast
    one by one, as autocast casts them) or with half-precision parameters (which PyTorch's CPU
    kernels lack; its ops then run in float32 one by one)."""
    if module._forward_pre_hooks or module._forward_hooks or _syntorch.is_autocast_enabled():
        return False
    return all(t.dtype.is_floating_point is False or str(t.dtype) in ("torch.float32", "torch.float64")
               for _, t in _named_tensors(module))


def _wrap_layers(nn, real):
    Module = nn.Module
    import syntorch.torch.nn as snn
    classes = []
    for mod in (snn,) + tuple(sys.modules[n] for n in list(sys.modules) if n.startswith("syntorch.torch.nn.")):
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Module) and obj is not Module and \
                    obj.__module__.startswith("syntorch.torch.nn") and obj not in classes and \
                    obj.__name__ not in _CONTAINERS:
                classes.append(obj)
    def _builtin_of(t):
        for c in t.__mro__:
            if c in classes:
                return c
        return None

    for cls in classes:
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_functional_wrapped", False):
            continue

        def wrapped_init(self, *args, _init=init, **kwargs):
            outer = _state.enabled and "_functional_class" not in self.__dict__
            if outer:  # the layer's own class: the most derived built-in one
                object.__setattr__(self, "_functional_class", _builtin_of(type(self)))
                object.__setattr__(self, "_functional_args", (args, kwargs))
            # A layer built inside a built-in one's __init__ (MultiheadAttention's out_proj) takes
            # its values from the outer one's twin, which draws them as PyTorch does.
            top = outer and not getattr(_tls, "building", False)
            given = frozenset(t._serial for a in list(args) + list(kwargs.values()) if isinstance(a, Module)
                              for _, t in _named_tensors(a)) if top else frozenset()
            if top:
                _tls.building = True
            try:
                _init(self, *args, **kwargs)
            finally:
                if top:
                    _tls.building = False
            if top:
                _init_values(self, _state.real, given)
        wrapped_init._functional_wrapped = True
        functools.update_wrapper(wrapped_init, init)
        cls.__init__ = wrapped_init

    orig_call = Module.__call__

    def call(self, *args, **kwargs):
        if not _state.enabled or getattr(_tls, "depth", 0) or "_functional_twin" not in self.__dict__:
            return orig_call(self, *args, **kwargs)
        cls = self.__dict__["_functional_class"]
        if type(self).forward is not cls.forward or not _twin_fits(self):  # its ops compute one by one
            return orig_call(self, *args, **kwargs)
        _tls.depth = 1
        try:
            out = orig_call(self, *args, **kwargs)
        finally:
            _tls.depth = 0
        try:
            twin = _twin_call(self)
        except _NoValue:
            twin = None
        if twin is None:
            _attach_out(out, None, f"nn.{cls.__name__}", ())
        else:
            _compute(f"nn.{cls.__name__}", twin, args, kwargs, out, inplace=getattr(self, "inplace", False) is True,
                     cast=False)
        return out
    call._functional_wrapped = True
    Module.__call__ = call


# --- optimizers: a PyTorch twin stepping the same values ---

def _wrap_optimizers(optim, real):
    Optimizer = optim.Optimizer
    orig_step, orig_zero = Optimizer.step, Optimizer.zero_grad

    def twin_of(self):
        values = []
        for g in self.param_groups:
            for p in g["params"]:
                v = _state.values.get(p._serial)
                if v is None or not v.is_leaf:
                    return None
                values.append(v)
        key = tuple(id(v) for v in values)
        have = self.__dict__.get("_functional_twin")
        if have is not None and have[0] == key:
            return have[1]
        cls = next((c for c in type(self).__mro__ if getattr(real.optim, c.__name__, None) is not None
                    and c.__module__.startswith("syntorch.torch.optim")), None)
        if cls is None:
            _warn_once(("optim", type(self).__name__), f"no PyTorch optimizer matches {type(self).__name__}; "
                       "parameters keep their values")
            return None
        groups = []
        for g in self.param_groups:
            group = {k: v for k, v in g.items() if k not in ("params", "foreach", "fused")}
            group["params"] = [_state.values[p._serial] for p in g["params"]]
            groups.append(group)
        try:
            twin = getattr(real.optim, cls.__name__)(groups)
        except Exception as e:
            _warn_once(("optim", cls.__name__), f"PyTorch's optim.{cls.__name__} could not be built ({e}); "
                       "parameters keep their values")
            return None
        if have is not None:  # rebuilt (add_param_group, a moved parameter): the state goes on
            for v in values:
                if v in have[1].state:
                    twin.state[v] = have[1].state[v]
        self.__dict__["_functional_twin"] = (key, twin)
        return twin

    def gradients_lost(self):
        """A parameter whose simulated gradient exists while its value's is missing or stale (a
        collective between ranks wrote it, a custom autograd.Function's backward made it)."""
        raw_grad = _state.raw_grad
        for g in self.param_groups:
            for p in g["params"]:
                v = _state.values.get(p._serial)
                sim = raw_grad(p)
                if v is not None and sim is not None and (v.grad is None or sim._serial in _state.lost):
                    return True
        return False

    def step_values(self):
        if gradients_lost(self):
            _warn_once(("optim-grads", id(self)), f"{type(self).__name__}.step: some gradients have no values "
                       "(written by a collective between ranks, or by a custom autograd.Function); the "
                       "parameters' values are dropped rather than stepped wrong, and reads of them return "
                       "placeholders")
            for g in self.param_groups:
                for p in g["params"]:
                    drop_aliases(p)
            return
        twin = twin_of(self)
        if twin is not None:
            for mine, theirs in zip(self.param_groups, twin.param_groups):
                for k, v in mine.items():
                    if k not in ("params", "foreach", "fused") and k in theirs:
                        theirs[k] = v
            twin.step()

    def step(self, closure=None):
        out = orig_step(self, closure)
        if _state.enabled:
            step_values(self)
        return out

    def zero_grad(self, set_to_none=True):
        orig_zero(self, set_to_none)
        if _state.enabled:
            for g in self.param_groups:
                for p in g["params"]:
                    v = _state.values.get(p._serial)
                    if v is not None and v.grad is not None:
                        if set_to_none:
                            v.grad = None
                        else:
                            v.grad.detach_().zero_()
    state_property = Optimizer.state
    orig_load = Optimizer.load_state_dict

    def state(self):
        """The simulated state tensors, with the twin's values where it has them."""
        out = state_property.fget(self)
        have = self.__dict__.get("_functional_twin")
        if _state.enabled and have is not None:
            for p, entry in out.items():
                theirs = have[1].state.get(_state.values.get(p._serial), {})
                for name, t in entry.items():
                    r = theirs.get(name)
                    if isinstance(r, (int, float)):
                        r = real.tensor(float(r))
                    if isinstance(r, real.Tensor):  # the twin's own state: edits reach it
                        attach(t, r.detach(), f"optimizer state {name}")
        return out

    def load_state_dict(self, state_dict):
        orig_load(self, state_dict)
        if not _state.enabled:
            return
        twin = twin_of(self)
        if twin is None:
            return
        try:
            theirs = {"state": {i: {k: (_conv(v) if isinstance(v, _syntorch.Tensor) else v) for k, v in e.items()}
                                for i, e in state_dict["state"].items()},
                      "param_groups": [{k: v for k, v in g.items() if k not in ("foreach", "fused")}
                                       for g in state_dict["param_groups"]]}
            twin.load_state_dict(theirs)
        except (_NoValue, Exception) as e:
            _warn_once(("optim-load", id(self)), f"{type(self).__name__}.load_state_dict: the saved state has no "
                       f"values ({type(e).__name__}); the values' optimizer starts afresh")
            twin.state.clear()

    step._functional_wrapped = zero_grad._functional_wrapped = load_state_dict._functional_wrapped = True
    Optimizer.step, Optimizer.zero_grad, Optimizer.load_state_dict = step, zero_grad, load_state_dict
    Optimizer.state = property(state)
    Optimizer._functional_step_values = step_values


# --- the gradient scaler: its scale, the inf check and the skipped steps, on the values ---

def _wrap_grad_scaler(amp):
    """torch.amp.GradScaler on the values, as PyTorch's: the loss scaled, gradients unscaled and
    checked for inf/NaN, a step skipped when they have any, the scale backed off or grown."""
    import inspect
    GradScaler = amp.GradScaler
    orig_init, orig_scale, orig_unscale, orig_step, orig_update, orig_get = (
        GradScaler.__init__, GradScaler.scale, GradScaler.unscale_, GradScaler.step, GradScaler.update,
        GradScaler.get_scale)
    signature = inspect.signature(orig_init)

    def init(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        self.__dict__["_functional"] = dict(scale=float(a["init_scale"]), growth=float(a["growth_factor"]),
                                            backoff=float(a["backoff_factor"]), interval=int(a["growth_interval"]),
                                            enabled=bool(a["enabled"]), tracker=0, found={}, unscaled=set())

    def state(self):
        return self.__dict__.get("_functional") if _state.enabled else None

    def scale(self, outputs):
        out = orig_scale(self, outputs)
        st = state(self)
        if st is not None and st["enabled"]:
            def scaled(o, s):
                if isinstance(o, (list, tuple)):
                    for a, b in zip(o, s):
                        scaled(a, b)
                    return
                v = _state.values.get(o._serial)
                if v is None:
                    drop(s)
                else:
                    with _state.real.set_grad_enabled(_syntorch.is_grad_enabled()):
                        attach(s, v * st["scale"], "GradScaler.scale")
            scaled(outputs, out)
        return out

    def unscale_values(self, st, optimizer):
        if id(optimizer) in st["unscaled"]:
            return
        st["unscaled"].add(id(optimizer))
        real = _state.real
        found = False
        inv = 1.0 / st["scale"]
        with real.no_grad():
            for g in optimizer.param_groups:
                for p in g["params"]:
                    v = _state.values.get(p._serial)
                    if v is not None and v.grad is not None:
                        v.grad.mul_(inv)
                        found = found or not bool(real.isfinite(v.grad).all())
        st["found"][id(optimizer)] = found

    def unscale_(self, optimizer):
        orig_unscale(self, optimizer)
        st = state(self)
        if st is not None and st["enabled"]:
            unscale_values(self, st, optimizer)

    def step(self, optimizer, *args, **kwargs):
        st = state(self)
        if st is None:
            return orig_step(self, optimizer, *args, **kwargs)
        # The simulated step (its kernels and the inf-flag read) as without values.
        orig_step(self, optimizer, *args, **kwargs)
        if not st["enabled"]:
            optimizer._functional_step_values()
            return None
        unscale_values(self, st, optimizer)
        if not st["found"][id(optimizer)]:
            optimizer._functional_step_values()
        return None

    def update(self, new_scale=None):
        orig_update(self, new_scale)
        st = state(self)
        if st is None or not st["enabled"]:
            return
        if any(st["found"].values()):
            st["scale"] *= st["backoff"]
            st["tracker"] = 0
        else:
            st["tracker"] += 1
            if st["tracker"] == st["interval"]:
                st["scale"] *= st["growth"]
                st["tracker"] = 0
        st["found"].clear()
        st["unscaled"].clear()

    def get_scale(self):
        st = state(self)
        if st is None:
            return orig_get(self)
        return st["scale"] if st["enabled"] else 1.0

    for name, fn in (("__init__", init), ("scale", scale), ("unscale_", unscale_), ("step", step),
                     ("update", update), ("get_scale", get_scale)):
        functools.update_wrapper(fn, getattr(GradScaler, name))
        fn._functional_wrapped = True
        setattr(GradScaler, name, fn)


# --- collectives: no values between ranks yet ---

def _wrap_distributed(dist):
    """A collective over several ranks leaves its outputs without values (reads of them return
    placeholders): the ranks' programs do not exchange values. In a world of one the collectives
    are copies, which compute."""
    def outputs(name, args, kwargs):
        if name in ("all_reduce", "broadcast"):
            return [args[0] if args else kwargs.get("tensor")]
        if name == "all_gather":
            return list(args[0] if args else kwargs.get("tensor_list"))
        if name == "all_gather_into_tensor":
            return [args[0] if args else kwargs.get("output_tensor")]
        if name == "reduce_scatter_tensor":
            return [args[0] if args else kwargs.get("output")]
        return []

    for name in ("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor"):
        orig = getattr(dist, name, None)
        if orig is None or getattr(orig, "_functional_wrapped", False):
            continue

        def collective(*args, _orig=orig, _name=name, **kwargs):
            out = _orig(*args, **kwargs)
            if _state.enabled and dist.is_initialized() and dist.get_world_size(kwargs.get("group")) > 1:
                for t in outputs(_name, args, kwargs):
                    if isinstance(t, _syntorch.Tensor) and t._serial in _state.values:
                        _warn_once(("collective",), f"torch.distributed.{_name} across ranks: the ranks do not "
                                   "exchange values, so its outputs have none (reads return placeholders)")
                        drop(t)
            return out
        functools.update_wrapper(collective, orig)
        collective._functional_wrapped = True
        setattr(dist, name, collective)


def _install():
    real = _state.real
    import syntorch.torch as torch
    import syntorch.torch.nn.functional as F
    import syntorch.torch.nn.init as init
    import syntorch.torch.nn.utils as nn_utils
    fallbacks = _fallbacks(real)
    for module, real_module, path in ((torch, real, "torch"), (F, real.nn.functional, "torch.nn.functional"),
                                      (init, real.nn.init, "torch.nn.init"), (torch.linalg, real.linalg, "torch.linalg"),
                                      (nn_utils, real.nn.utils, "torch.nn.utils")):
        _wrap_module_functions(module, real_module, path, fallbacks)
    _wrap_tensor(real)
    _wrap_autograd(torch.autograd)
    _wrap_layers(torch.nn, real)
    _wrap_optimizers(torch.optim, real)
    _wrap_grad_scaler(torch.amp)
    _wrap_distributed(torch.distributed)
    _state.installed = True
