#!/usr/bin/env bash
# A throw-away Prometheus on loopback for tests and local runs, from Debian's `prometheus`
# package (which also brings `promtool`). Mirrors scripts/kafka.sh: idempotent start, stop only
# what start created, logs kept on failure.
#
# Usage: scripts/prometheus.sh install              install prometheus + promtool (+ amtool) if missing
#        scripts/prometheus.sh start CONFIG          start (or reuse) a server with CONFIG
#        scripts/prometheus.sh {stop|status|url|logs|home}
# Env:   GW_PROM_PORT (9490)   GW_PROM_HOME (/tmp/groundwatch-prometheus-$PORT)
#        GW_PROM_READY_TIMEOUT (60 s)   GW_PROM_RETENTION (1d)   GW_PROM_LOCK (/tmp/groundwatch-prometheus-$UID.lock)
#
# `start` with the same config file and content reuses the running server; a different config
# restarts it (rule and scrape file paths inside CONFIG are resolved from CONFIG's directory, so
# the file is used in place, never copied).
set -euo pipefail

PORT=${GW_PROM_PORT:-9490}
PHOME=${GW_PROM_HOME:-/tmp/groundwatch-prometheus-$PORT}
READY_TIMEOUT=${GW_PROM_READY_TIMEOUT:-60}
RETENTION=${GW_PROM_RETENTION:-1d}
PIDFILE=$PHOME/prometheus.pid
LOG=$PHOME/prometheus.log
MARKER=$PHOME/started-by-script
CONFIG_STAMP=$PHOME/config.stamp   # "<abs path> <sha256>" of the config the server runs with

die() { echo "prometheus.sh: $*" >&2; exit 1; }

running() {
  [[ -f $PIDFILE ]] || return 1
  local pid; pid=$(<"$PIDFILE")
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'prometheus.*--web.listen-address'
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# One lock for every port (start/stop take a second): no lock file left behind per test port.
LOCK=${GW_PROM_LOCK:-/tmp/groundwatch-prometheus-$(id -u).lock}
lock() { exec 9>"$LOCK"; flock -w 120 9 || die "timed out waiting for $LOCK"; }

install() {
  local pkgs=()
  command -v prometheus >/dev/null && command -v promtool >/dev/null || pkgs+=(prometheus)
  command -v amtool >/dev/null || pkgs+=(prometheus-alertmanager)
  ((${#pkgs[@]})) || { echo "prometheus, promtool and amtool present ($(command -v promtool))"; return 0; }
  command -v apt-get >/dev/null || die "no apt-get: install ${pkgs[*]} yourself (Prometheus >= 2.42)"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null || die "not root and no passwordless sudo: apt-get install ${pkgs[*]}"
    sudo=(sudo -n)
  fi
  echo "installing ${pkgs[*]} from Debian (first run only) ..."
  # --no-install-recommends: the packages recommend node exporters and their timers.
  # On a host with systemd the package also enables a system Prometheus on :9090; ours runs on
  # its own port and never touches that one.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  command -v promtool >/dev/null || die "promtool still missing after installing ${pkgs[*]}"
  echo "installed: $(prometheus --version 2>&1 | head -n 1)"
}

stamp_of() { echo "$1 $(sha256sum "$1" | cut -d' ' -f1)"; }

fail() {
  echo "prometheus.sh: $*" >&2
  echo "--- last 30 lines of $LOG:" >&2
  tail -n 30 "$LOG" >&2 || true
  if running; then kill -KILL "$(<"$PIDFILE")" || true; fi
  rm -f "$MARKER"
  exit 1
}

wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  until curl -fsS "http://127.0.0.1:$PORT/-/ready" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "not ready within ${READY_TIMEOUT}s"
    running || fail "prometheus exited"
    sleep 0.2
  done
}

stop_locked() {
  if running; then
    local pid; pid=$(<"$PIDFILE")
    kill -TERM "$pid"
    for _ in $(seq 100); do running || break; sleep 0.1; done
    if running; then kill -KILL "$pid" || true; fi
  fi
  rm -rf "$PHOME"
}

start() {
  local config=${1:-}
  [[ -n $config ]] || die "usage: $0 start CONFIG"
  [[ -f $config ]] || die "config $config not found"
  config=$(realpath "$config")
  command -v prometheus >/dev/null || die "prometheus not installed (run: $0 install)"
  command -v curl >/dev/null || die "curl not found (apt-get install -y curl)"
  promtool check config "$config" >/dev/null || die "promtool check config $config failed (run it to see why)"
  lock
  if running && [[ -f $MARKER ]]; then
    if [[ $(stamp_of "$config") == "$(cat "$CONFIG_STAMP" 2>/dev/null)" ]]; then
      echo "prometheus already running on 127.0.0.1:$PORT with $config (pid $(<"$PIDFILE")), reusing"
      wait_ready
      return 0
    fi
    echo "prometheus on :$PORT runs another config; restarting with $config"
    stop_locked
  elif port_open "$PORT"; then
    die "port $PORT is busy and not ours (set GW_PROM_PORT)"
  fi
  rm -rf "$PHOME"
  mkdir -p "$PHOME/data"
  stamp_of "$config" >"$CONFIG_STAMP"
  touch "$MARKER"
  local t0=$SECONDS
  # setsid: survives the caller's process group (Ctrl-C in a test run); the child writes its
  # own pid and execs, so the pid file names prometheus itself.
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
    prometheus --config.file="$config" --storage.tsdb.path="$PHOME/data" \
    --storage.tsdb.retention.time="$RETENTION" --web.listen-address="127.0.0.1:$PORT" \
    --web.enable-lifecycle --web.enable-admin-api \
    >"$LOG" 2>&1 </dev/null 9>&- &
  for _ in $(seq 50); do [[ -s $PIDFILE ]] && break; sleep 0.05; done
  wait_ready
  echo "prometheus ready on http://127.0.0.1:$PORT in $((SECONDS - t0))s (pid $(<"$PIDFILE"), log $LOG)"
}

stop() {
  lock
  if [[ ! -f $MARKER ]]; then
    if port_open "$PORT"; then echo "prometheus on :$PORT was not started by prometheus.sh; leaving it"
    else echo "prometheus not running on :$PORT"; fi
    return 0
  fi
  stop_locked
  echo "prometheus on :$PORT stopped"
}

status() {
  if running; then echo "prometheus running on 127.0.0.1:$PORT (pid $(<"$PIDFILE"), config $(cut -d' ' -f1 "$CONFIG_STAMP"))"; return 0; fi
  if port_open "$PORT"; then echo "something serves 127.0.0.1:$PORT (not started by prometheus.sh)"; return 0; fi
  echo "prometheus not running on :$PORT"; return 1
}

case ${1:-} in
  install) install ;;
  start) start "${2:-}" ;;
  stop) stop ;;
  status) status ;;
  url) echo "http://127.0.0.1:$PORT" ;;
  logs) echo "$LOG" ;;
  home) echo "$PHOME" ;;
  *) echo "usage: $0 {install|start CONFIG|stop|status|url|logs|home}" >&2; exit 2 ;;
esac
