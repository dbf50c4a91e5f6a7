#!/usr/bin/env bash
# `make test`: start Kafka, PostgreSQL and MariaDB unless they already run, install Chromium for
# the browser test when missing, run every test tier, and stop what a test run started once no
# run uses it.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
# Runs of `make test` side by side (two checkouts, or CI beside a developer) share one set of
# servers. Each run holds a lease on every server it uses, a file named by its pid; the last run
# to let go stops the server, and only if a test run started it (a broker from `make up`
# survives). A run killed without its cleanup leaves a lease whose pid is gone: it is ignored.
LEASES=${GW_TEST_LEASES:-${TMPDIR:-/tmp}/groundwatch-test-leases}
mkdir -p "$LEASES"
used=()
# a server's lease key: its script and port (a second broker on another port is another server)
key() {
  case $1 in
    kafka) echo "kafka-$GW_KAFKA_PORT" ;;
    postgres) echo "postgres-${GW_PG_PORT:-55432}" ;;
    mariadb) echo "mariadb-${GW_MARIADB_PORT:-53306}" ;;
    phoenix) echo "phoenix-${GW_PHOENIX_PORT:-16006}" ;;
  esac
}
# use SVC: take a lease on SVC and start it unless it serves; under the server's lock, so a run
# letting go cannot stop it between another run's check and its lease
use() {
  local svc=$1 dir rc=0
  dir=$LEASES/$(key "$1")
  mkdir -p "$dir"
  exec 8>"$dir.lock"
  flock -w 900 8 || { echo "test.sh: timed out waiting for $dir.lock" >&2; exec 8>&-; return 1; }
  : >"$dir/$$"
  used+=("$svc")
  # the lock's descriptor is closed for the scripts: a server they start must not hold the lock
  if bash "scripts/$svc.sh" status >/dev/null 2>&1 8>&-; then
    echo "test.sh: reusing $svc"
    # a server started by an older checkout gets what this one's tests need (MariaDB's grants)
    if grep -q '^  refresh)' "scripts/$svc.sh"; then bash "scripts/$svc.sh" refresh >/dev/null 8>&- || rc=1; fi
  elif bash "scripts/$svc.sh" start 8>&-; then
    : >"$dir/started-by-test"
  else
    rc=1
  fi
  exec 8>&-
  return $rc
}
# let go of SVC; stop it if no live run holds a lease and a test run started it
let_go() {
  local svc=$1 dir f
  dir=$LEASES/$(key "$1")
  exec 8>"$dir.lock"
  flock -w 900 8 || { exec 8>&-; return 0; }
  rm -f "$dir/$$"
  for f in "$dir"/[0-9]*; do
    [ -e "$f" ] || continue
    kill -0 "${f##*/}" 2>/dev/null || rm -f "$f"
  done
  if ! compgen -G "$dir/[0-9]*" >/dev/null && [ -f "$dir/started-by-test" ]; then
    bash "scripts/$svc.sh" stop >/dev/null 2>&1 8>&- || true
    rm -f "$dir/started-by-test"
  fi
  exec 8>&-
}
cleanup() {
  local s
  for s in "${used[@]}"; do let_go "$s"; done
}
trap cleanup EXIT

export GW_KAFKA_PORT=${GW_KAFKA_PORT:-9092}
CHAOS=${GW_TEST_ONLY_CHAOS:-0}
if [ "$CHAOS" = cluster ]; then
  echo "test.sh: the cluster chaos test starts a 3-node cluster of its own; no shared broker"
elif ! use kafka; then
  echo "test.sh: Kafka did not start (see the log above); Kafka tests will fail under CI=true" >&2
fi
use postgres || echo "test.sh: PostgreSQL did not start; PostgreSQL tests will fail under CI=true" >&2
use mariadb || echo "test.sh: MariaDB did not start; MySQL tests will fail under CI=true" >&2
# Verdicts on traces are checked through a real Phoenix server's own API (its own virtualenv).
if [ "$CHAOS" = 0 ]; then
  use phoenix || echo "test.sh: Phoenix did not start; the tracing tests will fail under CI=true" >&2
  export GW_TEST_PHOENIX_URL=${GW_TEST_PHOENIX_URL:-$(bash scripts/phoenix.sh url)}
fi
# The HTML report is tested in a real browser: Debian's headless Chromium and its driver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if ((EUID == 0)) && command -v apt-get >/dev/null; then
    # Runs side by side on a fresh machine install once: the second waits on the lock, then
    # finds the packages there. apt's own lock would fail the second run instead of waiting.
    (
      flock -w 900 9 || exit 1
      command -v chromium >/dev/null && command -v chromedriver >/dev/null && exit 0
      echo "test.sh: installing chromium and chromium-driver from Debian packages ..."
      DEBIAN_FRONTEND=noninteractive apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    ) 9>"$LEASES/apt.lock" \
      || echo "test.sh: chromium did not install; the browser test will fail under CI=true" >&2
  else
    echo "test.sh: no chromium/chromedriver and no root to install them" >&2
  fi
fi
export GW_TEST_CHROMIUM=${GW_TEST_CHROMIUM:-$(command -v chromium || true)}
export GW_TEST_CHROMEDRIVER=${GW_TEST_CHROMEDRIVER:-$(command -v chromedriver || true)}
export GW_TEST_MYSQL_URL=${GW_TEST_MYSQL_URL:-$(bash scripts/mariadb.sh url 2>/dev/null || true)}
export GW_TEST_MYSQL_READER_URL=${GW_TEST_MYSQL_READER_URL:-$(bash scripts/mariadb.sh reader-url 2>/dev/null || true)}
export GW_TEST_KAFKA_BOOTSTRAP=${GW_TEST_KAFKA_BOOTSTRAP:-127.0.0.1:$GW_KAFKA_PORT}
export GW_TEST_KAFKA_LOG=${GW_TEST_KAFKA_LOG:-$(bash scripts/kafka.sh logs 2>/dev/null || true)}
export GW_TEST_DATABASE_URL=${GW_TEST_DATABASE_URL:-$(bash scripts/postgres.sh url 2>/dev/null || true)}

# The randomized fault schedules (tests/chaos) take minutes: `make chaos` runs the single-broker
# one (GW_TEST_ONLY_CHAOS=1), `make chaos-cluster` the 3-broker one (GW_TEST_ONLY_CHAOS=cluster),
# `make test` leaves them out. The cluster run ends with its reconciliation line.
if [ "$CHAOS" = 1 ]; then
  "$PYTHON" -m pytest -ra -s tests/chaos/test_kill_schedule.py "$@"
elif [ "$CHAOS" = cluster ]; then
  export GW_CHAOS_LINE_FILE=${GW_CHAOS_LINE_FILE:-$(mktemp)}
  rm -f "$GW_CHAOS_LINE_FILE"
  "$PYTHON" -m pytest -ra -s tests/chaos/test_cluster_chaos.py "$@"
  rc=$?
  if [ -s "$GW_CHAOS_LINE_FILE" ]; then cat "$GW_CHAOS_LINE_FILE"; else echo "chaos-cluster: no reconciliation (the run failed before it)"; fi
  rm -f "$GW_CHAOS_LINE_FILE"
  exit $rc
else
  "$PYTHON" -m pytest -ra --ignore=tests/chaos "$@"
fi
rc=$?
exit $rc
