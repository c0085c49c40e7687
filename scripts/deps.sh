#!/usr/bin/env bash
# Install the Debian 12 packages gidpolicy needs, skipping those already present.
# Not rdma-core: it drags in udev/systemd upgrades; ibverbs-utils + libibverbs-dev suffice.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev libc++-dev libc++abi-dev
          libibverbs-dev ibverbs-utils libboost-dev libgtest-dev libgmock-dev librapidcheck-dev
          nlohmann-json3-dev libcli11-dev libfmt-dev libbenchmark-dev iproute2 procps
          clang-format clang-tidy cppcheck perftest openmpi-bin libfabric-bin ucx-utils libopenmpi-dev
          librdmacm-dev rdmacm-utils debhelper devscripts lintian dh-python
          pybind11-dev python3-dev python3-pytest python3-venv python3-pip
          python3-jsonschema
          emscripten chromium chromium-driver python3-selenium
          dash busybox slurmctld slurmd slurm-client munge)
# (clang-format, clang-tidy and cppcheck are tools beyond the brief's library list: scripts/lint
# needs them, and scripts/test runs its format + cppcheck gate. perftest: the fake libibverbs'
# acceptance tests run its unmodified ib_send_bw ... ib_atomic_bw on the fake, and compare its own
# GID pick with gidpolicy's auto.)
# (libc++-dev, libc++abi-dev: LLVM's C++ library, the one Apple ships; the `libcxx` preset builds
# the library, C API, CLI and examples against it and runs the examples, see docs/portability.md.)
# (openmpi-bin: `mpirun`, for the fleet test that gathers `gidpolicy show --json` one rank per
# host the way docs/fleet.md tells clusters to; without it that test is skipped, saying why.)
# (libfabric-bin: `fi_info`, which loads libefa and reaches past ibv_context into the provider's
# verbs_context; a fake libibverbs test runs it to show the fake's context layout does not crash
# it. Without it that test is not registered. With fi_pingpong, the `middleware` tests run it on
# the example tables under `gidpolicy fake-host`.)
# (ucx-utils: UCX 1.13's ucx_info and ucx_perftest, which the `middleware` tests run unmodified
# under `gidpolicy fake-host` on every Ethernet example table; libopenmpi-dev: mpicc, to build
# those tests' MPI ping-pong, which mpirun then runs over Open MPI's pml ucx. Without them those
# tests skip or are not registered.)
# (librdmacm-dev: rdma/rdma_cma.h, the ABI the drop-in fake librdmacm implements; without it the
# fake is not built. rdmacm-utils: rping, ucmatose, udaddy, cmtime, rdma_server/rdma_client, the
# unmodified rdma_cm programs the fake's tests (label rdmacm) run; without them those tests are
# skipped, saying which program is missing.)
# (debhelper, devscripts, lintian, dh-python: scripts/test-debs, a stage of scripts/test, builds
# the Debian packages of debian/ with dpkg-buildpackage (debhelper's dh, dh-python's dh_python3
# for python3-gidpolicy), checks them with lintian and installs them in a throwaway namespace;
# devscripts holds the dpkg-parsechangelog companions and debuild for building by hand.)
# (pybind11-dev, python3-dev: the Python module gidpolicy (python/), pybind11 bindings over the C++
# API; without them GIDPOLICY_PYTHON is off and configure says why. python3-pytest: its tests
# (label python). python3-venv, python3-pip: the pip install tests install `pip install ./python`
# into a fresh venv, offline; its build backend is the standard library's, so neither setuptools
# nor wheel is needed.)
# (python3-jsonschema: the `json_schemas` test validates every `--json` document the CLI prints
# against schemas/*.schema.json (draft 2020-12, which Debian 12's 4.10 implements); without it
# that test is skipped, saying why.)
# (emscripten: the `wasm` preset, the browser build of the core and the CLI's table subcommands
# into web/gidpolicy.html (docs/web.md); chromium, chromium-driver, python3-selenium: the
# `browser` test opens that page in headless chromium from file:// and compares its answers with
# the CLI's. Without them scripts/test skips the wasm stage and the test skips, saying why.
# --no-install-recommends matters here: with recommends emscripten and chromium pull in about
# 1.4 GB more and upgrade systemd.)
# (slurmctld, slurmd, slurm-client, munge: Slurm 22.05's daemons, srun and sinfo, and the munge
# daemon, for the test probe.mpi_srun, which starts a private single-node Slurm in a temporary
# directory (its own munged key and socket, its own ports) and runs gidpolicy-probe-mpi under
# `srun --mpi=pmix`; the packages' systemd units are never started. Without them it is skipped.)
missing=()
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "gidpolicy: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
