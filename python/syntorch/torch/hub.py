"""torch.hub: where pretrained weights would come from. The simulated run has no network and needs
no weights' values: downloads are refused by name (a model's state dict of the right shapes comes
from the model itself, or from torch.load of a local checkpoint)."""

import os

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.hub")

_dir = [os.path.join(os.path.expanduser("~"), ".cache", "torch", "hub")]


def get_dir():
    return _dir[0]


def set_dir(d):
    _dir[0] = str(d)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    raise NotImplementedError(f"torch.hub.load_state_dict_from_url({url!r}): downloading weights is not supported "
                              "(the simulator needs their shapes only: use the model's own state_dict)")


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    raise NotImplementedError(f"torch.hub.download_url_to_file({url!r}): downloads are not supported")


def load(repo_or_dir, model, *args, **kwargs):
    raise NotImplementedError(f"torch.hub.load({repo_or_dir!r}, {model!r}): loading hub models is not supported")
