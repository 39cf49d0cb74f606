#!/usr/bin/env bash
# shellcheck disable=SC2317  # the step functions are called through run_step
# GPU check for a machine with an NVIDIA GPU and no network: installs the wheel built on the
# development machine (newest target/wheels/tlrs-*.whl), records versions and CUDA diagnostics,
# runs the CUDA parity tests on the device and the GPU benchmark, and writes a summary.
#
#     OUT=/path/to/empty/dir bash scripts/gpu-check.sh
#
# Every step logs to a file under $OUT (and to stdout) and runs under `timeout`, so one hang
# cannot eat the budget; a failed step does not stop the next one. The whole run stays under
# GPU_CHECK_BUDGET seconds (default 420): each step's limit is cut to what is left. Exit code 0
# only when every step succeeded. Files in $OUT: install.txt, info.txt, pytest-cuda.txt,
# pytest-cuda.xml, nccl.txt, bench.txt, gpu.json, summary.txt.
#
# Needs python3 with NumPy, pytest, typer, rich (PyTorch, cuda-pathfinder and the nvidia CUDA
# library wheels optional); tlrs loads the pip CUDA libraries itself (python/tlrs/cuda.py).
# TLRS_CUDA_EMULATOR is never set here: this checks the real device.
set -u
cd "$(dirname "$0")/.." || exit 2

OUT="${OUT:-}"
if [ -z "$OUT" ]; then
  OUT="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
fi
mkdir -p "$OUT" || exit 2
OUT="$(cd "$OUT" && pwd)"
PY="${PYTHON:-python3}"
BUDGET="${GPU_CHECK_BUDGET:-420}"

export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
unset TLRS_CUDA_EMULATOR

T_START=$(date +%s)
SUMMARY=()
FAILED=0

# Seconds a step may take: its own limit, cut to what is left of the budget (at least 5).
limit() {
  local want=$1 left
  left=$((BUDGET - ($(date +%s) - T_START) - 5))
  if [ "$left" -lt "$want" ]; then want=$left; fi
  if [ "$want" -lt 5 ]; then want=5; fi
  echo "$want"
}

# run_step NAME LOG FUNCTION...: runs FUNCTION with stdout and stderr going to $OUT/LOG and to
# stdout; records its exit code and duration.
run_step() {
  local name=$1 log=$2 t0 t1 rc
  shift 2
  echo
  echo "=== $name ($(date -u +%H:%M:%S), log: $OUT/$log)"
  t0=$(date +%s)
  "$@" 2>&1 | tee "$OUT/$log"
  rc=${PIPESTATUS[0]}
  t1=$(date +%s)
  if [ "$rc" -ne 0 ]; then FAILED=1; fi
  SUMMARY+=("$(printf '%-8s rc=%-3s %4ss  %s' "$name" "$rc" "$((t1 - t0))" "$log")")
  echo "=== $name: exit $rc after $((t1 - t0)) s"
}

# Step 1: install the newest wheel without network; fall back to unpacking it onto PYTHONPATH
# when pip cannot install it (the step still counts as failed then).
WHEEL=""
for w in target/wheels/tlrs-*.whl; do
  [ -e "$w" ] || continue
  if [ -z "$WHEEL" ] || [ "$w" -nt "$WHEEL" ]; then WHEEL=$w; fi
done
UNPACKED="$OUT/.tlrs-wheel"

install_step() {
  if [ -z "$WHEEL" ]; then
    echo "no wheel: target/wheels/tlrs-*.whl matches nothing (build it with maturin build --release)"
    echo "tests and benchmark use whatever tlrs $PY imports"
    return 1
  fi
  echo "wheel: $WHEEL"
  local t rc
  t=$(limit 60)
  timeout -k 5 "$t" "$PY" -m pip install --no-deps --no-index --force-reinstall "$WHEEL"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "pip install failed (exit $rc); retrying with --user --break-system-packages"
    t=$(limit 60)
    timeout -k 5 "$t" "$PY" -m pip install --no-deps --no-index --force-reinstall --user \
      --break-system-packages "$WHEEL"
    rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    echo "pip install failed again (exit $rc); unpacking the wheel to $UNPACKED for PYTHONPATH"
    rm -rf "$UNPACKED"
    timeout -k 5 "$(limit 60)" "$PY" -m zipfile -e "$WHEEL" "$UNPACKED" || echo "unpacking failed too"
  fi
  echo "--- pip list | grep tlrs"
  timeout -k 5 "$(limit 60)" "$PY" -m pip list 2>/dev/null | grep -i '^tlrs ' || echo "(tlrs not in pip list)"
  return "$rc"
}
run_step install install.txt install_step
if [ -d "$UNPACKED/tlrs" ]; then
  export PYTHONPATH="$UNPACKED${PYTHONPATH:+:$PYTHONPATH}"
  echo "PYTHONPATH=$PYTHONPATH"
fi

