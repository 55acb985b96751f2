# Spack recipe for unimem: portable GPU unified (managed) memory for HIP (AMD) and CUDA.
# unimem is header-only; "building" it configures the backend, installs the headers and the
# CMake package configuration (share/cmake/unimem), and, with `spack install --test=root`,
# builds and runs unimem's own tests. See packaging/spack/README.md (how to use it, what each
# variant maps to, and what has NOT been verified: this recipe has not been run by Spack yet).
#
# SPDX-License-Identifier: MIT

import os
import re

from spack.package import *  # noqa: F401,F403

try:
    # Spack >= 1.0: the build-system classes live in Spack's builtin package repository
    # (Package API v2); spack.package no longer exports them.
    from spack_repo.builtin.build_systems.cmake import CMakePackage
    from spack_repo.builtin.build_systems.cuda import CudaPackage
    from spack_repo.builtin.build_systems.rocm import ROCmPackage
except ImportError:
    # Spack 0.23.x: `from spack.package import *` above already provided them.
    pass

#: FILL IN before use. unimem has no public release URL yet: set this to the git repository
#: that holds unimem. A local clone works, e.g. "file:///home/me/src/unimem". The value below
#: is a placeholder on purpose: fetching fails until it is replaced.
UNIMEM_GIT = "file:///FILL-IN/path/to/unimem"

#: The consumer project of the stand-alone test: what README.md shows users, built against the
#: installed package (find_package, not add_subdirectory), with examples/vector_add.cpp.
SMOKE_CMAKELISTS = """\
cmake_minimum_required(VERSION 3.21)
project(unimem_spack_smoke_test LANGUAGES CXX)
find_package(unimem CONFIG REQUIRED)
message(STATUS "unimem_spack_smoke_test: unimem ${unimem_VERSION} from ${unimem_DIR}")
add_executable(vector_add "${UNIMEM_SMOKE_SOURCE}")
target_link_libraries(vector_add PRIVATE unimem::unimem)
unimem_gpu_target(vector_add)
if(UNIMEM_SMOKE_REQUIRE_MPI AND NOT TARGET unimem::mpi)
  message(FATAL_ERROR "unimem_spack_smoke_test: +mpi, but find_package(unimem) made no "
                      "unimem::mpi (cmake/unimem-mpi.cmake found no MPI)")
endif()
"""


