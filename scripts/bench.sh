#!/usr/bin/env bash
# `make bench`: start Kafka unless it already runs, run every benchmark (bench/run_all.py writes
# bench/results.json and bench/RESULTS.md), and stop Kafka only if this script started it.
# Arguments go to run_all.py (e.g. --only embedded,judge, --quick, --strict).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
started=0
cleanup() {
  if ((started)); then bash scripts/kafka.sh stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

export GW_KAFKA_PORT=${GW_KAFKA_PORT:-9092}
if bash scripts/kafka.sh status >/dev/null 2>&1; then
  echo "bench.sh: reusing the Kafka broker on 127.0.0.1:$GW_KAFKA_PORT"
elif bash scripts/kafka.sh start; then
  started=1
else
  echo "bench.sh: Kafka did not start; the Kafka benchmarks will be reported as holes" >&2
fi
export GW_KAFKA_BOOTSTRAP=${GW_KAFKA_BOOTSTRAP:-127.0.0.1:$GW_KAFKA_PORT}

"$PYTHON" bench/run_all.py "$@"
