#!/usr/bin/env bash
# Single-node Kafka (KRaft, broker+controller) on loopback for tests and local runs.
# No Docker and no Kafka tarball: the broker jars come from Maven Central (cached).
#
# Usage: scripts/kafka.sh {start|stop|status|logs}
# Env:   GW_KAFKA_PORT (9092)            GW_KAFKA_CONTROLLER_PORT (port+1)
#        GW_KAFKA_VERSION (3.9.1)        GW_KAFKA_CACHE (${XDG_CACHE_HOME:-~/.cache}/groundwatch/kafka)
#        GW_KAFKA_HOME (/tmp/groundwatch-kafka-$PORT)  GW_KAFKA_READY_TIMEOUT (90 s)
#        PYTHON (.venv/bin/python, needs aiokafka; runs scripts/wait_kafka.py)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PORT=${GW_KAFKA_PORT:-9092}
CPORT=${GW_KAFKA_CONTROLLER_PORT:-$((PORT + 1))}
VERSION=${GW_KAFKA_VERSION:-3.9.1}
CACHE=${GW_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groundwatch/kafka}
KHOME=${GW_KAFKA_HOME:-/tmp/groundwatch-kafka-$PORT}
READY_TIMEOUT=${GW_KAFKA_READY_TIMEOUT:-90}
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
LIBS=$CACHE/libs-$VERSION
PIDFILE=$KHOME/broker.pid
LOG=$KHOME/broker.log
MARKER=$KHOME/started-by-script   # stop only tears down what start created

die() { echo "kafka.sh: $*" >&2; exit 1; }

# True only if the pid file names a live kafka.Kafka: guards against pid reuse after a
# reboot, and a zombie (empty cmdline) counts as gone.
running() {
  [[ -f $PIDFILE ]] || return 1
  local pid; pid=$(<"$PIDFILE")
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'kafka\.Kafka'
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

client_ready() { "$PYTHON" "$ROOT/scripts/wait_kafka.py" --bootstrap "127.0.0.1:$PORT" --timeout "$1"; }

# Serialise start/stop per port: parallel test runners may call start at the same time.
# The lock lives next to (not in) KHOME because stop deletes KHOME.
lock() { mkdir -p "$(dirname "$KHOME")"; exec 9>"$KHOME.lock"; flock -w 300 9 || die "timed out waiting for $KHOME.lock"; }

fetch_libs() {
  [[ -f $LIBS/kafka_2.13-$VERSION.jar ]] && return 0
  command -v mvn >/dev/null || die "mvn not found (apt-get install -y maven)"
  echo "fetching Kafka $VERSION jars into $LIBS (first run only, ~1 min) ..."
  mkdir -p "$CACHE"
  # Fetch into a private dir and rename, so an interrupted download never looks cached.
  local tmp=$LIBS.partial.$$
  rm -rf "$tmp"
  mvn -B -q -f "$ROOT/deploy/kafka/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DincludeScope=runtime -Dkafka.version="$VERSION" -DoutputDirectory="$tmp" \
    || { rm -rf "$tmp"; die "maven could not fetch org.apache.kafka:kafka_2.13:$VERSION"; }
  [[ -f $tmp/kafka_2.13-$VERSION.jar ]] || { rm -rf "$tmp"; die "kafka_2.13-$VERSION.jar missing after fetch"; }
  rm -rf "$LIBS"
  mv -T "$tmp" "$LIBS" 2>/dev/null || rm -rf "$tmp"   # lost a race with another port's fetch: fine
}

fail() {
  echo "kafka.sh: $*" >&2
  echo "--- last 50 lines of $LOG:" >&2
  tail -n 50 "$LOG" >&2 || true
  echo "--- full log: $LOG" >&2
  # A half-started broker would be "reused" by the next start; kill it but keep the log.
  if running; then kill -KILL "$(<"$PIDFILE")" || true; fi
  rm -f "$MARKER"
  exit 1
}

# "Kafka Server started" alone is not enough (the controller may not have elected itself
# yet), and an open port is not enough (bound before serving): also require a real client.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  until grep -q 'Kafka Server started' "$LOG" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "no 'Kafka Server started' within ${READY_TIMEOUT}s"
    # pid file is written by the child itself; give it a moment before calling the broker dead
    if ! running && ((SECONDS > ${1:-0} + 5)); then fail "broker process exited"; fi
    sleep 0.5
  done
  local left=$((deadline - SECONDS)); ((left > 5)) || left=5
  client_ready "$left" || fail "broker started but aiokafka admin client check failed"
}

