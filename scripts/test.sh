#!/usr/bin/env bash
# `make test`: start Kafka and PostgreSQL unless they already run, run every test tier, and stop
# only what this script started (a broker from `make up` survives a test run).
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
if bash scripts/kafka.sh status >/dev/null 2>&1; then
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
export GW_TEST_KAFKA_BOOTSTRAP=${GW_TEST_KAFKA_BOOTSTRAP:-127.0.0.1:$GW_KAFKA_PORT}
export GW_TEST_KAFKA_LOG=${GW_TEST_KAFKA_LOG:-$(bash scripts/kafka.sh logs 2>/dev/null || true)}
export GW_TEST_DATABASE_URL=${GW_TEST_DATABASE_URL:-$(bash scripts/postgres.sh url 2>/dev/null || true)}

# The randomized kill schedule (tests/chaos) takes minutes: `make chaos` runs it (GW_TEST_ONLY_CHAOS=1),
# `make test` leaves it out.
if [ "${GW_TEST_ONLY_CHAOS:-0}" = 1 ]; then
  "$PYTHON" -m pytest -ra -s tests/chaos "$@"
else
  "$PYTHON" -m pytest -ra --ignore=tests/chaos "$@"
fi
rc=$?
exit $rc
