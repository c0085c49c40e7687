#!/usr/bin/env bash
# The `cli` preset (CMakePresets.json, README's Install) builds the gidpolicy tool without the test
# frameworks: configured and built with GoogleTest, GoogleMock, rapidcheck and Google Benchmark
# out of sight, and the tool it builds answers as this tree's does.
#
# Out of sight: in a private mount namespace (unshare -m, as root), every file of their Debian
# packages is hidden (their own directories under tmpfs, other files under /dev/null), so neither
# find_package nor an #include of their headers can reach them; CMake is also told
# CMAKE_DISABLE_FIND_PACKAGE_<name>. Without a namespace (not root) only the latter holds, and the
# test says so.
#
# Usage: cli_preset.sh <source tree> <this tree's gidpolicy> <example table>
# The preset's configuration is used as is, but for the build type: an unoptimised build
# (CMAKE_BUILD_TYPE=Debug without -g) compiles the same sources in half the time, and the claim
# under test is about packages, not flags. The build goes to a temporary directory.
set -euo pipefail
src=$1 cli=$2 table=$3
hidden_pkgs=(libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev)

if [[ ${GIDPOLICY_CLI_PRESET_INSIDE:-} != 1 ]]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/gidpolicy-cli-preset.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  export GIDPOLICY_CLI_PRESET_WORK=$work
  if [[ $(id -u) -eq 0 ]] && unshare -m --propagation private true 2>/dev/null; then
    GIDPOLICY_CLI_PRESET_INSIDE=1 GIDPOLICY_CLI_PRESET_HIDE=1 unshare -m --propagation private bash "$0" "$@"
  else
    echo "cli_preset: no private mount namespace (not root): the packages stay installed, CMake is told not to find them"
    GIDPOLICY_CLI_PRESET_INSIDE=1 bash "$0" "$@"
  fi
  exit
fi

work=$GIDPOLICY_CLI_PRESET_WORK
fail() { echo "FAIL: $*" >&2; exit 1; }

if [[ ${GIDPOLICY_CLI_PRESET_HIDE:-} == 1 ]]; then
  installed=()
  for pkg in "${hidden_pkgs[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ $status == 'install ok installed' ]]; then installed+=("$pkg"); fi
  done
  ((${#installed[@]})) || fail "none of ${hidden_pkgs[*]} is installed: nothing to hide"
  paths=$(dpkg-query -L "${installed[@]}" | grep '^/usr/.' | sort -u)
  dirs=() files=()
  while IFS= read -r path; do
    if [[ -d $path && ! -L $path ]]; then
      dirs+=("$path")
    elif [[ -f $path && -s $path ]]; then
      files+=("$path")
    fi
  done <<<"$paths"
  # A directory is theirs when no other package's file list names it (one pass over dpkg's lists).
  declare -A theirs=()
  for pkg in "${hidden_pkgs[@]}"; do theirs[$pkg]=1; done
  others=()
  for list in /var/lib/dpkg/info/*.list; do
    name=${list##*/}
    name=${name%.list}
    if [[ -z ${theirs[${name%%:*}]:-} ]]; then others+=("$list"); fi
  done
  shared=$(awk 'NR == FNR { mine[$0] = 1; next } ($0 in mine) { print }' <(printf '%s\n' "${dirs[@]}") "${others[@]}" |
    sort -u)
  declare -A is_shared=()
  while IFS= read -r d; do if [[ -n $d ]]; then is_shared[$d]=1; fi; done <<<"$shared"
  count=0 hidden_dirs=()
  for d in "${dirs[@]}"; do
    if [[ -n ${is_shared[$d]:-} ]]; then continue; fi
    # Only the outermost: a directory under one already hidden is gone with it.
    covered=0
    for o in "${hidden_dirs[@]}"; do if [[ $d == "$o"/* ]]; then covered=1; fi; done
    if ((!covered)); then
      mount -t tmpfs tmpfs "$d"
      hidden_dirs+=("$d")
      count=$((count + 1))
    fi
  done
  for f in "${files[@]}"; do
    if [[ -s $f ]]; then
      mount --bind /dev/null "$f"
      count=$((count + 1))
    fi
  done
  for probe in /usr/include/gtest/gtest.h /usr/include/gmock/gmock.h /usr/include/rapidcheck.h \
    /usr/include/benchmark/benchmark.h; do
    [[ ! -s $probe ]] || fail "$probe is still readable in the namespace"
  done
  echo "cli_preset: $count directories and files of ${hidden_pkgs[*]} hidden"
fi

disable=(-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_GMock=ON
  -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON)
cmake -S "$src" --preset cli -B "$work/build" "${disable[@]}" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g0 -DCMAKE_C_FLAGS_DEBUG=-g0 >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "cmake --preset cli failed"; }
# Nothing that needs the frameworks is generated: no test programs, no benchmarks.
targets=$(ninja -C "$work/build" -t targets all | sed 's/:.*//')
stray=$(grep -E '(^|/)(gidpolicy_unit_tests|gidpolicy_property_tests|bench_[a-z_]+|[a-z_]*_fuzz)$' <<<"$targets" || true)
[[ -z $stray ]] || fail "the cli preset generates test or benchmark targets: $stray"
grep -qE '(^|/)gidpolicy$' <<<"$targets" || fail "the cli preset generates no gidpolicy program"

cmake --build "$work/build" --target gidpolicy_cli -- -j"${CMAKE_BUILD_PARALLEL_LEVEL:-2}" >"$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; fail "building gidpolicy_cli with the cli preset failed"; }
built=$(find "$work/build/tools" -type f -name gidpolicy -perm -u+x | head -n 1)
[[ -n $built ]] || fail "no gidpolicy program in the cli build"

# The tool it built answers as this tree's does.
[[ $("$built" --version) == "$("$cli" --version)" ]] || fail "--version differs"
rc=0 want_rc=0
got=$("$built" check --input "$table" 2>&1) || rc=$?
want=$("$cli" check --input "$table" 2>&1) || want_rc=$?
[[ $want_rc == 0 && -n $want ]] || fail "this tree's gidpolicy check --input $table: exit $want_rc: $want"
[[ $rc == "$want_rc" && $got == "$want" ]] ||
  fail "check $table: the cli build printed (exit $rc):
$got
this tree's gidpolicy (exit $want_rc):
$want"
echo "cli_preset: the cli preset built $built without ${hidden_pkgs[*]}; check --input $(basename "$table") prints the same $(wc -l <<<"$got") lines"
