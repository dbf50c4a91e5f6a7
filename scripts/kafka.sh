#!/usr/bin/env bash
# Kafka (KRaft) on loopback for tests and local runs: one node (broker+controller, the default)
# or an N-node cluster whose every node is broker and controller (GW_KAFKA_BROKERS=3).
# No Docker and no Kafka tarball: the broker jars come from Maven Central (cached).
#
# Usage: scripts/kafka.sh {start|stop|status|logs|bootstrap}
#        scripts/kafka.sh {kill-node|stop-node|start-node|restart-node|node-pid} I   (I = 1..N)
#   kill-node SIGKILLs node I, stop-node stops it cleanly (SIGTERM), start-node starts it again on
#   its own data (a restart, not a new cluster) and waits until it serves; restart-node = both.
# Env:   GW_KAFKA_BROKERS (1)            nodes of the cluster; node I listens on PORT+I-1 and its
#                                        controller on CPORT+I-1
#        GW_KAFKA_PORT (9092; 19092 for a cluster, clear of the shared single broker)
#        GW_KAFKA_CONTROLLER_PORT (PORT+N)
#        GW_KAFKA_VERSION (3.9.1)        GW_KAFKA_CACHE (${XDG_CACHE_HOME:-~/.cache}/groundwatch/kafka)
#        GW_KAFKA_HOME (/tmp/groundwatch-kafka-$PORT)  GW_KAFKA_READY_TIMEOUT (90 s; 180 for a cluster)
#        GW_KAFKA_HEAP (-Xms256m -Xmx768m; "-Xms96m -Xmx320m" per node of a cluster: 2 cores)
#        PYTHON (.venv/bin/python, needs aiokafka; runs scripts/wait_kafka.py)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${GW_KAFKA_BROKERS:-1}
[[ $N =~ ^[1-9][0-9]?$ ]] || { echo "kafka.sh: GW_KAFKA_BROKERS must be 1..99, got '$N'" >&2; exit 2; }
if ((N == 1)); then PORT=${GW_KAFKA_PORT:-9092}; else PORT=${GW_KAFKA_PORT:-19092}; fi
CPORT=${GW_KAFKA_CONTROLLER_PORT:-$((PORT + N))}
VERSION=${GW_KAFKA_VERSION:-3.9.1}
CACHE=${GW_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/groundwatch/kafka}
KHOME=${GW_KAFKA_HOME:-/tmp/groundwatch-kafka-$PORT}
if ((N == 1)); then
  READY_TIMEOUT=${GW_KAFKA_READY_TIMEOUT:-90}
  HEAP=${GW_KAFKA_HEAP:--Xms256m -Xmx768m}
else
  READY_TIMEOUT=${GW_KAFKA_READY_TIMEOUT:-180}
  # Small heaps, the serial collector and the C1 compiler only: three JVMs share 2 cores with
  # the services under test, and a test cluster carries a few hundred messages a second.
  HEAP=${GW_KAFKA_HEAP:--Xms96m -Xmx320m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}
fi
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
LIBS=$CACHE/libs-$VERSION
MARKER=$KHOME/started-by-script   # stop only tears down what start created
# Replication of the internal topics (consumer offsets, transactions): min(3, N), min ISR RF-1.
RF=$((N < 3 ? N : 3))
MIN_ISR=$((RF > 1 ? RF - 1 : 1))

die() { echo "kafka.sh: $*" >&2; exit 1; }

# A single node keeps the layout it always had (files directly in KHOME); node I of a cluster
# lives in KHOME/node-I.
node_dir() { if ((N == 1)); then echo "$KHOME"; else echo "$KHOME/node-$1"; fi; }
node_port() { echo $((PORT + $1 - 1)); }
node_cport() { echo $((CPORT + $1 - 1)); }
bootstrap() {
  local i out=""
  for ((i = 1; i <= N; i++)); do out+="${out:+,}127.0.0.1:$(node_port "$i")"; done
  echo "$out"
}