start() {
  [[ -x $PYTHON ]] || die "PYTHON=$PYTHON not executable (create .venv or set PYTHON)"
  lock
  if running; then
    echo "kafka already running on 127.0.0.1:$PORT (pid $(<"$PIDFILE"), $KHOME), reusing"
    wait_ready "$SECONDS"
    return 0
  fi
  if port_open "$PORT"; then
    # Someone else's broker (another checkout, docker compose): use it, never stop it.
    client_ready 15 || die "port $PORT is busy but does not answer as Kafka (set GW_KAFKA_PORT)"
    echo "kafka already serving on 127.0.0.1:$PORT (not started by this script), reusing"
    return 0
  fi
  port_open "$CPORT" && die "controller port $CPORT is busy (set GW_KAFKA_CONTROLLER_PORT)"
  command -v java >/dev/null || die "java not found (apt-get install -y openjdk-17-jre-headless)"
  fetch_libs

  # A leftover dir (crash, kill -9) is throw-away, and KRaft refuses to format a dir that
  # already has another cluster id: always start from empty storage.
  rm -rf "$KHOME"
  mkdir -p "$KHOME/data" "$KHOME/logs"
  sed -e "s#^listeners=.*#listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT#" \
      -e "s#^advertised.listeners=.*#advertised.listeners=PLAINTEXT://127.0.0.1:$PORT#" \
      -e "s#^controller.quorum.voters=.*#controller.quorum.voters=1@127.0.0.1:$CPORT#" \
      -e "s#^log.dirs=.*#log.dirs=$KHOME/data#" \
      "$ROOT/deploy/kafka/server.properties" >"$KHOME/server.properties"
  cp "$ROOT/deploy/kafka/log4j.properties" "$KHOME/log4j.properties"

  local t0=$SECONDS cp="$LIBS/*" l4j="-Dlog4j.configuration=file:$KHOME/log4j.properties"
  # Quoted "$LIBS/*": java expands the classpath wildcard, not the shell.
  local cid; cid=$(java -Xmx128m "$l4j" -cp "$cp" kafka.tools.StorageTool random-uuid | tail -n 1)
  java -Xmx256m "$l4j" -cp "$cp" kafka.tools.StorageTool format -t "$cid" \
    -c "$KHOME/server.properties" >"$KHOME/format.log" 2>&1 \
    || { cat "$KHOME/format.log" >&2; die "kafka storage format failed"; }
  touch "$MARKER"

  # setsid: own session, so Ctrl-C / a killed test runner's process group does not take the
  # broker down with it. The child writes its own pid (then execs java), which stays right
  # even where setsid would have to fork.
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
    java -Xms256m -Xmx768m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dkafka.logs.dir="$KHOME/logs" "$l4j" -cp "$cp" kafka.Kafka "$KHOME/server.properties" \
    >"$LOG" 2>&1 </dev/null 9>&- &   # 9>&-: the broker must not inherit (and hold) our lock
  wait_ready "$t0"
  echo "kafka $VERSION ready on 127.0.0.1:$PORT in $((SECONDS - t0))s (pid $(<"$PIDFILE"), log $LOG)"
}

stop() {
  lock
  if [[ ! -f $MARKER ]]; then
    if port_open "$PORT"; then echo "kafka on :$PORT was not started by kafka.sh ($KHOME); leaving it"
    else echo "kafka not running on :$PORT"; fi
    return 0
  fi
  if running; then
    local pid; pid=$(<"$PIDFILE")
    kill -TERM "$pid"   # clean shutdown: controlled leadership handoff, flushed logs
    for _ in $(seq 60); do running || break; sleep 0.5; done
    if running; then echo "broker $pid ignored SIGTERM for 30s, sending SIGKILL"; kill -KILL "$pid" || true; fi
  fi
  rm -rf "$KHOME"
  echo "kafka on :$PORT stopped"
}

status() {
  if running; then echo "kafka running on 127.0.0.1:$PORT (pid $(<"$PIDFILE"), $KHOME)"; return 0; fi
  if port_open "$PORT"; then echo "something serves 127.0.0.1:$PORT (not started by kafka.sh)"; return 0; fi
  echo "kafka not running on :$PORT"; return 1
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  logs) echo "$LOG" ;;
  *) echo "usage: $0 {start|stop|status|logs}" >&2; exit 2 ;;
esac
