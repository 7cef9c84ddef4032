"""API coverage: with SYNTORCH_API_COVERAGE=1 (the test command sets it), every callable name the
API listing of docs/python.md holds (module functions, classes, Tensor methods and properties) is
wrapped to note its calls, and the session fails if the whole suite ran and one was never
called. The wrappers go in before any test module imports the package's names."""

import enum
import functools
import importlib
import inspect
import os

import pytest

_ENABLED = os.environ.get("SYNTORCH_API_COVERAGE") == "1"
_called = set()
_listed = set()


def _note(key, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True  # not the program's frame (call sites skip it, as pytest's tracebacks do)
        _called.add(key)
        return fn(*args, **kwargs)
    return wrapper


_class_keys = {}         # listed class -> its keys (a class listed under two names has both)
_wrapped_owners = set()  # classes whose own __init__ notes constructions


def _wrap_class(key, cls):
    """Notes each construction of `cls` by wrapping, in place, the __init__ it runs (its own or a
    base's): the wrapper notes the class that owns it and the first listed class of the instance's
    type, so a class that inherits its __init__ counts when it is built, a base when a subclass
    calls its __init__, and the classes themselves stay as they are."""
    if issubclass(cls, enum.Enum):
        return False  # its members exist once the class does: nothing is constructed to count
    owner = next(c for c in cls.__mro__ if "__init__" in c.__dict__)
    init = owner.__dict__["__init__"]
    if not inspect.isfunction(init):
        return False  # an extension type or object's own __init__: nothing of ours to wrap
    _class_keys.setdefault(cls, set()).add(key)
    if owner not in _wrapped_owners:
        _wrapped_owners.add(owner)

        @functools.wraps(init)
        def wrapper(self, *args, **kwargs):
            _called.update(_class_keys.get(owner, ()))
            _called.update(next((_class_keys[c] for c in type(self).__mro__ if c in _class_keys), ()))
            return init(self, *args, **kwargs)
        owner.__init__ = wrapper
    return True


def _install():
    from syntorch import api_listing
    import _syntorch
    for modname in api_listing.MODULES:
        if modname == "syntorch.run":
            continue  # it runs scripts in processes of their own (test_syntorch_run_*), changing os.environ
        module = importlib.import_module(modname)
        for name, obj in api_listing._public(module):
            key = f"{modname}.{name}"
            if inspect.isclass(obj):
                if _wrap_class(key, obj):
                    _listed.add(key)
            elif callable(obj):
                setattr(module, name, _note(key, obj))
                _listed.add(key)
    tensor = _syntorch.Tensor
    for name in dir(tensor):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(tensor, name)
        key = f"Tensor.{name}"
        if isinstance(attr, property) and attr.fget is not None:
            setattr(tensor, name, property(_note(key, attr.fget), attr.fset, attr.fdel, attr.__doc__))
        elif callable(attr):
            setattr(tensor, name, _note(key, getattr(tensor, name)))
        else:
            continue
        _listed.add(key)


if _ENABLED:
    _install()


def covered_by_calls():
    """The listed names whose calls are noted (empty without SYNTORCH_API_COVERAGE=1): the rest
    (constants, extension types, syntorch.run's functions) are checked by name."""
    return set(_listed)


def pytest_sessionfinish(session, exitstatus):
    if not _ENABLED or exitstatus != 0:
        return
    if session.config.getoption("keyword") or session.config.getoption("markexpr") or session.config.getoption(
            "deselect", None):
        return  # a selection of the suite: not every name is expected
    missing = sorted(_listed - _called)
    if missing:
        session.config.get_terminal_writer().line(
            "API coverage: listed in docs/python.md but never called by the tests: " + ", ".join(missing), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