# True only if node I's pid file names a live kafka.Kafka: guards against pid reuse after a
# reboot, and a zombie (empty cmdline) counts as gone.
running() {
  local pidfile; pidfile=$(node_dir "$1")/broker.pid
  [[ -f $pidfile ]] || return 1
  local pid; pid=$(<"$pidfile")
  [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'kafka\.Kafka'
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

client_ready() { "$PYTHON" "$ROOT/scripts/wait_kafka.py" --bootstrap "$1" --timeout "$2"; }

# Serialise start/stop per home: parallel test runners may call start at the same time.
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
  local i log
  for ((i = 1; i <= N; i++)); do
    log=$(node_dir "$i")/broker.log
    echo "--- last 30 lines of $log:" >&2
    tail -n 30 "$log" >&2 || true
  done
  # A half-started broker would be "reused" by the next start; kill it but keep the log.
  for ((i = 1; i <= N; i++)); do
    if running "$i"; then kill -KILL "$(<"$(node_dir "$i")/broker.pid")" || true; fi
  done
  rm -f "$MARKER"
  exit 1
}

# "Kafka Server started" alone is not enough (the controller may not have elected itself
# yet), and an open port is not enough (bound before serving): also require a real client.
# $1: node, $2: the log line count before this launch (a restart appends to the log),
# $3: SECONDS at the launch, $4: fail (start) or die (start-node).
wait_node_started() {
  local log; log=$(node_dir "$1")/broker.log
  local deadline=$((SECONDS + READY_TIMEOUT))
  until tail -n +"$(($2 + 1))" "$log" 2>/dev/null | grep -q 'Kafka Server started'; do
    ((SECONDS < deadline)) || "$4" "node $1: no 'Kafka Server started' within ${READY_TIMEOUT}s"
    # pid file is written by the child itself; give it a moment before calling the broker dead
    if ! running "$1" && ((SECONDS > $3 + 5)); then "$4" "node $1: broker process exited"; fi
    sleep 0.5
  done
}

# Launch node I on its existing storage (formatted by start). setsid: own session, so Ctrl-C /
# a killed test runner's process group does not take the broker down with it. The child writes
# its own pid (then execs java), which stays right even where setsid would have to fork.
launch() {
  local dir; dir=$(node_dir "$1")
  local cp="$LIBS/*" l4j="-Dlog4j.configuration=file:$dir/log4j.properties"
  # shellcheck disable=SC2086  # HEAP is a list of JVM options
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$dir/broker.pid" \
    java $HEAP -Djava.awt.headless=true \
    -Dkafka.logs.dir="$dir/logs" "$l4j" -cp "$cp" kafka.Kafka "$dir/server.properties" \
    >>"$dir/broker.log" 2>&1 </dev/null 9>&- &   # 9>&-: the broker must not inherit our lock
}

configure() {   # node I's server.properties and log4j.properties
  local i=$1 dir; dir=$(node_dir "$1")
  local voters="" j
  for ((j = 1; j <= N; j++)); do voters+="${voters:+,}$j@127.0.0.1:$(node_cport "$j")"; done
  mkdir -p "$dir/data" "$dir/logs"
  sed -e "s#^node.id=.*#node.id=$i#" \
      -e "s#^listeners=.*#listeners=PLAINTEXT://127.0.0.1:$(node_port "$i"),CONTROLLER://127.0.0.1:$(node_cport "$i")#" \
      -e "s#^advertised.listeners=.*#advertised.listeners=PLAINTEXT://127.0.0.1:$(node_port "$i")#" \
      -e "s#^controller.quorum.voters=.*#controller.quorum.voters=$voters#" \
      -e "s#^log.dirs=.*#log.dirs=$dir/data#" \
      "$ROOT/deploy/kafka/server.properties" >"$dir/server.properties"
  if ((N > 1)); then
    # A cluster: internal topics replicated like the services' topics, and the thread pools of
    # a small test node (the defaults are sized for a server of its own).
    cat >>"$dir/server.properties" <<PROPS
# --- cluster of $N nodes (scripts/kafka.sh): later keys override the ones above
offsets.topic.replication.factor=$RF
transaction.state.log.replication.factor=$RF
transaction.state.log.min.isr=$MIN_ISR
default.replication.factor=$RF
min.insync.replicas=$MIN_ISR
num.network.threads=2
num.io.threads=2
num.replica.fetchers=1
background.threads=2
log.cleaner.threads=1
controlled.shutdown.enable=true
PROPS
  fi
  cp "$ROOT/deploy/kafka/log4j.properties" "$dir/log4j.properties"
}

start() {
  [[ -x $PYTHON ]] || die "PYTHON=$PYTHON not executable (create .venv or set PYTHON)"
  lock
  local i all=1
  for ((i = 1; i <= N; i++)); do running "$i" || all=0; done
  if ((all)); then
    echo "kafka already running on $(bootstrap) ($KHOME), reusing"
    client_ready "$(bootstrap)" "$READY_TIMEOUT" || fail "running, but the admin client check failed"
    return 0
  fi
  if ((N == 1)) && port_open "$PORT"; then
    # Someone else's broker (another checkout, docker compose): use it, never stop it.
    client_ready "127.0.0.1:$PORT" 15 || die "port $PORT is busy but does not answer as Kafka (set GW_KAFKA_PORT)"
    echo "kafka already serving on 127.0.0.1:$PORT (not started by this script), reusing"
    return 0
  fi
  for ((i = 1; i <= N; i++)); do
    if running "$i"; then die "node $i of $KHOME runs but not all nodes do: '$0 stop' first"; fi
    port_open "$(node_port "$i")" && die "port $(node_port "$i") is busy (set GW_KAFKA_PORT)"
    port_open "$(node_cport "$i")" && die "controller port $(node_cport "$i") is busy (set GW_KAFKA_CONTROLLER_PORT)"
  done
  command -v java >/dev/null || die "java not found (apt-get install -y openjdk-17-jre-headless)"
  fetch_libs

  # A leftover dir (crash, kill -9) is throw-away, and KRaft refuses to format a dir that
  # already has another cluster id: always start from empty storage.
  rm -rf "$KHOME"
  mkdir -p "$KHOME"
  local t0=$SECONDS cp="$LIBS/*" l4j="-Dlog4j.configuration=file:$ROOT/deploy/kafka/log4j.properties"
  # Quoted "$LIBS/*": java expands the classpath wildcard, not the shell.
  local cid; cid=$(java -Xmx128m "$l4j" -cp "$cp" kafka.tools.StorageTool random-uuid | tail -n 1)
  for ((i = 1; i <= N; i++)); do
    configure "$i"
    java -Xmx256m "$l4j" -cp "$cp" kafka.tools.StorageTool format -t "$cid" \
      -c "$(node_dir "$i")/server.properties" >"$(node_dir "$i")/format.log" 2>&1 \
      || { cat "$(node_dir "$i")/format.log" >&2; die "kafka storage format of node $i failed"; }
  done
  touch "$MARKER"
  for ((i = 1; i <= N; i++)); do launch "$i"; done   # all at once: the quorum needs a majority
  for ((i = 1; i <= N; i++)); do wait_node_started "$i" 0 "$t0" fail; done
  local left=$((t0 + READY_TIMEOUT - SECONDS)); ((left > 5)) || left=5
  client_ready "$(bootstrap)" "$left" || fail "brokers started but the aiokafka admin client check failed"
  local pids="" ; for ((i = 1; i <= N; i++)); do pids+="${pids:+ }$(<"$(node_dir "$i")/broker.pid")"; done
  if ((N == 1)); then
    echo "kafka $VERSION ready on 127.0.0.1:$PORT in $((SECONDS - t0))s (pid $pids, log $KHOME/broker.log)"
  else
    echo "kafka $VERSION cluster of $N ready on $(bootstrap) in $((SECONDS - t0))s (pids $pids, $KHOME)"
  fi
}

stop_pid() {   # $1 node: SIGTERM (controlled shutdown, flushed logs), SIGKILL after 30 s
  running "$1" || return 0
  local pid; pid=$(<"$(node_dir "$1")/broker.pid")
  kill -TERM "$pid"
  for _ in $(seq 60); do running "$1" || return 0; sleep 0.5; done
  echo "broker $pid ignored SIGTERM for 30s, sending SIGKILL"
  kill -KILL "$pid" || true
  for _ in $(seq 20); do running "$1" || return 0; sleep 0.25; done
}

stop() {
  lock
  if [[ ! -f $MARKER ]]; then
    if port_open "$PORT"; then echo "kafka on :$PORT was not started by kafka.sh ($KHOME); leaving it"
    else echo "kafka not running on :$PORT"; fi
    return 0
  fi
  local i
  # The last nodes of a cluster cannot shut down in a controlled way once the quorum has no
  # majority: SIGTERM all at once, so they leave together.
  for ((i = 1; i <= N; i++)); do running "$i" && kill -TERM "$(<"$(node_dir "$i")/broker.pid")"; done
  for ((i = 1; i <= N; i++)); do stop_pid "$i"; done
  rm -rf "$KHOME"
  if ((N == 1)); then echo "kafka on :$PORT stopped"; else echo "kafka cluster on $(bootstrap) stopped"; fi
}

status() {
  local i up=0
  for ((i = 1; i <= N; i++)); do running "$i" && up=$((up + 1)); done
  if ((N == 1)); then
    if ((up)); then echo "kafka running on 127.0.0.1:$PORT (pid $(<"$KHOME/broker.pid"), $KHOME)"; return 0; fi
    if port_open "$PORT"; then echo "something serves 127.0.0.1:$PORT (not started by kafka.sh)"; return 0; fi
    echo "kafka not running on :$PORT"; return 1
  fi
  echo "kafka cluster $KHOME: $up of $N nodes running ($(bootstrap))"
  ((up == N))
}

node_arg() {
  [[ ${1:-} =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= N)) || { echo "kafka.sh: node must be 1..$N, got '${1:-}'" >&2; exit 2; }
  [[ -f $MARKER ]] || die "no cluster started by kafka.sh in $KHOME"
}

kill_node() {
  node_arg "$1"
  running "$1" || { echo "node $1 is not running"; return 0; }
  local pid; pid=$(<"$(node_dir "$1")/broker.pid")
  kill -KILL "$pid"
  for _ in $(seq 100); do running "$1" || break; sleep 0.1; done
  echo "node $1 (pid $pid) killed"
}

# start-node's failure: what the node logged since this launch (why a restarted broker exited:
# the test that restarts it reports our stderr, and the cluster's files go with the test), then
# die. Uses start_node's NODE_LOG and NODE_BEFORE.
die_node() {
  echo "kafka.sh: $*" >&2
  echo "--- $NODE_LOG since this launch (last 40 lines):" >&2
  tail -n +"$((NODE_BEFORE + 1))" "$NODE_LOG" 2>/dev/null | tail -n 40 >&2 || true
  exit 1
}

start_node() {
  node_arg "$1"
  if running "$1"; then echo "node $1 already running"; return 0; fi
  NODE_LOG=$(node_dir "$1")/broker.log
  local t0=$SECONDS; NODE_BEFORE=$(wc -l <"$NODE_LOG" 2>/dev/null || echo 0)
  launch "$1"
  wait_node_started "$1" "$NODE_BEFORE" "$t0" die_node
  # its own port serves clients (metadata, a topic, a coordinator) once it has caught up
  client_ready "127.0.0.1:$(node_port "$1")" "$READY_TIMEOUT" || die_node "node $1 started but does not serve clients"
  echo "node $1 back on 127.0.0.1:$(node_port "$1") in $((SECONDS - t0))s (pid $(<"$(node_dir "$1")/broker.pid"))"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status) status ;;
  logs) for ((i = 1; i <= N; i++)); do echo "$(node_dir "$i")/broker.log"; done ;;
  bootstrap) bootstrap ;;
  kill-node) kill_node "${2:-}" ;;
  stop-node) node_arg "${2:-}"; stop_pid "$2"; echo "node $2 stopped" ;;
  start-node) start_node "${2:-}" ;;
  restart-node) node_arg "${2:-}"; stop_pid "$2"; start_node "$2" ;;
  node-pid) node_arg "${2:-}"; running "$2" && cat "$(node_dir "$2")/broker.pid" ;;
  *) echo "usage: $0 {start|stop|status|logs|bootstrap} | {kill-node|stop-node|start-node|restart-node|node-pid} I" >&2; exit 2 ;;
esac
