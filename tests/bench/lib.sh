# What every bench script shares (sourced, not run): the broker it runs against, the servers it
# starts, and how a run is measured and a ratio judged.
#
# The broker is a real Apache Kafka broker (tests/support/kafka/broker: KRaft, one node, this
# machine) unless DEDUPCTL_BENCH_KAFKA=mock asks for librdkafka's mock cluster
# (tests/support/mockbroker), kept for comparison with the figures taken on it before.
# The real broker's JVM runs as Kafka's own kafka-server-start.sh runs it (a 1 GB heap, G1, the C2
# compiler), not as the tests start it (C1 only, for a quick start): on C1's code the broker spent
# 5.3-5.6 s of CPU on a replay of 1M events, on C2's 1.5-5.4 s (its compiler threads included, and
# unsteady from run to run: docs/DECISIONS.md), on cores the bench shares. KAFKA_HEAP_OPTS and
# KAFKA_JVM_PERFORMANCE_OPTS, when set, are used as is.
#
# Each measured run records, in $bench_work/runs/NAME, one line: its wall time (s), its peak RSS
# (KB), its own CPU time (s, user + system), and the CPU time (s) the broker and the other servers
# (Redis, PostgreSQL: bench_server) used during it, since they share this machine's cores. A ratio
# is taken run by run (the scripts interleave the runs they compare) and a target is judged met
# when at least two of three runs meet it (DEDUPCTL_BENCH_ROUNDS: another count of rounds).
#
#   bench_begin                    (once, first) installs, builds, makes $bench_work, cleans up at exit
#   bench_kafka TOPIC:PARTITIONS…  starts the broker and makes the topics; sets bootstrap
#   bench_seed TOPIC EVENTS PARTITIONS [ID_IN]
#                                  the seeder's EVENTS of ~200 bytes in TOPIC (ids in headers, or as
#                                  ID_IN says: header, json)
#   bench_redis [ARGS…]            a redis-server on the socket $bench_work/redis.sock; sets redis_sock
#   bench_postgres                 a PostgreSQL on a socket in $bench_work; sets pg_conninfo and psql
#   bench_dedup_keys EVENTS [PX]   the SET commands (Redis protocol, for redis-cli --pipe) of the dedup
#                                  keys of 90% of EVENTS seeded events, "done", with PX ms to live or none
#   bench_server PID               counts PID's CPU (and its reaped children's) as a server's
#   bench_time NAME COMMAND…       one run of COMMAND (its stdout kept in $bench_work/out/NAME)
#   bench_record NAME SECONDS      a time taken some other way (a command's own accounting)
#   bench_show NAME…               the runs of each NAME, one line each
#   bench_ratio LABEL TOP BOTTOM OP TARGET
#                                  per run, TOP's time over BOTTOM's; TOP and BOTTOM are a NAME, or
#                                  NAMEs joined by + (their sum) or by , (the least); OP is <= or >=
#   bench_cpu_floor NAME           per run, the CPU of NAME, the broker and the servers over this
#                                  machine's cores: the least wall time those processes allow together
#   bench_rss_target NAME MB       whether NAME's peak RSS stays at or under MB in two of three runs
#   bench_median NAME FIELD        the median of a field (wall, rss_mb, cpu, broker_cpu, server_cpu)
#   bench_best NAME                the least wall time of NAME's runs

bench_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin="$bench_top/build"
bench_broker=${DEDUPCTL_BENCH_KAFKA:-real}
# kafka-server-start.sh's heap and kafka-run-class.sh's performance options (Kafka 4.3).
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
export KAFKA_JVM_PERFORMANCE_OPTS=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true}
# How many rounds a bench measures (three; one for a long scale run: DEDUPCTL_BENCH_ROUNDS=1). The
# replay bench keeps three: it writes a sink topic a round.
bench_rounds=${DEDUPCTL_BENCH_ROUNDS:-3}
bench_work=""
bench_broker_pid=""
bench_mock_pid=""
bench_servers=()
bench_cleanups=()

bench_begin() {
  if ! [[ "$bench_rounds" =~ ^[1-9][0-9]*$ ]]; then
    echo "bench: DEDUPCTL_BENCH_ROUNDS is a count of rounds (got '$bench_rounds')" >&2
    exit 2
  fi
  case "$bench_broker" in
  real | mock) ;;
  *)
    echo "bench: DEDUPCTL_BENCH_KAFKA is real (the default) or mock (got '$bench_broker')" >&2
    exit 2
    ;;
  esac
  if [ -z "${DEDUPCTL_BENCH_NO_BUILD:-}" ]; then
    "$bench_top/scripts/install-deps"
    "$bench_top/scripts/build"
  fi
  bench_work=$(mktemp -d)
  chmod 755 "$bench_work"
  mkdir "$bench_work/runs" "$bench_work/out"
  trap bench_end EXIT
}

# Registers a command run at exit (before the work folder goes), last registered first.
bench_on_exit() {
  bench_cleanups=("$*" "${bench_cleanups[@]}")
}

