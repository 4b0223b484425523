#!/usr/bin/env bash
# The server matrix (README "Servers"): runs the test subsets that depend on
# what the Redis server does against each redis-server given, one folder per
# server, and prints a markdown table of pass counts.
#
#   scripts/server-matrix.sh [LABEL=]FOLDER...
#   scripts/server-matrix.sh debian=/usr/bin /tmp/servers/valkey-9.1
#
# FOLDER holds redis-server (or valkey-server), and redis-cli (or valkey-cli)
# for the cluster tests; redis-sentinel is not needed (the tests start
# `redis-server CONF --sentinel`). For each folder, a fresh directory of links
# named redis-server / redis-cli / redis-sentinel goes first on PATH, so the
# tests, which spawn `redis-server` and `redis-cli`, start that server; nothing
# else on PATH changes. Every test starts its own servers on free loopback
# ports: nothing here reaches a Redis on 6379 (and the REDSTALK_* / TEST_*
# variables that could point a test at one are cleared).
#
# Per server: a start check (scripts/server-matrix-smoke.ts: the server's
# name and version, and a sidecar that puts and reserves a job, or the error
# it stops with), then each subset in turn (SUBSETS below; MATRIX_SUBSETS="store
# faults" runs some), each bounded by MATRIX_TIMEOUT seconds (900). A server
# whose start check fails gets no subset run (they would all fail alike).
# Results (vitest JSON, the logs, table.md) go to MATRIX_OUT (a new folder in
# /tmp). Exit status: 0 when every subset of every started server passed.
set -euo pipefail

# All in one function, read whole before it runs: an edit to this file during a run changes nothing.
main() {
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# -gt 0 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# name|vitest arguments (files run one at a time: vitest.config.ts)
SUBSETS=(
  "store|test/store"
  "differential|test/differential"
  "integration|test/integration/scripts-cache.test.ts test/integration/cluster.test.ts test/integration/replication.test.ts test/integration/shards.test.ts test/integration/out-of-memory.test.ts test/integration/lifecycle.test.ts test/integration/commands.test.ts"
  "faults|test/faults/faults.test.ts test/faults/pinned.test.ts test/faults/failover.test.ts test/faults/failover-pinned.test.ts test/faults/cluster.test.ts"
)
wanted=${MATRIX_SUBSETS:-store differential integration faults}
# The differential suite: its hand-written scenarios and seeded random ones, 1-100 here (400 in npm test).
export DIFF_SEEDS=${DIFF_SEEDS:-1-100}
limit=${MATRIX_TIMEOUT:-900}
out=${MATRIX_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/server-matrix.XXXXXX")}
mkdir -p "$out"

# Nothing inherited may point a test or a sidecar at another Redis (6379 or any).
for v in $(env | grep -oE '^(REDSTALK_[A-Z_]*|TEST_[A-Z_]*|REDIS_URL|FAULTS_FULL|NEMESIS_[A-Z_]*)=' | tr -d =); do unset "$v"; done

echo "building dist/ (the suites start the built sidecar)" >&2
npm run build >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 2; }

# "12/12", or "10/12 ✗" with failures, "+2 skipped" when some skipped, from one vitest JSON report.
cell() {
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const skipped = r.numPendingTests + r.numTodoTests;
    const ran = r.numTotalTests - skipped;
    let c = `${r.numPassedTests}/${ran}`;
    if (r.numFailedTests || r.numFailedTestSuites) c += " ✗";
    if (skipped) c += ` (+${skipped} skipped)`;
    console.log(c);
    for (const f of r.testResults) {
      if (f.status === "failed" && !f.assertionResults.some((a) => a.status === "failed")) console.error(`  file failed: ${f.name}: ${(f.message || "").split("\n")[0]}`);
      for (const a of f.assertionResults) if (a.status === "failed") console.error(`  failed: ${a.fullName}`);
    }
  ' "$1"
}

rows=()
status=0
for arg in "$@"; do
  label=${arg%%=*}; folder=${arg#*=}
  [ "$label" = "$arg" ] && label=$(basename "$folder")
  folder=$(cd "$folder" && pwd)
  server=$folder/redis-server; [ -x "$server" ] || server=$folder/valkey-server
  cli=$folder/redis-cli; [ -x "$cli" ] || cli=$folder/valkey-cli
  [ -x "$server" ] || { echo "$folder: no redis-server or valkey-server" >&2; exit 2; }
  shim=$(mktemp -d "${TMPDIR:-/tmp}/server-matrix-bin.XXXXXX")
  ln -s "$server" "$shim/redis-server"
  ln -s "$server" "$shim/redis-sentinel"
  [ -x "$cli" ] && ln -s "$cli" "$shim/redis-cli"
  log=$out/$label
  mkdir -p "$log"
  echo "== $label ($server)" >&2
  t0=$(date +%s)
  smoke=$(PATH="$shim:$PATH" timeout 120 npx tsx scripts/server-matrix-smoke.ts 2>"$log/start.log" || true)
  [ -n "$smoke" ] || smoke='{"name":"?","version":"?","startup":"the start check gave no answer (see start.log)"}'
  echo "$smoke" >"$log/start.json"
  read -r name version startup < <(node -e 'const s = JSON.parse(process.argv[1]); const n = {redis: "Redis", valkey: "Valkey"}[s.name] ?? s.name; console.log(n, s.version, s.startup === "ok" ? "ok" : "failed")' "$smoke")
  cells=()
  notes=''
  if [ "$startup" != ok ]; then
    notes="start refused: $(node -e 'console.log(JSON.parse(process.argv[1]).startup.replaceAll("|", "\\|"))' "$smoke")"
    echo "  $notes" >&2
  fi
  for entry in "${SUBSETS[@]}"; do
    subset=${entry%%|*}; files=${entry#*|}
    case " $wanted " in *" $subset "*) ;; *) continue ;; esac
    if [ "$startup" != ok ]; then cells+=("not run"); continue; fi
    s0=$(date +%s)
    # timeout signals vitest's whole process group: the servers the tests started stop with it.
    # shellcheck disable=SC2086
    PATH="$shim:$PATH" timeout --kill-after=30 "$limit" npx vitest run $files --reporter=default --reporter=json \
      --outputFile.json="$log/$subset.json" >"$log/$subset.log" 2>&1 && rc=0 || rc=$?
    secs=$(( $(date +%s) - s0 ))
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      c="timeout (${limit} s)"; status=1
    elif [ -f "$log/$subset.json" ]; then
      c=$(cell "$log/$subset.json" 2>"$log/$subset.failed") || c="no report"
      [ "$rc" = 0 ] || status=1
    else
      c="no report (exit $rc)"; status=1
    fi
    echo "  $subset: $c in ${secs} s" >&2
    sed 's/^/  /' "$log/$subset.failed" 2>/dev/null >&2 || true
    cells+=("$c")
  done
  rm -rf "$shim"
  rows+=("| $label | $name $version | $(IFS='|'; echo "${cells[*]}" | sed 's/|/ | /g') | $(( $(date +%s) - t0 )) s | $notes |")
done

{
  header="| server | version |"; rule="|---|---|"
  for entry in "${SUBSETS[@]}"; do
    subset=${entry%%|*}
    case " $wanted " in *" $subset "*) header+=" $subset |"; rule+="---|" ;; esac
  done
  echo "$header time | notes |"
  echo "$rule---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$out/table.md"
echo "(results in $out)" >&2
return $status
}

main "$@"
exit $?
