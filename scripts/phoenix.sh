#!/usr/bin/env bash
# Throw-away Arize Phoenix server on loopback for the tracing tests (arize-phoenix from PyPI, in a
# virtualenv of its own so its pins never meet the project's; its own SQLite; no network used).
#
# Usage: scripts/phoenix.sh {install|start|stop|status|url}
# Env:   GW_PHOENIX_HOME (/tmp/groundwatch-phoenix)  GW_PHOENIX_PORT (16006)
#        GW_PHOENIX_VENV (~/.cache/groundwatch/phoenix-venv)  GW_PHOENIX_VERSION (20.26.1)
set -euo pipefail

HOME_DIR=${GW_PHOENIX_HOME:-/tmp/groundwatch-phoenix}
PORT=${GW_PHOENIX_PORT:-16006}
GRPC_PORT=${GW_PHOENIX_GRPC_PORT:-$((PORT + 1))}
VENV=${GW_PHOENIX_VENV:-$HOME/.cache/groundwatch/phoenix-venv}
VERSION=${GW_PHOENIX_VERSION:-20.26.1}
LOG=$HOME_DIR/phoenix.log
PIDFILE=$HOME_DIR/phoenix.pid
URL=http://127.0.0.1:$PORT

die() { echo "phoenix.sh: $*" >&2; exit 1; }

install() {
  [[ -x $VENV/bin/phoenix && -f $VENV/.installed-$VERSION ]] && return 0
  echo "installing arize-phoenix==$VERSION into $VENV (first run only, ~2 min) ..."
  "${PYTHON_FOR_PHOENIX:-python3}" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "arize-phoenix==$VERSION" || die "pip install arize-phoenix==$VERSION failed"
  touch "$VENV/.installed-$VERSION"
}

serving() { curl -fsS -m 2 "$URL/healthz" >/dev/null 2>&1; }

start() {
  install
  if serving; then echo "phoenix already running on $URL, reusing"; return 0; fi
  local t0=$SECONDS
  rm -rf "$HOME_DIR"; mkdir -p "$HOME_DIR"
  # PHOENIX_TELEMETRY_ENABLED=false: Phoenix reports nothing about itself anywhere
  (cd "$HOME_DIR" && PHOENIX_WORKING_DIR=$HOME_DIR PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=$PORT \
    PHOENIX_GRPC_PORT=$GRPC_PORT PHOENIX_TELEMETRY_ENABLED=false \
    exec nohup "$VENV/bin/phoenix" serve >"$LOG" 2>&1) &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 240); do serving && break; kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break; sleep 0.5; done
  serving || { grep -v sqlalchemy "$LOG" | tail -n 30 >&2 || true; die "phoenix did not start; log: $LOG"; }
  echo "phoenix $(curl -fsS -m 2 "$URL/arize_phoenix_version") ready on $URL in $((SECONDS - t0))s"
}

stop() {
  if [[ ! -f $PIDFILE ]]; then echo "phoenix on :$PORT was not started by phoenix.sh ($HOME_DIR); leaving it"; return 0; fi
  local pid; pid=$(cat "$PIDFILE")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null || true
  rm -rf "$HOME_DIR"
  echo "phoenix on :$PORT stopped"
}

status() {
  if serving; then echo "phoenix serving on $URL"; return 0; fi
  echo "phoenix not running on :$PORT"; return 1
}

case ${1:-} in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  url) echo "$URL" ;;
  *) echo "usage: $0 {install|start|stop|status|url}" >&2; exit 2 ;;
esac
