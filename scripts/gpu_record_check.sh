#!/bin/sh
# gpu_record_check.sh: record a small CUDA program on a machine with an NVIDIA GPU and check that
# regcheck judges its trace to conform (docs/recording.md, "What was tested").
#
#   sh scripts/gpu_record_check.sh                 # the check; "skipped: no GPU" (exit 0) without one
#   sh scripts/gpu_record_check.sh --build-only DIR  # only build the program into DIR (no GPU needed)
#
# The program is tests/fixtures/record/real_cuda_app.c: host code only (no kernel), so no GPU
# compiler is needed. It page-locks a heap block as Mapped, gets its device pointer, copies a
# page from device memory into it, unregisters and frees it, and allocates and frees pinned
# memory (cudaHostAlloc Mapped, cudaMallocHost) and device memory. It is built with nvcc
# (`-cudart shared`: LD_PRELOAD cannot see the static runtime nvcc links by default) when nvcc is
# on PATH (or $NVCC names it), else with the C compiler ($CC, default cc) against the
# nvidia-cuda-runtime-cu12 wheel's libcudart.so.12.
# Exit status: 0 when the program ran without a CUDA error and the trace conforms (or skipped),
# 1 when not, 2 when the program cannot be built. PYTHON names the interpreter that has regcheck
# installed (default python3). It takes a few seconds; the GPU run itself well under a minute.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
fixtures="$root/tests/fixtures/record"
python=${PYTHON:-python3}
build_only=0
if [ "${1:-}" = "--build-only" ]; then
    build_only=1
    out=${2:?"usage: $0 --build-only DIR"}
    mkdir -p "$out"
fi

gpu_present() {
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        return 0
    fi
    [ -e /dev/nvidia0 ]
}

if [ "$build_only" = 0 ]; then
    if ! gpu_present; then
        echo "skipped: no GPU (nvidia-smi lists none and there is no /dev/nvidia0)"
        exit 0
    fi
    out=$(mktemp -d "${TMPDIR:-/tmp}/regcheck-gpu.XXXXXX")
    trap 'rm -rf "$out"' EXIT
fi
app="$out/real_cuda_app"

nvcc=${NVCC-nvcc} # NVCC= (empty) builds with the wheel even where nvcc is installed
if [ -n "$nvcc" ] && command -v "$nvcc" >/dev/null 2>&1; then
    "$nvcc" -cudart shared -DREGCHECK_REAL_CUDA_HEADER -I"$fixtures" -o "$app" "$fixtures/real_cuda_app.c" || exit 2
    echo "built $app with nvcc -cudart shared"
else
    wheel=$("$python" -c 'import importlib.util as u; s = u.find_spec("nvidia.cuda_runtime"); print(next(iter(s.submodule_search_locations)) if s else "")' 2>/dev/null || true)
    if [ -z "$wheel" ] || [ ! -f "$wheel/lib/libcudart.so.12" ]; then
        echo "cannot build: neither nvcc nor the nvidia-cuda-runtime-cu12 wheel (pip install nvidia-cuda-runtime-cu12)" >&2
        exit 2
    fi
    nvcc_include=$("$python" -c 'import importlib.util as u; s = u.find_spec("nvidia.cuda_nvcc"); print(next(iter(s.submodule_search_locations)) + "/include" if s else "")' 2>/dev/null || true)
    # The wheel's cuda_runtime_api.h includes crt/host_defines.h, which ships with nvcc (the
    # nvidia-cuda-nvcc-cu12 wheel), not with the runtime; without it, the documented prototypes.
    header="the documented prototypes (no crt/host_defines.h of the same release for the real header)"
    flags=""
    if [ -n "$nvcc_include" ] && [ -f "$nvcc_include/crt/host_defines.h" ]; then
        flags="-DREGCHECK_REAL_CUDA_HEADER -I$wheel/include -I$nvcc_include"
        header="the real cuda_runtime_api.h"
    fi
    # shellcheck disable=SC2086 # flags is a word list
    ${CC:-cc} -O0 -Wall $flags -I"$fixtures" -o "$app" "$fixtures/real_cuda_app.c" \
        -L"$wheel/lib" -l:libcudart.so.12 -Wl,-rpath,"$wheel/lib" || exit 2
    echo "built $app against $wheel/lib/libcudart.so.12 and $header"
fi
[ "$build_only" = 1 ] && exit 0

trace="$out/trace.jsonl"
status=0
"$python" -m checker.cli record --spec cuda -o "$trace" -- "$app" || status=$?
"$python" -m checker.cli replay "$trace" || true
verdict=$("$python" -m checker.cli replay --format json "$trace" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["verdict"])')
if [ "$status" = 0 ] && [ "$verdict" = conforms ]; then
    echo "ok: the program ran without a CUDA error and its trace conforms"
    exit 0
fi
echo "FAILED: the program exited with status $status (1: a CUDA call failed, see its output above); verdict: $verdict"
exit 1