class Unimem(CMakePackage, CudaPackage, ROCmPackage):
    """Portable, fast GPU unified memory for HIP (AMD and NVIDIA) and CUDA: a header-only
    C++17 library whose one source compiles with hipcc (AMD ROCm), HIP_PLATFORM=nvidia hipcc,
    and nvcc."""

    # FILL IN: a homepage once there is a public one (Spack's audit asks for it).
    git = UNIMEM_GIT

    license("MIT")

    # FILL IN: no tag v0.3.0 exists yet. Create it (or replace tag= by commit="<sha>" of the
    # 0.3.0 release) before installing @0.3.0. Version 0.3.0 is CMakeLists.txt's
    # project(VERSION) and include/unimem/core/version.hpp's UNIMEM_VERSION_STRING.
    version("main", branch="main")
    version("0.3.0", tag="v0.3.0")

    variant(
        "mpi",
        default=False,
        description="Depend on MPI and configure unimem::mpi (<unimem/mpi.hpp>): UNIMEM_MPI",
    )

    # Exactly one GPU backend. +cuda: native CUDA (nvcc, CMake's CUDA language).
    # +rocm: HIP for AMD GPUs (hipcc as the C++ compiler).
    conflicts("~cuda ~rocm", msg="unimem needs a GPU backend: add +cuda or +rocm")
    conflicts("+cuda +rocm", msg="unimem builds for one backend at a time: +cuda or +rocm")

    # CMakeLists.txt: cmake_minimum_required(VERSION 3.21) (also CMakePresets.json's minimum).
    depends_on("cmake@3.21:", type="build")
    depends_on("cxx", type="build")

    # +cuda: the cuda dependency comes from CudaPackage. +rocm: the HIP runtime, its headers and
    # hipcc (ROCmPackage adds the HIP compiler itself). HIP 5.2 is the oldest unimem is tested
    # with (Debian 12, docs/building.md).
    depends_on("hip@5.2:", when="+rocm")
    depends_on("mpi", when="+mpi")

    # unimem's tests (spack install --test=root) use GoogleTest: find_package(GTest REQUIRED).
    depends_on("googletest", type="test")

    # What a good install leaves behind: the headers and the CMake package configuration
    # (CMakeLists.txt installs include/unimem and UNIMEM_INSTALL_CMAKEDIR, share/cmake/unimem).
    sanity_check_is_file = [
        join_path("include", "unimem", "core", "version.hpp"),
        join_path("share", "cmake", "unimem", "unimem-config.cmake"),
    ]

    # The stand-alone test compiles a program against the installed package.
    test_requires_compiler = True

    # ---- GPU targets ----

    def _cuda_archs(self):
        """cuda_arch values, oldest first: unimem embeds PTX for the last one (HIP on NVIDIA,
        cmake/unimem-backend.cmake), so the newest architecture must come last. Empty when
        cuda_arch is unset (unimem then uses this machine's GPUs, else 80;90)."""
        if "cuda_arch" not in self.spec.variants:
            return []
        archs = [a for a in self.spec.variants["cuda_arch"].value if a != "none"]

        def key(arch):
            m = re.match(r"(\d+)(.*)", arch)
            return (int(m.group(1)), m.group(2)) if m else (0, arch)

        return sorted(archs, key=key)

    def _amdgpu_targets(self):
        """amdgpu_target values as given, feature suffixes intact (gfx90a:xnack+ stays
        gfx90a:xnack+: unimem passes each as --offload-arch=<target>)."""
        if "amdgpu_target" not in self.spec.variants:
            return []
        return [t for t in self.spec.variants["amdgpu_target"].value if t != "none"]

    def _hipcc(self):
        hip = self.spec["hip"]
        return getattr(hip, "hipcc", None) or join_path(hip.prefix.bin, "hipcc")

    def _backend_args(self):
        """The CMake variables that pick unimem's backend, compilers and GPU targets. The same
        ones configure the install and the stand-alone test's consumer project, since unimem's
        package configuration detects the backend again in every consumer's configure step."""
        spec = self.spec
        args = []
        if spec.satisfies("+cuda"):
            args.append(self.define("UNIMEM_BACKEND", "CUDA"))
            args.append(self.define("CMAKE_CUDA_COMPILER", spec["cuda"].prefix.bin.nvcc))
            host_cxx = os.environ.get("CXX")
            if host_cxx:  # nvcc's host compiler: the spec's C++ compiler, not the first on PATH
                args.append(self.define("CMAKE_CUDA_HOST_COMPILER", host_cxx))
            archs = self._cuda_archs()
            if archs:
                args.append(self.define("UNIMEM_CUDA_ARCHITECTURES", archs))
        elif spec.satisfies("+rocm"):
            # CXX=hipcc: unimem's first-class AMD toolchain (CMakePresets.json's hip-amd*);
            # cmake/unimem-backend.cmake recognises hipcc by its file name.
            args.append(self.define("UNIMEM_BACKEND", "HIP"))
            args.append(self.define("CMAKE_CXX_COMPILER", self._hipcc()))
            # Where hip/hip_runtime_api.h is; else unimem looks in $HIP_PATH, $ROCM_PATH and
            # /opt/rocm (find_path(UNIMEM_HIP_INCLUDE_DIR ...)).
            args.append(f"-DUNIMEM_HIP_INCLUDE_DIR:PATH={spec['hip'].prefix.include}")
            targets = self._amdgpu_targets()
            if targets:
                args.append(self.define("UNIMEM_HIP_ARCHITECTURES", targets))
        if spec.satisfies("+mpi"):
            args.append(self.define("MPI_HOME", spec["mpi"].prefix))  # FindMPI's hint
        return args

    def setup_build_environment(self, env):
        if self.spec.satisfies("+rocm"):
            # unimem reads HIP_PLATFORM (else `hipconfig --platform`); hip's own environment
            # sets it too, this only makes it explicit.
            env.set("HIP_PLATFORM", "amd")

    def cmake_args(self):
        # unimem's options default to ON when it is the top-level project; a package build
        # wants only the install rules, plus the tests when Spack runs them (--test).
        run_tests = bool(self.run_tests)
        args = [
            self.define("UNIMEM_INSTALL", True),
            self.define("UNIMEM_BUILD_TESTS", run_tests),
            # Some tests run the examples (unimem-info, mpi_jacobi): built with the tests only.
            self.define("UNIMEM_BUILD_EXAMPLES", run_tests),
            self.define("UNIMEM_BUILD_BENCH", False),
            self.define("UNIMEM_WERROR", False),
            self.define_from_variant("UNIMEM_MPI", "mpi"),
        ]
        return args + self._backend_args()

    # ---- stand-alone tests (spack test run unimem) ----

    @run_after("install")
    def cache_test_sources(self):
        """Keep examples/vector_add.cpp for the stand-alone test (examples are not installed)."""
        cache_extra_test_sources(self, [join_path("examples", "vector_add.cpp")])

    def _cmake_exe(self):
        if "cmake" in self.spec:
            return self.spec["cmake"].command
        return which("cmake", required=True)

    def _generator_args(self):
        """The generator and its program from the spec's build dependencies, so that the test
        does not depend on make or ninja being on PATH."""
        spec = self.spec
        if spec.satisfies("generator=ninja") and "ninja" in spec:
            ninja = spec["ninja"].prefix.bin.ninja
            return ["-G", "Ninja", self.define("CMAKE_MAKE_PROGRAM", ninja)]
        if "gmake" in spec:
            return [
                "-G",
                "Unix Makefiles",
                self.define("CMAKE_MAKE_PROGRAM", spec["gmake"].prefix.bin.make),
            ]
        return []

    def test_version_header(self):
        """check that the installed version.hpp names this version"""
        if not re.match(r"^\d+\.\d+\.\d+$", str(self.spec.version)):
            raise SkipTest(f"version {self.spec.version} is a branch, not a release number")
        header = join_path(self.prefix.include, "unimem", "core", "version.hpp")
        with open(header, encoding="utf-8") as f:
            text = f.read()
        expected = f'#define UNIMEM_VERSION_STRING "{self.spec.version}"'
        assert expected in text, f"{header} lacks {expected}"

    def test_vector_add(self):
        """build examples/vector_add.cpp against the installed unimem and run it"""
        cache = self.test_suite.current_test_cache_dir
        source = join_path(cache, "examples", "vector_add.cpp")
        if not os.path.isfile(source):
            raise SkipTest("examples/vector_add.cpp was not cached when unimem was installed")

        work = join_path(cache, "vector_add_consumer")
        build = join_path(work, "build")
        mkdirp(work)
        with open(join_path(work, "CMakeLists.txt"), "w", encoding="utf-8") as f:
            f.write(SMOKE_CMAKELISTS)

        cmake = self._cmake_exe()
        extra_env = {"HIP_PLATFORM": "amd"} if self.spec.satisfies("+rocm") else {}
        configure = [
            "-S",
            work,
            "-B",
            build,
            *self._generator_args(),
            self.define("CMAKE_BUILD_TYPE", "Release"),
            self.define("unimem_DIR", join_path(self.prefix, "share", "cmake", "unimem")),
            self.define("UNIMEM_SMOKE_SOURCE", source),
            self.define("UNIMEM_SMOKE_REQUIRE_MPI", self.spec.satisfies("+mpi")),
            *self._backend_args(),
        ]

        with test_part(
            self,
            "test_vector_add_configure",
            purpose="configure a consumer project with find_package(unimem CONFIG)",
        ):
            cmake(*configure, extra_env=extra_env)

        with test_part(
            self, "test_vector_add_build", purpose="compile vector_add.cpp for the backend"
        ):
            cmake("--build", build, "--verbose", extra_env=extra_env)

        with test_part(
            self,
            "test_vector_add_run",
            purpose="run vector_add on a GPU (skipped where there is none)",
        ):
            program = join_path(build, "vector_add")
            if not os.path.isfile(program):
                raise SkipTest("vector_add was not built (see test_vector_add_build)")
            vector_add = Executable(program)
            out = vector_add(output=str, error=str, fail_on_error=False)
            # examples/vector_add.cpp: exit 2 and "no GPU was found" when device_count() is 0.
            if vector_add.returncode == 2 and "no GPU was found" in out:
                raise SkipTest("no GPU here: vector_add was built but not run")
            assert vector_add.returncode == 0, (
                f"vector_add exited with {vector_add.returncode}:\n{out}"
            )
            check_outputs([r"vector_add: all \d+ elements correct"], out)
