"""Builds unimem's Python package with CMake (python/CMakeLists.txt) and the GPU compiler CMake
finds: nvcc for CUDA, hipcc for ROCm (CXX=hipcc HIP_PLATFORM=amd in the environment). pip runs
it: pip install --no-build-isolation ./python (from a checkout: the headers come from ../include).

The environment passes the rest:
  UNIMEM_CMAKE_ARGS        more CMake options, e.g. "-DUNIMEM_CUDA_ARCHITECTURES=90"
                           or "-DUNIMEM_HIP_ARCHITECTURES=gfx90a;gfx942" (split as a shell does)
  UNIMEM_CMAKE_ARGS_FILE   a file of more CMake options, one a line, taken as written
  UNIMEM_PYTHON_BUILD_DIR  where the build goes (default python/build)
  CMAKE_BUILD_PARALLEL_LEVEL  parallel compile jobs (default: every core)
pybind11 (for unimem.Buffer) is taken from pip's pybind11, CMake's pybind11 package (Debian:
pybind11-dev) or torch's headers, in that order; without it, or without Python's headers, the
allocator is built alone (unimem.torch and unimem.cupy work, unimem.Buffer says why it cannot).
"""
import importlib.util
import os
import re
import shlex
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "include", "unimem", "core", "version.hpp")) as f:
        return re.search(r'#define UNIMEM_VERSION_STRING "([0-9.]+)"', f.read()).group(1)


def build_base():
    base = os.environ.get("UNIMEM_PYTHON_BUILD_DIR") or os.path.join(HERE, "build")
    os.makedirs(base, exist_ok=True)
    return os.path.abspath(base)


def pybind11_hints():
    """Folders that may hold pybind11/pybind11.h, for CMake to try after its own package."""
    hints = []
    try:
        import pybind11
        hints.append(pybind11.get_include())
    except ImportError:
        pass
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        hints.append(os.path.join(os.path.dirname(spec.origin), "include"))
    return hints


class BinaryDistribution(Distribution):
    """A wheel for this platform: the package holds compiled libraries."""

    def has_ext_modules(self):
        return True


class build_py_and_cmake(build_py):
    """The Python files, then CMake's build of the libraries into the same package folder."""

    def run(self):
        super().run()
        package = os.path.join(os.path.abspath(self.build_lib), "unimem")
        cmake_dir = os.path.join(build_base(), "cmake")
        configure = ["cmake", "-S", HERE, "-B", cmake_dir, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython3_EXECUTABLE={sys.executable}",
                     f"-DUNIMEM_PYTHON_PACKAGE_DIR={package}"]
        hints = pybind11_hints()
        if hints:
            configure.append("-DUNIMEM_PYBIND11_HINTS=" + ";".join(hints))
        configure += shlex.split(os.environ.get("UNIMEM_CMAKE_ARGS", ""))
        if os.environ.get("UNIMEM_CMAKE_ARGS_FILE"):
            with open(os.environ["UNIMEM_CMAKE_ARGS_FILE"]) as f:
                configure += [line.rstrip("\n") for line in f if line.strip()]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        try:
            subprocess.check_call(configure)
            subprocess.check_call(["cmake", "--build", cmake_dir, "--parallel", jobs])
        except FileNotFoundError as e:
            raise SystemExit("unimem: building the package needs CMake 3.21 or later on PATH") \
                from e


setup(
    version=version(),
    packages=["unimem"],
    distclass=BinaryDistribution,
    cmdclass={"build_py": build_py_and_cmake},
    options={"build": {"build_base": build_base()}, "egg_info": {"egg_base": build_base()}},
    zip_safe=False,
)
