#!/usr/bin/env bash
# `make up` / `make down`: the five services as local processes on the local Kafka.
# Logs and pid files go to .run/; SQLite database .run/groundwatch.db unless GW_DATABASE_URL is set.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
RUN=$ROOT/.run
BIN=$(dirname "${PYTHON:-$ROOT/.venv/bin/python}")
SERVICES=(reference-rag analytics judge rag-runner generator)
declare -A PORTS=([generator]=8001 [rag-runner]=8002 [judge]=8003 [analytics]=8004 [reference-rag]=8005)

up() {
  mkdir -p "$RUN"
  if ! bash scripts/kafka.sh status >/dev/null 2>&1; then
    bash scripts/kafka.sh start && touch "$RUN/kafka-started-by-up"
  fi
  export GW_BUS=kafka GW_KAFKA_BOOTSTRAP=${GW_KAFKA_BOOTSTRAP:-127.0.0.1:${GW_KAFKA_PORT:-9092}}
  export GW_DATABASE_URL=${GW_DATABASE_URL:-sqlite:///$RUN/groundwatch.db}
  export GW_RUNNER_REFERENCE_URL=${GW_RUNNER_REFERENCE_URL:-http://127.0.0.1:${PORTS[reference-rag]}/query}
  "$BIN/groundwatch" db-upgrade
  "$BIN/groundwatch" topics-create
  for s in "${SERVICES[@]}"; do
    if [[ -f $RUN/$s.pid ]] && kill -0 "$(<"$RUN/$s.pid")" 2>/dev/null; then
      echo "$s already running (pid $(<"$RUN/$s.pid"))"; continue
    fi
    GW_PORT=${PORTS[$s]} GW_INSTANCE=$s nohup "$BIN/groundwatch-$s" >"$RUN/$s.log" 2>&1 &
    echo $! >"$RUN/$s.pid"
  done
  for s in "${SERVICES[@]}"; do
    for _ in $(seq 1 120); do
      curl -fsS "http://127.0.0.1:${PORTS[$s]}/readyz" >/dev/null 2>&1 && break
      kill -0 "$(<"$RUN/$s.pid")" 2>/dev/null || { echo "$s exited; see $RUN/$s.log" >&2; tail -n 20 "$RUN/$s.log" >&2; exit 1; }
      sleep 0.5
    done
    echo "$s ready on http://127.0.0.1:${PORTS[$s]} (log $RUN/$s.log)"
  done
  echo "report: http://127.0.0.1:${PORTS[analytics]}/report.html   metrics: /metrics on each port"
}

down() {
  for s in "${SERVICES[@]}"; do
    [[ -f $RUN/$s.pid ]] || continue
    pid=$(<"$RUN/$s.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$RUN/$s.pid"
    echo "$s stopped"
  done
  if [[ -f $RUN/kafka-started-by-up ]]; then
    bash scripts/kafka.sh stop && rm -f "$RUN/kafka-started-by-up"
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 {up|down}" >&2; exit 2 ;;
esac
