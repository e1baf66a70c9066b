#!/usr/bin/env bash
# What linking glibc as a shared library costs at start-up. phoenix and
# phoenix-hook are configured and built twice in this run, in two build
# directories: glibc shared (libstdc++ and libgcc and every other
# library's static archive linked in; phoenix-hook too, with
# -DPHOENIX_HOOK_STATIC=OFF) and -DPHOENIX_STATIC_GLIBC=ON
# (fully static, as Phoenix was linked before). Then, alternating the two so
# drift on the machine hits both alike, N runs each of
#   - phoenix --version                       (start-up alone)
#   - phoenix sense --check '{"kind":"command_exit","target":["true"]}'
#                                             (in a small git repository)
#   - the green pre-push hook alone, as git runs it (the shim that
#     `phoenix hook install` writes, which runs phoenix-hook; check: true)
# and prints the median wall time, the CPU time (user+sys of every process
# started, averaged over a block of runs) and the ratio dynamic/static.
# Nothing here asserts a time.
#   bench/link_bench.sh     N=60 by default; the two builds go to
#                           $PHOENIX_BUILD_DIR/link-bench-{dynamic,static} (default build/)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHOENIX_BUILD_DIR:-$here/build}"
N="${N:-60}"
type="${PHOENIX_BUILD_TYPE:-RelWithDebInfo}"
jobs="${PHOENIX_JOBS:-$(nproc)}"
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-link-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Both builds compile the same objects; only the link differs. With ccache,
# the second build takes them from the cache: the two directories sit at the
# same depth, and the working directory is left out of the hash (it only
# names where the debug information was made).
launcher=""
if command -v ccache >/dev/null 2>&1; then
  launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  export CCACHE_NOHASHDIR=1
fi
echo "== linking glibc dynamically (the default) or statically: two builds of phoenix and phoenix-hook"
variants=(dynamic static)
for v in "${variants[@]}"; do
  dir="$build/link-bench-$v"
  flag=OFF
  [ "$v" = static ] && flag=ON
  started=$SECONDS
  cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE="$type" $launcher -DPHOENIX_BUILD_TESTS=OFF \
    -DPHOENIX_BUILD_BENCH=OFF -DPHOENIX_STATIC_GLIBC=$flag -DPHOENIX_HOOK_STATIC=$flag >"$work/$v.configure.log" 2>&1 ||
    { cat "$work/$v.configure.log" >&2; exit 1; }
  rm -f "$dir/phoenix" "$dir/phoenix-hook"  # linked again, so the log holds the linker's warnings
  cmake --build "$dir" -j "$jobs" --target phoenix phoenix-hook >"$work/$v.build.log" 2>&1 ||
    { tail -40 "$work/$v.build.log" >&2; exit 1; }
  warnings=$(grep -c 'warning:' "$work/$v.build.log" || true)
  echo "built $v (PHOENIX_STATIC_GLIBC=$flag) in $((SECONDS - started)) s: $dir; $warnings warning lines"
  grep 'warning:' "$work/$v.build.log" | sed 's/^.*warning: /  warning: /' | sort | uniq -c | sed 's/^ */  /' || true
done

echo "== the two links: size and the shared libraries each program loads"
for v in "${variants[@]}"; do
  for bin in phoenix phoenix-hook; do
    path="$build/link-bench-$v/$bin"
    needed=$(objdump -p "$path" | awk '$1 == "NEEDED" { printf "%s%s", sep, $2; sep = " " }')
    pie="not PIE"
    readelf -h "$path" | grep -q 'Type: *DYN' && pie="PIE"
    printf '%-8s %-13s %6.1f MB  %-8s needs: %s\n' "$v" "$bin" "$(stat -c %s "$path" | awk '{ print $1 / 1e6 }')" \
      "$pie" "${needed:-nothing (static)}"
  done
done

# Per variant: a repository with a bare remote, one green check, the hook
# installed by that variant's phoenix (its shim runs the phoenix-hook beside it).
for v in "${variants[@]}"; do
  r="$work/$v"
  git init -q --bare "$r.git"
  git init -q -b main "$r"
  git -C "$r" config user.name bench
  git -C "$r" config user.email bench@localhost
  git -C "$r" config commit.gpgsign false
  git -C "$r" remote add origin "$r.git"
  printf '.phoenix/\n' >"$r/.gitignore"
  printf '{ "checks": [{ "id": "trivial", "kind": "command_exit", "target": ["true"] }] }\n' >"$r/phoenix.json"
  git -C "$r" add -A && git -C "$r" commit -q -m initial
  git -C "$r" push -q --no-verify origin main
  (cd "$r" && "$build/link-bench-$v/phoenix" hook install >/dev/null)
  sha=$(git -C "$r" rev-parse HEAD)
  echo "refs/heads/main $sha refs/heads/main $sha" >"$work/$v.line"
