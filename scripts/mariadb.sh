#!/usr/bin/env bash
# Throw-away MariaDB server on loopback for tests (Debian packages, no Docker), like postgres.sh.
#
# Usage: scripts/mariadb.sh {install|start|stop|status|refresh|url|reader-url}
#   refresh: on a running server, make the database, users and grants start makes (idempotent)
# Env:   GW_MARIADB_HOME (/tmp/groundwatch-mariadb)  GW_MARIADB_PORT (53306)
# Database groundwatch_test; user gw (all rights on it), user gw_reader (SELECT only), user gw_file
# (SELECT and the global FILE privilege: a login groundwatch must refuse as a source); no
# passwords, 127.0.0.1 only. The data directory is created by start and removed by stop.
set -euo pipefail

HOME_DIR=${GW_MARIADB_HOME:-/tmp/groundwatch-mariadb}
PORT=${GW_MARIADB_PORT:-53306}
DB=groundwatch_test
DATA=$HOME_DIR/data
SOCK=$HOME_DIR/mysqld.sock
LOG=$HOME_DIR/mariadb.log
PIDFILE=$HOME_DIR/mariadbd.pid
MARKER=$HOME_DIR/started-by-script
URL=mysql+pymysql://gw@127.0.0.1:$PORT/$DB
READER_URL=mysql+pymysql://gw_reader@127.0.0.1:$PORT/$DB

die() { echo "mariadb.sh: $*" >&2; exit 1; }

server_bin() { command -v mariadbd || { [[ -x /usr/sbin/mariadbd ]] && echo /usr/sbin/mariadbd; } || true; }

install() {
  [[ -n $(server_bin) ]] && command -v mariadb-install-db >/dev/null && return 0
  ((EUID == 0)) && command -v apt-get >/dev/null || die "no mariadbd; install mariadb-server"
  echo "installing MariaDB from Debian packages ..."
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # policy-rc.d 101: the package must not start (or fail to start) a system-wide server
  local policy=/usr/sbin/policy-rc.d created=0
  if [[ ! -e $policy ]]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >/dev/null
  ((created)) && rm -f "$policy"
  [[ -n $(server_bin) ]] || die "mariadbd still not found after apt-get install mariadb-server"
}

client() { mariadb --protocol=socket -S "$SOCK" -u root "$@"; }
serving() { [[ -S $SOCK ]] && client -e "SELECT 1" >/dev/null 2>&1; }
lock() { mkdir -p "$(dirname "$HOME_DIR")"; exec 9>"$HOME_DIR.lock"; flock -w 120 9 || die "timed out waiting for $HOME_DIR.lock"; }

as_owner() {
  # mariadbd refuses to run as root without --user; the data dir then belongs to mysql
  if ((EUID == 0)); then echo "--user=mysql"; else echo "--user=$(id -un)"; fi
}

start() {
  install
  lock
  if serving; then echo "mariadb already running on 127.0.0.1:$PORT ($HOME_DIR), reusing"; ensure_db; return 0; fi
  local t0=$SECONDS
  rm -rf "$HOME_DIR"
  mkdir -p "$DATA"
  ((EUID == 0)) && chown -R mysql: "$HOME_DIR"
  mariadb-install-db --no-defaults "$(as_owner)" --datadir="$DATA" --auth-root-authentication-method=socket \
    --skip-test-db >"$HOME_DIR/install.log" 2>&1 || { cat "$HOME_DIR/install.log" >&2; die "mariadb-install-db failed"; }
  touch "$MARKER"
  # 9>&- on the whole subshell, which then execs the server: nothing left running may hold our
  # flock (a lingering subshell would make every later start/stop wait for it). Durability is
  # not wanted for throw-away data.
  local bin; bin=$(server_bin)
  (cd / && exec nohup "$bin" --no-defaults "$(as_owner)" --datadir="$DATA" --socket="$SOCK" \
    --port="$PORT" --bind-address=127.0.0.1 --pid-file="$PIDFILE" --log-error="$LOG" \
    --skip-name-resolve --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=64M \
    --max-connections=200 >/dev/null 2>&1) 9>&- &
  for _ in $(seq 1 120); do serving && break; sleep 0.5; done
  serving || { tail -n 40 "$LOG" >&2 || true; die "mariadbd did not start; log: $LOG"; }
  ensure_db
  echo "mariadb $(client -N -e 'SELECT VERSION()') ready on 127.0.0.1:$PORT in $((SECONDS - t0))s ($URL)"
}

ensure_db() {
  client <<SQL
CREATE DATABASE IF NOT EXISTS $DB CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'gw'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'gw_reader'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'gw_file'@'127.0.0.1';
GRANT ALL PRIVILEGES ON $DB.* TO 'gw'@'127.0.0.1';
-- tests that need a store of their own make databases named gwt_* (conftest fresh_mysql_url)
GRANT ALL PRIVILEGES ON \`gwt\\_%\`.* TO 'gw'@'127.0.0.1';
GRANT SELECT ON $DB.* TO 'gw_reader'@'127.0.0.1';
GRANT SELECT ON $DB.* TO 'gw_file'@'127.0.0.1';
-- and each test run's own database, gwt_run_* (conftest mysql_urls), read by the read-only logins
GRANT SELECT ON \`gwt\\_%\`.* TO 'gw_reader'@'127.0.0.1';
GRANT SELECT ON \`gwt\\_%\`.* TO 'gw_file'@'127.0.0.1';
GRANT FILE ON *.* TO 'gw_file'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL
}

stop() {
  lock
  if [[ ! -f $MARKER ]]; then echo "mariadb on :$PORT was not started by mariadb.sh ($HOME_DIR); leaving it"; return 0; fi
  if [[ -f $PIDFILE ]]; then
    local pid; pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$HOME_DIR"
  echo "mariadb on :$PORT stopped"
}

status() {
  if serving; then echo "mariadb serving on 127.0.0.1:$PORT"; return 0; fi
  echo "mariadb not running on :$PORT"; return 1
}

case ${1:-} in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  refresh) lock; serving && ensure_db ;;
  url) echo "$URL" ;;
  reader-url) echo "$READER_URL" ;;
  *) echo "usage: $0 {install|start|stop|status|refresh|url|reader-url}" >&2; exit 2 ;;
esac
