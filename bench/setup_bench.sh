#!/usr/bin/env bash
# What `setup` costs in the trees Phoenix makes, on the npm fixture
# (tests/fixtures/real-projects/npm: a lockfile, prettier 3.6.2 as its one
# dev dependency, `npm test` = prettier --check . && node --test), each
# figure beside `npm ci` run directly in the same run, as a ratio:
#   - the loop: its first tree (a fresh worktree, `npm ci` runs), then the
#     same tree at the next iteration (lockfile unchanged), then the first
#     tree of a second loop branch (a new worktree, same lockfile)
#   - bisect: its first tree, then the next commit it moves that tree to
#     (lockfile unchanged)
# The aim: a later tree costs under 0.2x a fresh `npm ci`. Nothing here
# asserts a time.
#
# How: the loop's first tree is what Phoenix itself reports (the loop.setup
# trace event's duration). Everything else is timed from outside: the check
# records when it starts, in which tree, and when it ends; the agent records
# when it ends. A gap (the agent's end, or the previous measurement's end,
# to the next check's start in a tree) is everything Phoenix does in
# between: for a later tree, setup's fingerprint (its stamp matches, so no
# step runs), moving the tree, bookkeeping; for bisect's first tree, making
# the worktree and running setup there. So a gap is an upper bound of the
# setup's own cost.
#
# npm runs offline from the cache that scripts/deps.sh fills
# (/opt/phoenix-test-tools/npm-cache); without it (or npm) the bench says
# so and stops.
#   bench/setup_bench.sh          N=3 direct `npm ci` runs (median); PHOENIX_BUILD_DIR picks the build
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
phoenix="$build/phoenix"
loop_bin="$build/phoenix-loop"
agent="$build/test-tools/scripted_agent"
N="${N:-3}"
if [ ! -x "$phoenix" ] || [ ! -x "$loop_bin" ] || [ ! -x "$agent" ]; then "$here/scripts/build.sh" >/dev/null; fi
fixture="$here/tests/fixtures/real-projects/npm"
cache="${PHOENIX_TEST_TOOLS_DIR:-/opt/phoenix-test-tools}/npm-cache"

echo "== setup in Phoenix's trees on an npm project (npm ci from a lockfile), beside npm ci run directly"
if ! command -v npm >/dev/null 2>&1 || ! grep -rqs "prettier/-/prettier-3.6.2.tgz" "$cache/_cacache/index-v5"; then
  echo "skipped: npm, or prettier 3.6.2 in $cache, is missing (scripts/deps.sh installs both)"
  exit 0
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-setup-bench-XXXXXX")"
trap '[ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT

export npm_config_cache="$cache" npm_config_offline=true npm_config_audit=false npm_config_fund=false \
  npm_config_update_notifier=false npm_config_loglevel=error
export NO_COLOR=1

now_ns() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / (b > 0 ? b : 1) }'; }

# The baseline: `npm ci` in a fresh copy of the project, N times.
for i in $(seq "$N"); do
  mkdir -p "$work/direct$i" && cp -r "$fixture/." "$work/direct$i/"
  t0=$(now_ns)
  (cd "$work/direct$i" && npm ci >/dev/null)
  t1=$(now_ns)
  ms "$t0" "$t1"
  rm -rf "$work/direct$i"
done >"$work/direct.ms"
direct=$(median <"$work/direct.ms")
echo "npm ci, run directly in a fresh copy: ${direct} ms (median of $N: $(tr '\n' ' ' <"$work/direct.ms"))"

# The project, with a phoenix.json whose check records its start, tree and
# end in $work/marks ("start|end <ns> <tree>"), and an agent that records
# its end in $work/agent-end.
repo="$work/repo"
git init -q -b main "$repo"
git -C "$repo" config user.name bench
git -C "$repo" config user.email bench@localhost
git -C "$repo" config commit.gpgsign false
cp -r "$fixture/." "$repo/"
printf '.phoenix/\n' >>"$repo/.gitignore"
printf '%s\n' "# Tasks" "" "- [ ] one" "- [ ] two" >"$repo/TASKS.md"
cat >"$repo/phoenix.json" <<EOF
{
  "setup": [{ "run": ["npm", "ci"], "inputs": ["package-lock.json"] }],
  "checks": [
    {
      "id": "unit",
      "kind": "command_exit",
      "target": ["sh", "-c", "echo start \$(date +%s%N) \$PWD >>$work/marks; npm test; rc=\$?; echo end \$(date +%s%N) \$PWD >>$work/marks; exit \$rc"],
      "editable": ["lib/**"]
    }
  ],
  "fixers": ["bisect"],
  "harness": { "command": ["$agent", "--prompt-file", "{prompt_file}"], "timeout_s": 120 },
  "loop": { "tasks": "TASKS.md" }
}
EOF
# Formatted as prettier wants: `npm test` checks every file.
(cd "$repo" && npm ci >/dev/null && ./node_modules/.bin/prettier --write phoenix.json >/dev/null)
git -C "$repo" add -A && git -C "$repo" commit -q -m initial