# Step 2: machine, versions, `tlrs info` and the CUDA diagnostics (exit code: tlrs info's).
info_step() {
  echo "--- nvidia-smi"
  if command -v nvidia-smi > /dev/null 2>&1; then
    timeout -k 5 "$(limit 20)" nvidia-smi || echo "(nvidia-smi failed: exit $?)"
  else
    echo "(nvidia-smi not found)"
  fi
  echo "--- versions"
  timeout -k 5 "$(limit 30)" "$PY" -c '
import platform, sys
print("python", sys.version.split()[0], platform.platform())
for name in ("numpy", "pytest", "typer", "rich", "cuda.pathfinder", "tlrs"):
    try:
        m = __import__(name, fromlist=["_"])
        print(name, getattr(m, "__version__", "?"), getattr(m, "__file__", ""))
    except Exception as e:
        print(name, "NOT IMPORTABLE:", type(e).__name__, e)
' || echo "(version check failed: exit $?)"
  timeout -k 5 "$(limit 60)" "$PY" -c '
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
except Exception as e:
    print("torch NOT USABLE:", type(e).__name__, e)
' || echo "(torch check failed: exit $?)"
  echo "--- tlrs.cuda.diagnostics()"
  timeout -k 5 "$(limit 60)" "$PY" -c '
import tlrs.cuda as c
d = c.diagnostics()
print(d)
for k, v in d.items():
    print(f"  {k}: {v}")
print("is_available:", c.is_available())
' || echo "(diagnostics failed: exit $?)"
  local rc script
  # The console script installed next to $PY, else one on PATH, else the module.
  script="$(dirname "$(command -v "$PY" || echo "$PY")")/tlrs"
  if [ ! -x "$script" ]; then script="$(command -v tlrs || true)"; fi
  if [ -n "$script" ]; then
    echo "--- tlrs info ($script)"
    timeout -k 5 "$(limit 60)" "$script" info
    rc=$?
  else
    echo "--- $PY -m tlrs info (no tlrs script on PATH)"
    timeout -k 5 "$(limit 60)" "$PY" -m tlrs info
    rc=$?
  fi
  return "$rc"
}
run_step info info.txt info_step

# Step 3: the CUDA parity tests on the device, DLPack's CUDA round trips (tlrs and PyTorch)
# and NCCL at world size 1 (tests/test_gpu_only.py). A run where every test skipped (no usable
# device) counts as failed here.
pytest_step() {
  local rc
  timeout -k 10 "$(limit 240)" "$PY" -m pytest -m "cuda or gpu" -q -rs -p no:cacheprovider \
    tests/test_cuda_parity.py tests/test_op_table.py tests/test_interop.py tests/test_gpu_only.py \
    --junitxml="$OUT/pytest-cuda.xml"
  rc=$?
  if [ "$rc" -ne 0 ]; then return "$rc"; fi
  "$PY" -c '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
total = sum(int(s.get("tests", 0)) for s in suites)
skipped = sum(int(s.get("skipped", 0)) for s in suites)
print(f"junit: {total} tests, {skipped} skipped")
if total == 0 or skipped == total:
    sys.exit("no CUDA test ran on the device (all skipped or none collected)")
' "$OUT/pytest-cuda.xml"
}
run_step pytest pytest-cuda.txt pytest_step

# Step 4: NCCL at world size 1 with NCCL's own log, tlrs and PyTorch (the control) side by side.
nccl_step() {
  timeout -k 10 "$(limit 120)" "$PY" scripts/nccl-check.py
}
run_step nccl nccl.txt nccl_step

# Step 5: the GPU benchmark (writes $OUT/gpu.json after every row). It exits 0 whatever it
# measured, so the step fails here when tlrs had no CUDA device or a tlrs measurement raised
# (a torch failure is only a warning).
bench_step() {
  local rc
  local t; t=$(limit 180); timeout -k 10 "$t" "$PY" benchmarks/gpu.py --out "$OUT" --time-limit $((t * 3 / 4))
  rc=$?
  if [ "$rc" -ne 0 ]; then return "$rc"; fi
  "$PY" -c '
import json, sys
doc = json.load(open(sys.argv[1]))
if not doc.get("available"):
    sys.exit("gpu.json: tlrs could not use CUDA")
torch_only = [e for e in doc.get("errors", []) if e not in doc.get("tlrs_errors", [])]
if torch_only:
    print("warning: %d torch measurement(s) failed: %s" % (len(torch_only), "; ".join(torch_only)))
if doc.get("tlrs_errors"):
    sys.exit("gpu.json: %d tlrs measurement(s) failed: %s" % (len(doc["tlrs_errors"]), "; ".join(doc["tlrs_errors"])))
' "$OUT/gpu.json"
}
run_step bench bench.txt bench_step

# Step 6: the summary.
{
  echo "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname 2>/dev/null || echo '?')"
  echo "wheel: ${WHEEL:-none}"
  printf '%s\n' "${SUMMARY[@]}"
  echo "total: $(($(date +%s) - T_START)) s"
  if [ "$FAILED" -ne 0 ]; then echo "result: FAILED"; else echo "result: OK"; fi
} > "$OUT/summary.txt"
echo
echo "=== summary ($OUT/summary.txt)"
cat "$OUT/summary.txt"
rm -rf "$UNPACKED"
exit "$FAILED"
