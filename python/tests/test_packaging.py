"""The package installs as a newcomer installs it: pip, offline, with Debian's setuptools, into a
fresh virtual environment, regular and editable; then `import syntorch.torch as torch` works from
any folder with no PYTHONPATH, and the bundled hardware configs come with it."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROGRAM = """
import syntorch, syntorch.torch as torch
x = torch.randn(64, 1024, dtype=torch.float16, device="cuda")
y = x @ torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
torch.cuda.synchronize()
assert tuple(y.shape) == (64, 1024), y.shape
assert syntorch.trace_manager.stats()["kernels"] >= 1
print("imported from", syntorch.__file__)
"""


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SYNTORCH_SOURCE_DIR", "SYNTORCH_HW", "SYNTORCH_API_COVERAGE")}
    env["PIP_NO_INDEX"] = "1"   # offline: nothing may be fetched
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_CACHE_DIR"] = "1"  # nothing written under the user's home
    return env


@pytest.mark.parametrize("editable", [False, True], ids=["regular", "editable"])
def test_pip_installs_the_package_offline_and_it_imports_from_anywhere(tmp_path, editable):
    venv = tmp_path / "venv"
    # Debian's pip and setuptools serve the environment (--system-site-packages), so nothing is fetched.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = clean_env()
    install = [str(python), "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-q"]
    install += ["-e", str(ROOT)] if editable else [str(ROOT)]
    done = subprocess.run(install, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run([str(python), "-c", PROGRAM], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    where = pathlib.Path(run.stdout.split("imported from", 1)[1].strip())
    if editable:
        assert where.is_relative_to(ROOT / "python"), where  # the working tree, so edits show at once
        linked = list((ROOT / "python").glob("_syntorch*"))
        assert linked, "the editable install left no extension in python/"
        for ext in linked:  # CMake's output itself, never a stale copy
            assert ext.is_symlink() and ext.resolve().parent == (ROOT / "build" / "python").resolve(), ext
    else:
        assert where.is_relative_to(venv), where
        assert (where.parent / "hw_configs" / "h100_sxm5_80gb.json").is_file()  # the default machine travels
    show = subprocess.run([str(python), "-m", "pip", "show", "syntorch"], env=env, capture_output=True, text=True)
    assert "License: MIT" in show.stdout, show.stdout
