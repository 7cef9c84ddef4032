"""torch.save and torch.load over shapes: a checkpoint keeps each tensor's shape, dtype, device and
requires_grad (values are not simulated) with the rest of the object pickled as PyTorch does, and
what saving and loading cost the simulated machine: saving copies each device tensor to the host
(as torch.save does), loading makes host tensors and moves each to the device it was saved from
(or map_location's), a host-to-device copy each. torch.load also reads real PyTorch checkpoints
(the zip format of PyTorch 1.6 on: data.pkl and its storages), taking their tensors' shapes and
dtypes without reading their data, so a real model's state dict loads into a simulated model.
The time of the file system is not modelled."""

import collections
import io
import os
import pickle
import zipfile

import _syntorch

_FORMAT = "syntorch-checkpoint 1"


def _saved_tensor(shape, dtype, device, requires_grad, data=None):
    """What a syntorch checkpoint pickles for a tensor (its value's bytes too, in the functional
    value mode); the loader makes a tensor of it (_SyntorchLoader)."""
    raise pickle.UnpicklingError("a syntorch checkpoint's tensor is read by torch.load, not by pickle")


def _torch():
    import syntorch.torch as torch
    return torch


def _alias(tensor):
    return tensor


class _Saver(pickle.Pickler):
    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.views = {}  # (storage, offset, shape, stride, dtype) -> the first tensor saved for it

    def reducer_override(self, obj):
        if isinstance(obj, _syntorch.Tensor):
            # A tensor of the same memory and layout as one saved before (a tied weight, detached
            # under each of its names) is that one again, as PyTorch's storages are shared.
            key = (obj._storage_id, obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()), str(obj.dtype))
            first = self.views.setdefault(key, obj)
            if first is not obj:
                return _alias, (first,)
            if obj.device.type == "cuda":
                with _torch().no_grad():
                    obj.cpu()  # the copy to the host torch.save makes (and the wait for it)
            from syntorch import _functional
            data = _functional.value_bytes(obj)
            return _saved_tensor, (list(obj.shape), str(obj.dtype), str(obj.device), obj.requires_grad) + (
                () if data is None else (data,))
        return NotImplemented


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Writes obj (tensors as their shape, dtype, device and requires_grad) to a path or file."""
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("torch.save: only the pickle module is supported")
    data = io.BytesIO()
    _Saver(data, pickle_protocol).dump(obj)
    opened = isinstance(f, (str, os.PathLike))
    out = open(f, "wb") if opened else f
    try:
        with zipfile.ZipFile(out, "w") as z:
            z.writestr("syntorch/format", _FORMAT)
            z.writestr("syntorch/data.pkl", data.getvalue())
    finally:
        if opened:
            out.close()


def _map_device(location, map_location):
    if map_location is None:
        return location
    if callable(map_location) and not isinstance(map_location, (str, dict)):
        raise NotImplementedError("torch.load: a callable map_location is not supported; give a device or a dict")
    if isinstance(map_location, dict):
        return map_location.get(location, location)
    return str(map_location)


def _make(shape, dtype, location, requires_grad, map_location):
    """A host tensor of the saved shape and dtype, moved where it belongs (a copy to the device)."""
    torch = _torch()
    out = torch.empty(*shape, dtype=dtype, device="cpu")
    device = _map_device(location, map_location)
    if device.startswith("cuda"):
        out = out.to(device)
    elif device not in ("cpu", "meta"):
        raise RuntimeError(f"torch.load: don't know how to restore data location {device!r}")
    elif device == "meta":
        out = torch.empty(*shape, dtype=dtype, device="meta")
    if requires_grad and (out.is_floating_point() or out.is_complex()):
        out.requires_grad_(True)
    return out


def _dtype(name):
    torch = _torch()
    return getattr(torch, name.removeprefix("torch."))


class _SyntorchLoader(pickle.Unpickler):
    def __init__(self, file, map_location):
        super().__init__(file)
        self.map_location = map_location

    def find_class(self, module, name):
        if module == __name__ and name == "_alias":
            return _alias
        if module == __name__ and name == "_saved_tensor":
            map_location = self.map_location

            def make(shape, dtype, device, requires_grad, data=None):
                out = _make(shape, _dtype(dtype), device, requires_grad, map_location)
                if data is not None:  # saved in the functional mode: its value, where the mode is on now
                    from syntorch import _functional
                    _functional.attach_bytes(out, data)
                return out
            return make
        return super().find_class(module, name)


# Real PyTorch checkpoints: storages by their pickled class names.
_STORAGE_DTYPES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
                   "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
                   "CharStorage": "int8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
                   "ComplexDoubleStorage": "complex128", "ByteStorage": "uint8", "ShortStorage": "int16"}


class _StorageRef:
    def __init__(self, dtype, location):
        self.dtype, self.location = dtype, location


class _PyTorchLoader(pickle.Unpickler):
    """A real checkpoint's data.pkl: its storages become references (their data is not read) and
    each tensor a syntorch tensor of its size and dtype."""

    def __init__(self, file, map_location):
        super().__init__(file)
        self.map_location = map_location

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"torch.load: unknown persistent id {pid!r}")
        storage_type, location = pid[1], pid[3]
        name = storage_type if isinstance(storage_type, str) else getattr(storage_type, "name", "")
        if name not in _STORAGE_DTYPES:
            raise pickle.UnpicklingError(f"torch.load: unknown storage type {name!r}")
        return _StorageRef(_STORAGE_DTYPES[name], location)

    def find_class(self, module, name):
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            def rebuild(storage, offset, size, stride, requires_grad=False, *rest):
                torch = _torch()
                if not hasattr(torch, storage.dtype):
                    raise NotImplementedError(f"torch.load: tensors of dtype {storage.dtype} are not supported")
                return _make(list(size), getattr(torch, storage.dtype), storage.location, requires_grad,
                             self.map_location)
            return rebuild
        if module == "torch._utils" and name == "_rebuild_parameter":
            def parameter(data, requires_grad, backward_hooks, *rest):
                if requires_grad and data.is_floating_point():
                    data.requires_grad_(True)
                return data
            return parameter
        if module == "torch" and name.endswith("Storage"):
            return _StorageName(name)
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module.startswith("torch"):
            obj = _torch()
            for part in (module.split(".")[1:] + [name]):
                obj = getattr(obj, part)
            return obj
        return super().find_class(module, name)


class _StorageName(str):
    @property
    def name(self):
        return str(self)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Reads a checkpoint written by torch.save (syntorch's or PyTorch's): its tensors are made on
    the device each was saved from, or where map_location (a device, or a dict of locations) says,
    with a host-to-device copy each."""
    import syntorch
    syntorch.current_session()
    opened = isinstance(f, (str, os.PathLike))
    data = open(f, "rb").read() if opened else f.read()
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise RuntimeError(f"torch.load: {f if opened else 'the file'} is not a zip checkpoint (PyTorch's legacy "
                           "format before 1.6 is not supported)")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = z.namelist()
        if "syntorch/format" in names:
            return _SyntorchLoader(io.BytesIO(z.read("syntorch/data.pkl")), map_location).load()
        pkl = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if not pkl:
            raise RuntimeError(f"torch.load: {f if opened else 'the file'} has no data.pkl: not a PyTorch checkpoint")
        out = _PyTorchLoader(io.BytesIO(z.read(pkl[0])), map_location).load()
    from syntorch import _functional
    if _functional.enabled():  # the checkpoint's values, read by PyTorch itself
        _functional.attach_loaded(out, data)
    return out