bench_end() {
  local cleanup
  for cleanup in "${bench_cleanups[@]}"; do
    eval "$cleanup" >/dev/null 2>&1 || true
  done
  if [ -n "$bench_mock_pid" ]; then
    kill "$bench_mock_pid" 2>/dev/null || true
    wait "$bench_mock_pid" 2>/dev/null || true
  fi
  if [ -d "$bench_work/kafka" ]; then
    "$bench_top/tests/support/kafka/broker" stop "$bench_work/kafka" || true
  fi
  rm -rf "$bench_work"
}

bench_kafka() {
  local spec topics=()
  for spec in "$@"; do
    topics+=(--topic "$spec")
  done
  if [ "$bench_broker" = mock ]; then
    mkfifo "$bench_work/mock.out"
    "$bin/tests/support/mockbroker" "${topics[@]}" >"$bench_work/mock.out" </dev/null &
    bench_mock_pid=$!
    read -r bootstrap <"$bench_work/mock.out"
    bench_broker_pid=$bench_mock_pid
  else
    bootstrap=$("$bench_top/tests/support/kafka/broker" start "$bench_work/kafka")
    bench_broker_pid=$(cat "$bench_work/kafka/broker.pid")
    for spec in "$@"; do
      # The seeder's CreateTimes are from 2023: without retention.ms=-1 the broker deletes them.
      "$bin/tests/support/seeder" -b "$bootstrap" --topic "${spec%%:*}" --create "${spec##*:}" \
        --config retention.ms=-1 >/dev/null
    done
  fi
  echo "bench: $bench_broker broker at $bootstrap" >&2
}

bench_seed() {
  "$bin/tests/support/seeder" -b "$bootstrap" --topic "$1" --generate "$2" --partitions "$3" --id-in "${4:-header}" \
    --payload-size 200 --expect-log-start 0 >/dev/null
}

bench_dedup_keys() {
  awk -v n="$1" -v px="${2:-}" 'function bulk(s) { return "$" length(s) "\r\n" s "\r\n" }
    BEGIN { for (i = 0; i < n; i++) if (i % 10 != 0) {
      k = sprintf("dedup:evt-%012d", i)
      if (px == "") printf "*3\r\n%s%s%s", bulk("SET"), bulk(k), bulk("done")
      else printf "*5\r\n%s%s%s%s%s", bulk("SET"), bulk(k), bulk("done"), bulk("PX"), bulk(px) } }'
}

bench_redis() {
  redis_sock="$bench_work/redis.sock"
  redis-server --port 0 --unixsocket "$redis_sock" --save "" --appendonly no --dir "$bench_work" \
    --logfile "$bench_work/redis.log" "$@" </dev/null >/dev/null 2>&1 &
  local pid=$!
  bench_on_exit "kill $pid; wait $pid"
  bench_server "$pid"
  for _ in $(seq 100); do
    redis-cli -s "$redis_sock" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "bench: redis-server did not start; its log is $bench_work/redis.log" >&2
  exit 1
}

# A PostgreSQL of this machine's packages in $bench_work/pg, on a Unix socket, run as
# $DEDUPCTL_PG_USER (dedupctl, made if missing) when we are root, since it refuses root. Sets
# pg_conninfo and psql (the command, an array).
bench_postgres() {
  local user=${DEDUPCTL_PG_USER:-dedupctl} as_user=() pgbin
  if [ "$(id -u)" -eq 0 ]; then
    id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
    as_user=(runuser -u "$user" --)
  else
    user=$(id -un)
  fi
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  mkdir "$bench_work/pg" "$bench_work/sock"
  chown "$user" "$bench_work/pg" "$bench_work/sock" 2>/dev/null || true
  "${as_user[@]}" "$pgbin/initdb" -D "$bench_work/pg" -U "$user" --auth=trust --no-sync >/dev/null
  "${as_user[@]}" "$pgbin/pg_ctl" -D "$bench_work/pg" -l "$bench_work/pg/log" \
    -o "-k $bench_work/sock -p 5499 -c listen_addresses=''" -w start >/dev/null
  bench_on_exit "${as_user[*]} $pgbin/pg_ctl -D $bench_work/pg -m immediate stop"
  bench_server "$(head -1 "$bench_work/pg/postmaster.pid")"
  pg_conninfo="host=$bench_work/sock port=5499 user=$user dbname=postgres"
  psql=("$pgbin/psql" -X -q -d "$pg_conninfo")
}

bench_server() {
  if ! [[ "$1" =~ ^[0-9]+$ ]]; then
    echo "bench: a server's pid is a number (got '$1')" >&2
    exit 1
  fi
  bench_servers+=("$1")
}