# Start (ns) of the first check run in a tree under $1 (a path prefix)
# that started after $2 (ns).
first_start_after() { awk -v p="$1" -v t="$2" '$1 == "start" && $2 > t && index($3, p) == 1 { print $2; exit }' "$work/marks"; }
mtime_ns() { stat -c %.9Y "$1" | tr -d .; }

# --- the loop ---------------------------------------------------------------
: >"$work/marks"
# Two tasks, two iterations: the first tree at the baseline, the same tree
# at iteration 2 (each iteration's agent writes one file; its end is marked).
export PHOENIX_AGENT_SCRIPT="write-outside $work/agent-end x; append notes.txt x\\n"
(cd "$repo" && "$loop_bin" --branch phoenix/bench-a >"$work/loop-a.log" 2>&1) || { echo "phoenix-loop failed:"; tail -20 "$work/loop-a.log"; exit 1; }
loop_first=$(grep '"event":"loop.setup"' "$repo/.phoenix/trace.jsonl" | head -1 | sed -n 's/.*"duration_ms":\([0-9]*\).*/\1/p')
end_ns=$(mtime_ns "$work/agent-end")
# Phoenix's worktrees live outside the work tree (src/layout/layout.h):
# the folder that holds the loop's.
wt_root="$(cd "$repo" && git worktree list --porcelain | sed -n 's|^worktree \(.*/worktrees/\)loop-.*|\1|p' | head -1)"
next_start=$(first_start_after "$wt_root" "$end_ns")
loop_later=""
[ -n "$next_start" ] && loop_later=$(ms "$end_ns" "$next_start")
# A second loop branch: a new tree, the same lockfile.
(cd "$repo" && "$loop_bin" --branch phoenix/bench-b >"$work/loop-b.log" 2>&1) || { echo "phoenix-loop (second branch) failed:"; tail -20 "$work/loop-b.log"; exit 1; }
loop_new=$(grep '"event":"loop.setup"' "$repo/.phoenix/trace.jsonl" | tail -1 | sed -n 's/.*"duration_ms":\([0-9]*\).*/\1/p')
[ "$(grep -c '"event":"loop.setup"' "$repo/.phoenix/trace.jsonl")" -ge 2 ] || loop_new=""

# --- bisect -----------------------------------------------------------------
# known-good at HEAD, then six commits with the regression third:
# bisect measures in its own tree, moving it between commits whose lockfile
# is the same.
git -C "$repo" checkout -q main
(cd "$repo" && "$phoenix" run >/dev/null 2>&1) || { echo "phoenix run (to bless known-good) failed"; exit 1; }
for i in 1 2 3 4 5 6; do
  if [ "$i" = 3 ]; then sed -i 's/return a + b;/return a - b;/' "$repo/lib/calc.js"; else echo "$i" >"$repo/notes-$i.txt"; fi
  git -C "$repo" add -A && git -C "$repo" commit -q -m "change $i"
done
: >"$work/marks"
# Its measurements in bisect's tree stand whether or not the heal then
# verifies, so a failed run is shown, not fatal.
(cd "$repo" && "$phoenix" run --fixer bisect --explain >"$work/bisect.log" 2>&1) ||
  { echo "note: phoenix run --fixer bisect did not heal:"; grep -E "HEALED|REJECTED|ESCALATED" "$work/bisect.log" | tail -3; }
# Its first tree: from the end of the measurement that found the red check
# (in the user's tree) to the first start in bisect's tree: making the
# worktree and its setup (npm ci), which ran there (no stamp yet).
bisect_first=$(awk -v p="${wt_root}bisect" '$1 == "end" && index($3, p) != 1 && !seen { last = $2 } $1 == "start" && index($3, p) == 1 && !seen { print int(($2 - last) / 1000000); seen = 1 }' "$work/marks")
# Gaps in bisect's tree: from one measurement's end to the next one's start.
bisect_later=$(awk -v p="${wt_root}bisect" 'index($3, p) == 1 { if ($1 == "end") last = $2; else if (last) { print int(($2 - last) / 1000000); last = 0 } }' "$work/marks" | median)
bisect_steps=$(grep -c "start .*${wt_root}bisect" "$work/marks" || true)

row() {
  local label=$1 v=$2
  if [ -z "$v" ]; then printf '%-62s %s\n' "$label" "(not measured: see the logs above)"; return; fi
  printf '%-62s %6s ms   %sx npm ci\n' "$label" "$v" "$(ratio "$v" "$direct")"
}
row "loop, first tree (setup ran: npm ci)" "$loop_first"
row "loop, same tree next iteration (lockfile unchanged; gap)" "$loop_later"
row "loop, a second branch's new tree (same lockfile)" "$loop_new"
row "bisect, first tree (gap: worktree made, setup ran npm ci)" "$bisect_first"
row "bisect, tree moved to the next commit (unchanged; median gap)" "$bisect_later"
echo "(bisect measured in its tree $bisect_steps times; aim for a later tree: under 0.2x npm ci)"
