#!/usr/bin/env bash
# The narrated demo. Expects `phoenix` on PATH. Every step is a real command
# on a real git repository; nothing here is simulated.
set -uo pipefail
export NO_COLOR="${NO_COLOR:-}"
work="$(mktemp -d "${TMPDIR:-/tmp}/phoenix-demo-XXXXXX")"
trap 'rm -rf "$work"' EXIT
step=0
say() { step=$((step + 1)); printf '\n== %d. %s\n' "$step" "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; rc=$?; printf '   (exit %d)\n' "$rc"; return 0; }

cd "$work"
git init -q -b main shop && cd shop
git config user.name "Demo User"; git config user.email demo@example.com
mkdir -p src tests
cat > src/price.sh <<'SH'
# price QUANTITY UNIT_CENTS -> total in cents, 10% off from 10 items
price() { local q=$1 u=$2 t=$(( $1 * $2 )); if [ "$q" -ge 10 ]; then t=$(( t * 9 / 10 )); fi; echo "$t"; }
SH
cat > tests/price_test.sh <<'SH'
#!/bin/sh
. ./src/price.sh
fail=0
check() { got=$(price "$1" "$2"); if [ "$got" != "$3" ]; then echo "FAIL price $1 $2: want $3, got $got"; fail=1; else echo "ok   price $1 $2 = $3"; fi; }
check 1 250 250
check 10 100 900
check 12 50 540
exit $fail
SH
chmod +x tests/price_test.sh
cat > phoenix.json <<'JSON'
{
  // One deterministic check: the unit tests.
  "checks": [
    { "id": "unit", "kind": "command_exit", "target": ["./tests/price_test.sh"], "type": "unit",
      "timeout_s": 30, "editable": ["src/**"] }
  ]
}
JSON
printf '.phoenix/*\n!.phoenix/contracts/\n!.phoenix/baselines/\nincidents/\n' > .gitignore
git add -A && git commit -qm "price with bulk discount"
echo "A tiny shop repository in $work/shop, with one check 'unit' in phoenix.json."

say "Sense: run the check once. Green."
run phoenix sense unit

say "Snapshot: bless src/ while the check passes."
snap_json=$(phoenix snapshot src --check unit --json)
echo "$ phoenix snapshot src --check unit --json"
echo "$snap_json"
snap_id=$(printf '%s' "$snap_json" | sed -n 's/.*"snap_id":"\([^"]*\)".*/\1/p')

say "A deliberate break: someone 'simplifies' the discount."
sed -i 's/t \* 9 \/ 10/t * 8 \/ 10/' src/price.sh
git --no-pager diff --stat

say "Sense again: red, with the evidence that proves it."
run phoenix sense unit

say "Heal by rollback: restore the blessed snapshot, then re-run the check fresh."
run phoenix heal --strategy rollback --snap "$snap_id" --recheck unit

say "Heal by retry: a flaky command gets at most three runs, with backoff and jitter."
rm -f "$work/flaky"
run phoenix heal --strategy retry --backoff-ms 50 --target "sh -c 'n=\$(cat $work/flaky 2>/dev/null || echo 0); echo \$((n+1)) > $work/flaky; [ \$n -ge 1 ]'"

say "The trace: every sense, snapshot and heal, hash-chained."
run phoenix trace verify
echo "Now rewrite history: make the red run of step 4 look green, and verify again:"
line=$(grep -n '"ok":false' .phoenix/trace.jsonl | head -1 | cut -d: -f1)
sed -i "${line}s/\"ok\":false/\"ok\":true/; ${line}s/exit=1/exit=0/" .phoenix/trace.jsonl
run phoenix trace verify

rm -f .phoenix/trace.jsonl  # the tampered trace stays behind in this story

say "The engine. First a green run: every check passes, so HEAD is blessed known-good."
git add -A >/dev/null; git commit -qm "phoenix config" >/dev/null 2>&1 || true
run phoenix run

say "A regression lands among a few ordinary commits."
echo "# receipts" > src/receipt.sh; git add -A; git commit -qm "receipts (feature)"
sed -i 's/t \* 9 \/ 10/t * 8 \/ 10/' src/price.sh; git commit -qam "tweak the bulk discount"
echo "# totals" > src/total.sh; git add -A; git commit -qm "totals (feature)"
git --no-pager log --oneline -4

say "phoenix run: detect -> bisect (no model at all) -> propose the culprit's revert -> verify fresh -> heal."
run phoenix run --explain
git --no-pager log --oneline -2

say "A new feature with a bug in it, and the test that catches it."
cat > src/price.sh <<'SH'
# price QUANTITY UNIT_CENTS -> total in cents: 10% off from 10 items, 20% off from 100
price() { local q=$1 u=$2 t=$(( $1 * $2 )); if [ "$q" -ge 100 ]; then t=$(( t * 8 / 100 )); elif [ "$q" -ge 10 ]; then t=$(( t * 9 / 10 )); fi; echo "$t"; }
SH
sed -i 's/^exit \$fail$/check 100 10 800\nexit $fail/' tests/price_test.sh
git commit -qam "bulk tier for 100+ items"
run phoenix sense unit

say "The agent heals it: bisect's revert would delete the new test, so a guard rejects it; the agent edits the code."
cat > phoenix.json <<JSON
{
  "checks": [
    { "id": "unit", "kind": "command_exit", "target": ["./tests/price_test.sh"], "type": "unit",
      "timeout_s": 30, "editable": ["src/**"] }
  ],
  "fixers": ["journal", "bisect", "harness"],
  // The demo's agent is a scripted program; with a real one this is just "harness": "claude".
  "harness": { "command": ["$PHOENIX_DEMO_AGENT", "--prompt-file", "{prompt_file}"], "timeout_s": 60,
               "env": { "PHOENIX_AGENT_SCRIPT": "replace src/price.sh 't * 8 / 100' 't * 8 / 10'; print-json-cost 0.04 3" } }
}
JSON
git commit -qam "phoenix: use the agent"
run phoenix run --explain
git --no-pager log --oneline -2

say "The same bug again, weeks later: the journal replays the verified fix first, and re-measures it."
sed -i 's|t \* 8 / 10 ))|t * 8 / 100 ))|' src/price.sh
git commit -qam "refactor pricing (reintroduces the bug)"
run phoenix run --explain
run phoenix journal

say "What was kept: the trace of every step, verified."
run phoenix trace verify

printf '\nDone. HEALED always meant: the check that found the problem passed on a fresh run.\n'
