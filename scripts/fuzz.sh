#!/usr/bin/env bash
# Runs libFuzzer targets built from tests/fuzz and prints, per target, what libFuzzer's final lines
# say: executions, executions per second, coverage (cov: edges, ft: features) and crashes.
#   scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]     (every target in BUILD_DIR when none is named)
# Each target runs on a scratch copy of tests/fuzz/corpus/TARGET, so the committed seeds never
# change; what a run finds that is new stays in BUILD_DIR/fuzz-work/TARGET/corpus. A crash is
# written to BUILD_DIR/fuzz-work/TARGET/crash-<sha1> (libFuzzer's name) and fails the script.
set -uo pipefail
build=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
seeds=$root/tests/fuzz/corpus
if [ $# -eq 0 ]; then
    set -- $(ls "$seeds")
fi
failed=0
printf '%-16s %12s %9s %7s %7s %8s\n' target execs exec/s cov ft crashes
for target in "$@"; do
    exe=$build/$target
    work=$build/fuzz-work/$target
    if [ ! -x "$exe" ]; then
        echo "$target: no fuzz binary at $exe (is clang-14 installed? scripts/deps.sh installs it)" >&2
        failed=1
        continue
    fi
    rm -rf "$work" && mkdir -p "$work/corpus" && cp "$seeds/$target"/* "$work/corpus/"
    # -rss_limit_mb: ASan's shadow memory counts against it; 2 GB leaves room for the parsers' limits.
    "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
    rc=$?
    crashes=$(ls "$work" | grep -cE '^(crash|leak|timeout|oom)-' || true)
    # libFuzzer ends with "#N DONE cov: C ft: F ... exec/s: E"; before a crash, its last status line.
    status=$(grep -E '^#[0-9]+' "$work/log" | tail -1)
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$work/log" | tail -1)
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$work/log" | tail -1)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$status")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$status")
    printf '%-16s %12s %9s %7s %7s %8s\n' "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$crashes"
    if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
        echo "$target failed (exit $rc); its log: $work/log" >&2
        grep -E 'ERROR|invariant|SUMMARY|Test unit written' "$work/log" | head -5 >&2
        failed=1
    fi
done
exit $failed
