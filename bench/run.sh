#!/usr/bin/env bash
# Phoenix's benchmarks. Every figure is printed beside a baseline measured in
# the same run, as a ratio; nothing here asserts a time.
#   bench/run.sh            build (if needed) and run every benchmark
#   PHOENIX_BENCH_100K=1 bench/run.sh   also the 100,000-file repository
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
"$here/scripts/deps.sh" >/dev/null
"$here/scripts/build.sh" >/dev/null
phoenix="$build/phoenix"
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

now_ns() { date +%s%N; }

echo "== phoenix sense overhead on a trivial command (true), N=${N:=200}"
cd "$work" && git init -q repo && cd repo
t0=$(now_ns); for _ in $(seq "$N"); do true_bin=$(command -v true); "$true_bin"; done; t1=$(now_ns)
for _ in $(seq "$N"); do "$phoenix" sense --check '{"kind":"command_exit","target":["true"]}' >/dev/null; done; t2=$(now_ns)
direct=$(( (t1 - t0) / N / 1000 )); viaphx=$(( (t2 - t1) / N / 1000 ))
awk -v d="$direct" -v p="$viaphx" 'BEGIN { printf "direct: %d us/run   phoenix sense: %d us/run   ratio: %.1fx   overhead: %.2f ms/run\n", d, p, p/(d>0?d:1), (p-d)/1000 }'

echo "== trace verify throughput, 1,000,000 entries"
"$build/phoenix_bench" gen-trace 1000000 "$work/trace.jsonl"
"$build/phoenix_bench" verify-trace "$work/trace.jsonl"
t0=$(now_ns); sha256sum "$work/trace.jsonl" >/dev/null; t1=$(now_ns)
size=$(stat -c %s "$work/trace.jsonl")
awk -v s="$size" -v ns=$((t1 - t0)) 'BEGIN { printf "baseline sha256sum of the same file: %.1f MB/s\n", s/1e6/(ns/1e9) }'

echo "== journal replay overhead (beyond the two check runs), 10 vs 100,000 entries"
small=$("$build/phoenix_bench" journal-replay 10)
large=$("$build/phoenix_bench" journal-replay 100000)
echo "$small" | head -1
echo "$large" | head -1
field() { echo "$1" | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p"; }
awk -v a="$(field "$small" overhead_us)" -v b="$(field "$large" overhead_us)" \
    -v c="$(field "$small" journal_us)" -v d="$(field "$large" journal_us)" \
    'BEGIN { printf "100,000 vs 10 entries: replay overhead ratio %.2fx, journal lookup+record ratio %.2fx (1.00x = does not grow)\n", b/(a>0?a:1), d/(c>0?c:1) }'

echo "== engine overhead per heal cycle (checks and fixers excluded)"
"$build/phoenix_bench_engine" 1000 3

echo "== phoenix-loop overhead per iteration (agent and check excluded), 1-task and 500-task files,"
echo "   and 500 tasks in a 1k- and a 10k-file repository (PHOENIX_BENCH_100K=1 adds 100k)"
"$build/phoenix_bench_loop" "$build/phoenix-loop" 100 1000 10000 ${PHOENIX_BENCH_100K:+100000}

echo "== phoenix-loop --workers 1, 2, 4: tasks per hour (40 tasks, a 2 s agent) and the merge queue's time per task"
"$build/phoenix_bench_workers" "$build/phoenix-loop" 40 2

echo "== sandbox ready time beside git worktree add"
"$build/phoenix_bench_sandbox" 1000 10000
PHOENIX_BUILD_DIR="$build" "$here/bench/hook_bench.sh"

echo "== what another view of the repository costs: sandboxes, worktrees, bisect, a clean HEAD's push"
echo "   (1k and 10k files; PHOENIX_BENCH_100K=1 adds 100k, generated once into \$build/bench-repos)"
PHOENIX_BUILD_DIR="$build" "$here/bench/perf_bench.sh" ${PHOENIX_BENCH_100K:+--with-100k}
PHOENIX_BUILD_DIR="$build" "$here/bench/real_project_bench.sh"
PHOENIX_BUILD_DIR="$build" "$here/bench/failing_first_bench.sh"
PHOENIX_BUILD_DIR="$build" "$here/bench/visual_bench.sh"
PHOENIX_BUILD_DIR="$build" "$here/bench/setup_bench.sh"
PHOENIX_BUILD_DIR="$build" "$here/bench/link_bench.sh"
PHOENIX_BUILD_DIR="$build" "$here/bench/agent_stop_bench.sh"
