#!/usr/bin/env bash
# `make test`: start Kafka, PostgreSQL and MariaDB unless they already run, install Chromium for
# the browser test when missing, run every test tier, and stop only what this script started (a
# broker from `make up` survives a test run).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
started=()
cleanup() {
  for s in "${started[@]}"; do bash "scripts/$s.sh" stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

export GW_KAFKA_PORT=${GW_KAFKA_PORT:-9092}
CHAOS=${GW_TEST_ONLY_CHAOS:-0}
if [ "$CHAOS" = cluster ]; then
  echo "test.sh: the cluster chaos test starts a 3-node cluster of its own; no shared broker"
elif bash scripts/kafka.sh status >/dev/null 2>&1; then
  echo "test.sh: reusing the Kafka broker on 127.0.0.1:$GW_KAFKA_PORT"
elif bash scripts/kafka.sh start; then
  started+=(kafka)
else
  echo "test.sh: Kafka did not start (see the log above); Kafka tests will fail under CI=true" >&2
fi
if bash scripts/postgres.sh status >/dev/null 2>&1; then
  echo "test.sh: reusing PostgreSQL"
elif bash scripts/postgres.sh start; then
  started+=(postgres)
else
  echo "test.sh: PostgreSQL did not start; PostgreSQL tests will fail under CI=true" >&2
fi
if bash scripts/mariadb.sh status >/dev/null 2>&1; then
  echo "test.sh: reusing MariaDB"
elif bash scripts/mariadb.sh start; then
  started+=(mariadb)
else
  echo "test.sh: MariaDB did not start; MySQL tests will fail under CI=true" >&2
fi
# Verdicts on traces are checked through a real Phoenix server's own API (its own virtualenv).
if [ "$CHAOS" = 0 ]; then
  if bash scripts/phoenix.sh status >/dev/null 2>&1; then
    echo "test.sh: reusing Phoenix"
  elif bash scripts/phoenix.sh start; then
    started+=(phoenix)
  else
    echo "test.sh: Phoenix did not start; the tracing tests will fail under CI=true" >&2
  fi
  export GW_TEST_PHOENIX_URL=${GW_TEST_PHOENIX_URL:-$(bash scripts/phoenix.sh url)}
fi
# The HTML report is tested in a real browser: Debian's headless Chromium and its driver.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if ((EUID == 0)) && command -v apt-get >/dev/null; then
    echo "test.sh: installing chromium and chromium-driver from Debian packages ..."
    DEBIAN_FRONTEND=noninteractive apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null \
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
