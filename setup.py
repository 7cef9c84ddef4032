"""Builds the Python package with CMake: the extension _syntorch is the CMake target of the same
name, built by scripts/build.sh in build/ (the tree the README's commands use, so an install after
a build only links), and the bundled hardware configs travel inside the package as
syntorch/hw_configs. Nothing is downloaded: setuptools, wheel and pip come from Debian."""

import os
import pathlib
import re
import shutil
import subprocess
import sysconfig

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent
BUILD = ROOT / "build"


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(syntorch VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("CMakeLists.txt: no 'project(syntorch VERSION x.y.z' line to take the version from")
    return match.group(1)


class CMakeExtension(Extension):
    """An extension whose sources CMake compiles; setuptools only places the result."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        subprocess.check_call([str(ROOT / "scripts" / "build.sh"), ext.name], cwd=ROOT)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = BUILD / "python" / f"{ext.name}{suffix}"
        if not built.is_file():
            found = sorted(p.name for p in (BUILD / "python").glob(f"{ext.name}*"))
            raise RuntimeError(f"build/python: expected {built.name} for this Python ({suffix}), found "
                               f"{found or 'nothing'}; build/ was configured for another Python: remove "
                               "build/CMakeCache.txt and install again")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)

    def copy_extensions_to_source(self):
        """An editable install: the source tree gets a link to CMake's output, not a copy, so what
        Python imports is what the last build made (a copy would go stale, and shadow build/python
        on the PYTHONPATH the tests use)."""
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace_file, _ = self._get_inplace_equivalent(build_py, ext)
            link = pathlib.Path(inplace_file)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(os.path.relpath(BUILD / "python" / link.name, link.parent))  # the tree may move


class BuildPy(build_py):
    """The package plus the bundled hardware configs, which syntorch.init() uses by default."""

    def run(self):
        super().run()
        out = pathlib.Path(self.build_lib) / "syntorch" / "hw_configs"
        out.mkdir(parents=True, exist_ok=True)
        for config in sorted((ROOT / "hw_configs").glob("*.json")):
            shutil.copyfile(config, out / config.name)


setup(
    version=project_version(),
    package_dir={"": "python"},
    packages=find_packages(where="python"),
    package_data={"syntorch.ir": ["ir-v*.schema.json"]},
    ext_modules=[CMakeExtension("_syntorch")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPy},
    zip_safe=False,
)
