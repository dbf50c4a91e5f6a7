#!/usr/bin/env bash
# Throw-away PostgreSQL cluster on loopback for tests and local runs (Debian packages, no Docker).
#
# Usage: scripts/postgres.sh {start|stop|halt|status|url}
#        halt: stop the server but keep its cluster (a store outage; start brings it back as it was)
# Env:   GW_PG_HOME (/tmp/groundwatch-pg)  GW_PG_PORT (55432)
#        GW_PG_BIN  (newest /usr/lib/postgresql/*/bin, else initdb on PATH)
# Database groundwatch_test, user postgres, trust auth on 127.0.0.1 only.
set -euo pipefail

PGH=${GW_PG_HOME:-/tmp/groundwatch-pg}
PORT=${GW_PG_PORT:-55432}
DB=groundwatch_test
DATA=$PGH/data
LOG=$PGH/postgres.log
MARKER=$PGH/started-by-script   # stop only tears down what start created
URL=postgresql+psycopg://postgres@127.0.0.1:$PORT/$DB

die() { echo "postgres.sh: $*" >&2; exit 1; }

# Debian keeps server binaries off PATH, one dir per major version.
pg_bin() {
  local d
  if [[ -n ${GW_PG_BIN:-} ]]; then echo "$GW_PG_BIN"; return; fi
  d=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  if [[ -x $d/initdb ]]; then echo "$d"; return; fi
  d=$(command -v initdb || true)
  [[ -n $d ]] && dirname "$d"
}

BIN=$(pg_bin || true)
ensure_bin() {
  [[ -n $BIN && -x $BIN/initdb ]] && return 0
  ((EUID == 0)) && command -v apt-get >/dev/null || die "no initdb found; install PostgreSQL or set GW_PG_BIN"
  echo "installing PostgreSQL from Debian packages ..."
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  BIN=$(pg_bin || true)
  [[ -x $BIN/initdb ]] || die "initdb still not found after apt-get install postgresql"
}

# initdb/pg_ctl refuse to run as root, so as root we act as the postgres OS user.
# cd: postgres may not be allowed into the caller's cwd (initdb fails on that).
# 9>&-: the postmaster must not inherit our flock, or it would hold the lock for its lifetime.
run() {
  if ((EUID == 0)); then (cd / && runuser -u postgres -- "$@" 9>&-)
  else (cd / && "$@" 9>&-); fi
}

ours_running() { [[ -f $DATA/postmaster.pid ]] && run "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }
serving() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; }
lock() { mkdir -p "$(dirname "$PGH")"; exec 9>"$PGH.lock"; flock -w 120 9 || die "timed out waiting for $PGH.lock"; }

ensure_db() {
  local q=("$BIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -tA)
  [[ $("${q[@]}" -c "select 1 from pg_database where datname = '$DB'") == 1 ]] \
    || "${q[@]}" -c "create database $DB" >/dev/null \
    || die "could not create database $DB on 127.0.0.1:$PORT"
}

init_cluster() {
  if ((EUID == 0)) && ! id postgres >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir "$PGH" --shell /bin/sh postgres
  fi
  rm -rf "$PGH"
  mkdir -p "$PGH/run"
  ((EUID == 0)) && chown -R postgres: "$PGH"
  run test -w "$PGH" || die "postgres user cannot write $PGH (a parent dir is not traversable?)"
  run "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C >"$PGH/initdb.log" 2>&1 \
    || { cat "$PGH/initdb.log" >&2; die "initdb failed"; }
  # Data is thrown away after the run: durability costs time and buys nothing here.
  cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$PGH/run'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
EOF
  touch "$MARKER"
}

start() {
  ensure_bin
  lock
  if ours_running; then
    echo "postgres already running on 127.0.0.1:$PORT ($PGH), reusing"
    ensure_db; return 0
  fi
  if serving; then
    # Someone else's server on this port: use it, never stop it.
    echo "postgres already serving on 127.0.0.1:$PORT (not started by this script), reusing"
    ensure_db; return 0
  fi
  local t0=$SECONDS
  # Our own cluster left over from a crash is restarted as is (postgres recovers it);
  # anything else in the way is replaced by a fresh cluster.
  [[ -f $MARKER && -f $DATA/PG_VERSION ]] || init_cluster
  run "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null \
    || { tail -n 50 "$LOG" >&2; die "pg_ctl start failed; log: $LOG"; }
  ensure_db
  echo "postgres $("$BIN/postgres" --version | awk '{print $3}') ready on 127.0.0.1:$PORT in $((SECONDS - t0))s ($URL)"
}

stop() {
  [[ -n $BIN ]] || die "no PostgreSQL binaries found"
  lock
  if [[ ! -f $MARKER ]]; then
    if serving; then echo "postgres on :$PORT was not started by postgres.sh ($PGH); leaving it"
    else echo "postgres not running on :$PORT"; fi
    return 0
  fi
  if ours_running; then
    # fast = roll back open sessions (test runs may leave some) and shut down cleanly.
    run "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >/dev/null \
      || run "$BIN/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >/dev/null || true
  fi
  rm -rf "$PGH"
  echo "postgres on :$PORT stopped"
}

halt() {
  [[ -n $BIN ]] || die "no PostgreSQL binaries found"
  lock
  [[ -f $MARKER ]] || die "postgres on :$PORT was not started by postgres.sh ($PGH); not halting it"
  ours_running && run "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >/dev/null
  echo "postgres on :$PORT halted (cluster kept in $PGH)"
}

status() {
  if [[ -x $BIN/pg_isready ]] && serving; then echo "postgres serving on 127.0.0.1:$PORT"; return 0; fi
  echo "postgres not running on :$PORT"; return 1
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  halt) halt ;;
  status) status ;;
  url) echo "$URL" ;;
  *) echo "usage: $0 {start|stop|halt|status|url}" >&2; exit 2 ;;
esac
