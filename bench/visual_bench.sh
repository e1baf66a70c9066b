#!/usr/bin/env bash
# Visual comparison: Phoenix beside pixelmatch (with pngjs, on node) and odiff,
# on the same PNG pairs in the same run. Each tool is one process that decodes
# both PNGs, compares them (tolerance 0.1, anti-aliasing ignored) and writes a
# diff PNG. Printed per size: median wall time per pair over $RUNS runs, peak
# memory (max RSS), and Phoenix's figures as ratios to the others'.
# pixelmatch and odiff come from the npm registry, installed once into the
# build directory; without npm (or the registry) they are skipped, saying why.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
runs="${RUNS:-5}"
bench="$build/phoenix_bench_visual"
maxrss="$build/test-tools/maxrss"
[ -x "$bench" ] && [ -x "$maxrss" ] || { echo "visual bench: build first ($bench, $maxrss missing)"; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-visual-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "== visual comparison: decode two PNGs, compare, write the diff PNG (median of $runs runs)"

# The other tools, pinned, into a cache under the build directory.
cache="$build/bench-cache/visual"
mkdir -p "$cache"
have_pixelmatch=0 have_odiff=0 why=""
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  why="npm/node not installed"
else
  if [ ! -d "$cache/node_modules/pixelmatch" ] || [ ! -d "$cache/node_modules/odiff-bin" ]; then
    mkdir -p "$cache"
    if ! npm install --prefix "$cache" --no-audit --no-fund --loglevel=error \
         pixelmatch@7.1.0 pngjs@7.0.0 odiff-bin@4.5.0 >"$work/npm.log" 2>&1; then
      why="npm install failed: $(tail -1 "$work/npm.log")"
    fi
  fi
  [ -d "$cache/node_modules/pixelmatch" ] && [ -d "$cache/node_modules/pngjs" ] && have_pixelmatch=1
  odiff="$cache/node_modules/.bin/odiff"
  [ -x "$odiff" ] && "$odiff" --help >/dev/null 2>&1 && have_odiff=1
fi
[ -n "$why" ] && echo "pixelmatch and odiff skipped: $why"
[ "$have_pixelmatch$have_odiff" = "10" ] && echo "odiff skipped: its binary did not install or does not run here"

cat >"$cache/pixelmatch_cli.mjs" 2>/dev/null <<'JS' || true
// node pixelmatch_cli.mjs A B DIFF: decode, compare (threshold 0.1), write the diff.
import fs from 'node:fs';
import { PNG } from 'pngjs';
import pixelmatch from 'pixelmatch';
const [a, b, out] = process.argv.slice(2);
const x = PNG.sync.read(fs.readFileSync(a)), y = PNG.sync.read(fs.readFileSync(b));
const diff = new PNG({ width: x.width, height: x.height });
const n = pixelmatch(x.data, y.data, diff.data, x.width, x.height, { threshold: 0.1 });
fs.writeFileSync(out, PNG.sync.write(diff));
console.log(`differing=${n} total=${x.width * x.height}`);
JS

now_ns() { date +%s%N; }
# measure NAME CMD...: median ms and max RSS (kB) over $runs runs -> "ms kb"
measure() {
  local times=() rss=0 t0 t1 kb
  for _ in $(seq "$runs"); do
    t0=$(now_ns)
    "$maxrss" "$@" >"$work/out" 2>"$work/err" || { [ "$(sed -n 's/.*exit=//p' "$work/err")" = 22 ] || { cat "$work/err" >&2; return 1; }; }
    t1=$(now_ns)
    times+=($(( (t1 - t0) / 1000 )))
    kb=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$work/err")
    [ "$kb" -gt "$rss" ] && rss=$kb
  done
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  echo "$((median / 1000)).$(( (median % 1000) / 100 )) $rss"
}

for size in 1920x1080 3840x2160; do
  w=${size%x*} h=${size#*x}
  dir="$work/$size"; mkdir -p "$dir"
  "$bench" gen "$dir" "$w" "$h"
  echo "-- $size: $(( $(stat -c %s "$dir/a.png") / 1024 )) kB + $(( $(stat -c %s "$dir/b.png") / 1024 )) kB of PNG"
  read -r p_ms p_kb < <(measure "$bench" compare "$dir/a.png" "$dir/b.png" "$dir/diff-phoenix.png")
  printf '%-11s %8s ms/pair  %7d kB peak   %s\n' phoenix "$p_ms" "$p_kb" "$(head -1 "$work/out")"
  grep '^phoenix phases' "$work/err" | sed 's/^/            /'
  if [ "$have_pixelmatch" = 1 ]; then
    read -r m_ms m_kb < <(measure node "$cache/pixelmatch_cli.mjs" "$dir/a.png" "$dir/b.png" "$dir/diff-pixelmatch.png")
    printf '%-11s %8s ms/pair  %7d kB peak   %s\n' pixelmatch "$m_ms" "$m_kb" "$(head -1 "$work/out")"
    awk -v a="$p_ms" -v b="$m_ms" -v c="$p_kb" -v d="$m_kb" \
      'BEGIN { printf "phoenix/pixelmatch: time %.2fx, memory %.2fx (below 1 = Phoenix better)\n", a/b, c/d }'
  fi
  if [ "$have_odiff" = 1 ]; then
    read -r o_ms o_kb < <(measure "$odiff" "$dir/a.png" "$dir/b.png" "$dir/diff-odiff.png" --threshold=0.1 --antialiasing)
    printf '%-11s %8s ms/pair  %7d kB peak   %s\n' odiff "$o_ms" "$o_kb" "$(grep -m1 . "$work/out" | cut -c1-60)"
    awk -v a="$p_ms" -v b="$o_ms" -v c="$p_kb" -v d="$o_kb" \
      'BEGIN { printf "phoenix/odiff:      time %.2fx, memory %.2fx (below 1 = Phoenix better)\n", a/b, c/d }'
  fi
done