done

# One run of measurement $1 with variant $2, from the variant's repository.
one() {
  local m=$1 v=$2 phx="$build/link-bench-$2/phoenix"
  case $m in
    version) "$phx" --version ;;
    sense) "$phx" sense --check '{"kind":"command_exit","target":["true"]}' ;;
    hook) "$work/$v/.git/hooks/pre-push" origin "$work/$v.git" <"$work/$v.line" ;;
  esac
}
measures=(version sense hook)
for m in "${measures[@]}"; do
  for v in "${variants[@]}"; do
    (cd "$work/$v" && one "$m" "$v") >"$work/$m.$v.out" 2>&1 || { cat "$work/$m.$v.out" >&2; exit 1; }
    : >"$work/$m.$v.wall"
  done
done
grep -q "phoenix: ok" "$work/hook.dynamic.out" || { echo "the hook did not run:" >&2; cat "$work/hook.dynamic.out" >&2; exit 1; }

# Wall time: each run alone, the variants alternating.
for m in "${measures[@]}"; do
  for _ in $(seq "$N"); do
    for v in "${variants[@]}"; do
      cd "$work/$v"
      t0=${EPOCHREALTIME/[.,]/}
      one "$m" "$v" >/dev/null 2>&1
      t1=${EPOCHREALTIME/[.,]/}
      echo $((t1 - t0)) >>"$work/$m.$v.wall"
    done
  done
done
cd "$here"
median_us() { sort -n "$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

# CPU: this shell's children's user+sys time over a block of N runs, four
# blocks alternating per variant. `times` must run in this shell (not in a
# $(...) subshell) to see the runs.
child_cpu_s() { awk 'NR == 2 { split($1, u, "m"); split($2, y, "m"); print u[1] * 60 + u[2] + y[1] * 60 + y[2] }' "$work/times"; }
for m in "${measures[@]}"; do
  for v in "${variants[@]}"; do echo 0 >"$work/$m.$v.cpu"; done
  for _ in 1 2 3 4; do
    for v in "${variants[@]}"; do
      cd "$work/$v"
      times >"$work/times"; before=$(child_cpu_s)
      for _ in $(seq "$N"); do one "$m" "$v" >/dev/null 2>&1; done
      times >"$work/times"; after=$(child_cpu_s)
      awk -v s="$(cat "$work/$m.$v.cpu")" -v a="$after" -v b="$before" 'BEGIN { printf "%.6f", s + a - b }' >"$work/$m.$v.cpu.new"
      mv "$work/$m.$v.cpu.new" "$work/$m.$v.cpu"
    done
  done
done
cd "$here"

echo "== start-up, dynamic glibc (default) vs fully static (PHOENIX_STATIC_GLIBC=ON), N=$N each"
echo "   (median wall; CPU = user+sys of all processes started, mean over $((N * 4)) runs)"
label() { case $1 in version) echo "phoenix --version" ;; sense) echo "phoenix sense (true)" ;; hook) echo "green pre-push hook" ;; esac; }
for m in "${measures[@]}"; do
  dw=$(median_us "$work/$m.dynamic.wall"); sw=$(median_us "$work/$m.static.wall")
  dc=$(cat "$work/$m.dynamic.cpu"); sc=$(cat "$work/$m.static.cpu")
  awk -v l="$(label "$m")" -v dw="$dw" -v sw="$sw" -v dc="$dc" -v sc="$sc" -v n=$((N * 4)) 'BEGIN {
    dcm = dc * 1000 / n; scm = sc * 1000 / n
    printf "%-22s dynamic %6.2f ms wall %6.2f ms CPU   static %6.2f ms wall %6.2f ms CPU   dynamic/static: wall %.2fx, CPU %.2fx\n",
      l, dw / 1000, dcm, sw / 1000, scm, dw / sw, (scm > 0 ? dcm / scm : 0)
  }'
done