# The CPU time, in clock ticks, of the processes given and their children (PostgreSQL's backends):
# their own and their reaped children's.
bench_cpu_ticks() {
  local pid stat total=0
  # shellcheck disable=SC2046 # one pid a word
  for pid in "$@" $(for pid in "$@"; do pgrep -P "$pid"; done); do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    stat=${stat##*) }
    # shellcheck disable=SC2086 # the fields, split
    set -- $stat
    total=$(( total + ${12} + ${13} + ${14} + ${15} ))
  done
  echo "$total"
}

bench_time() {
  local name=$1 b0 s0 t0 t1 b1 s1 rss user sys pid
  shift
  b0=$(bench_cpu_ticks $bench_broker_pid)
  s0=$(bench_cpu_ticks "${bench_servers[@]}")
  t0=$(date +%s%N)
  /usr/bin/time -f '%M %U %S' -o "$bench_work/time" "$@" >"$bench_work/out/$name"
  t1=$(date +%s%N)
  b1=$(bench_cpu_ticks $bench_broker_pid)
  s1=$(bench_cpu_ticks "${bench_servers[@]}")
  for pid in $bench_broker_pid "${bench_servers[@]}"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "bench: the server of pid $pid ended during the run '$name'; its CPU and the run's figures would be wrong" >&2
      exit 1
    fi
  done
  read -r rss user sys <"$bench_work/time"
  awk -v w=$(( t1 - t0 )) -v r="$rss" -v u="$user" -v s="$sys" -v b=$(( b1 - b0 )) -v v=$(( s1 - s0 )) \
    -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f %d %.2f %.2f %.2f\n", w / 1e9, r, u + s, b / hz, v / hz }' \
    >>"$bench_work/runs/$name"
}

bench_record() {
  echo "$2 0 0 0 0" >>"$bench_work/runs/$1"
}

bench_show() {
  local name
  for name in "$@"; do
    awk -v name="$name" '{ w = w sprintf(" %.3f", $1); r = r sprintf(" %.0f", $2 / 1024); c = c sprintf(" %.2f", $3)
        b = b sprintf(" %.2f", $4); s = s sprintf(" %.2f", $5) }
      END { printf "%-14s wall s%s | peak RSS MB%s | CPU s%s | broker CPU s%s | server CPU s%s\n", name, w, r, c, b, s }' \
      "$bench_work/runs/$name"
  done
}

# The wall times of a NAME, NAMEs joined by + (summed run by run) or by , (the least, run by run),
# one a line.
bench_walls() {
  local spec=$1 names op=+
  if [[ "$spec" == *,* ]]; then op=,; fi
  IFS="$op" read -r -a names <<<"$spec"
  (cd "$bench_work/runs" && awk -v op="$op" '{ v = $1 + 0; if (!(FNR in t)) t[FNR] = v; else if (op == "+") t[FNR] += v;
      else if (v < t[FNR]) t[FNR] = v; n[FNR]++ }
    END { for (i = 1; i in t; i++) if (n[i] == ARGC - 1) printf "%.6f\n", t[i] }' "${names[@]}")
}

bench_ratio() {
  local label=$1 top=$2 bottom=$3 op=$4 target=$5 name
  for name in ${top//[+,]/ } ${bottom//[+,]/ }; do
    if [ ! -s "$bench_work/runs/$name" ]; then
      echo "bench: no runs of $name for $label" >&2
      exit 1
    fi
  done
  paste -d' ' <(bench_walls "$top") <(bench_walls "$bottom") | awk -v label="$label" -v op="$op" -v t="$target" '
    { r = $1 / $2; line = line sprintf("%s%.2f", NR > 1 ? ", " : "", r); runs++
      if ((op == "<=" && r <= t) || (op == ">=" && r >= t)) met++ }
    END { printf "%s: %s (target %s %s: met in %d of %d)\n", label, line, op, t, met, runs }'
}

bench_cpu_floor() {
  awk -v name="$1" -v cores="$(nproc)" '{ f = ($3 + $4 + $5) / cores; floors = floors sprintf("%s%.2f", NR > 1 ? ", " : "", f)
      ratios = ratios sprintf("%s%.2f", NR > 1 ? ", " : "", $1 / f) }
    END { printf "%s: CPU (ours + broker + servers) / %d cores: %s s; wall / that: %s\n", name, cores, floors, ratios }' \
    "$bench_work/runs/$1"
}

bench_rss_target() {
  awk -v name="$1" -v t="$2" '{ mb = $2 / 1024; line = line sprintf("%s%.0f", NR > 1 ? ", " : "", mb); runs++
      if (mb <= t) met++ }
    END { printf "%s peak RSS MB: %s (target <= %s: met in %d of %d)\n", name, line, t, met, runs }' \
    "$bench_work/runs/$1"
}

bench_median() {
  local column
  case "$2" in
  wall) column=1 ;; rss_mb) column=2 ;; cpu) column=3 ;; broker_cpu) column=4 ;; server_cpu) column=5 ;;
  *) echo "bench: no field $2" >&2; exit 1 ;;
  esac
  awk -v c="$column" '{ print $c }' "$bench_work/runs/$1" | sort -g |
    awk -v c="$column" '{ v[NR] = $1 } END { m = v[int((NR + 1) / 2)]; if (c == 2) printf "%.1f\n", m / 1024; else print m }'
}

bench_best() {
  sort -g "$bench_work/runs/$1" | awk 'NR == 1 { print $1 }'
}
