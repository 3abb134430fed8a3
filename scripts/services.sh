# shellcheck shell=bash
# The servers the tests need, found or started without changing a server the
# script did not start: no role, password, database or setting of a user's
# server is ever altered. Sourced by test.sh (after lib.sh).
#
# For each server: an address given in the environment is used as is;
# otherwise the default local server is used as is when it answers;
# otherwise the script starts one of its own on a free loopback port and
# stops it (and deletes its files) on exit. MariaDB, RabbitMQ and NATS are
# system services: when installed but down they are started, left running,
# and named at the end with how to stop them.

PG_URL_DEFAULT="${PG_URL_DEFAULT:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
REDIS_ADDR_DEFAULT="${REDIS_ADDR_DEFAULT:-127.0.0.1:6379}"

# --- PostgreSQL --------------------------------------------------------------

pg_bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  if [ -n "$d" ]; then echo "$d"; elif command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; fi
}

# as_pg runs a command as the postgres OS user when root (initdb and the
# server refuse root), as the current user otherwise.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# pg_answers URL: a connection to URL works as given, never prompting.
pg_answers() { PGCONNECT_TIMEOUT=5 psql -w -X -q -tA -c 'SELECT 1' "$1" </dev/null >/dev/null 2>&1; }

# start_own_postgres AUTH [PASSWORD] starts a PostgreSQL of our own in a new
# temporary directory on a free loopback port, with database test, stopped
# and deleted on exit. AUTH trust: every local connection is trusted. AUTH
# scram: as a fresh Debian install, the postgres role has PASSWORD over TCP
# (scram-sha-256) and peer authentication on the socket. Sets OWN_PG_DIR
# (also the socket directory) and OWN_PG_PORT.
start_own_postgres() {
  local auth=$1 password=${2:-} bin dir port
  bin=$(pg_bindir)
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    apt_install "no PostgreSQL answers and none is installed: the tests start one of their own" postgresql postgresql-client
    bin=$(pg_bindir)
  fi
  [ -x "$bin/initdb" ] || die "no initdb found after installing postgresql"
  dir=$(mktemp -d "${TMPDIR:-/tmp}/once-pg.XXXXXX")
  chmod 755 "$dir"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$dir"
  port=$(free_port) || die "no free loopback port for PostgreSQL"
  on_exit "stop_own_postgres $(printf %q "$bin") $(printf %q "$dir")"
  local initargs=(-D "$dir/data" -U postgres -E UTF8 --no-sync)
  if [ "$auth" = scram ]; then
    printf '%s\n' "$password" >"$dir/pw"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$dir/pw"
    initargs+=(--auth-local=peer --auth-host=scram-sha-256 --pwfile="$dir/pw")
  else
    initargs+=(--auth=trust)
  fi
  as_pg "$bin/initdb" "${initargs[@]}" >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb"; }
  rm -f "$dir/pw"
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null ||
    { cat "$dir/server.log" >&2; die "PostgreSQL of our own did not start"; }
  own_pid "PostgreSQL on 127.0.0.1:$port ($dir)" "$(head -n1 "$dir/data/postmaster.pid")"
  as_pg "$bin/createdb" -h "$dir" -p "$port" -U postgres test
  # shellcheck disable=SC2034 # read by the callers
  OWN_PG_DIR=$dir OWN_PG_PORT=$port
  log "PostgreSQL of our own on 127.0.0.1:$port ($auth auth, data in $dir), stopped and deleted on exit"
}

stop_own_postgres() {
  local bin=$1 dir=$2
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

# ensure_postgres exports ONCE_POSTGRES_URL: as given; else the default
# local server as is when database test answers with the default URL; else
# a PostgreSQL of our own.
ensure_postgres() {
  command -v psql >/dev/null 2>&1 || apt_install "psql, to reach PostgreSQL for the tests' set-up and clean-up" postgresql-client
  if [ -n "${ONCE_POSTGRES_URL:-}" ]; then
    pg_answers "$ONCE_POSTGRES_URL" || die "PostgreSQL at ONCE_POSTGRES_URL ($(redact "$ONCE_POSTGRES_URL")) does not answer"
    log "PostgreSQL: ONCE_POSTGRES_URL as given ($(redact "$ONCE_POSTGRES_URL"))"
    return 0
  fi
  if pg_answers "$PG_URL_DEFAULT"; then
    export ONCE_POSTGRES_URL=$PG_URL_DEFAULT
    log "PostgreSQL: the local server as is ($(redact "$PG_URL_DEFAULT"))"
    return 0
  fi
  log "PostgreSQL: $(redact "$PG_URL_DEFAULT") does not answer as is; starting one of our own"
  start_own_postgres trust
  export ONCE_POSTGRES_URL="postgres://postgres@127.0.0.1:$OWN_PG_PORT/test?sslmode=disable"
  pg_answers "$ONCE_POSTGRES_URL" || die "PostgreSQL of our own does not answer at $ONCE_POSTGRES_URL"
}

# --- Redis ---------------------------------------------------------------------

need_redis() { command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 || apt_install "redis-server and redis-cli, for the Redis, Redis Cluster and Sentinel tests" redis-server; }

redis_answers() { # host:port
  redis-cli -h "${1%:*}" -p "${1##*:}" ping 2>/dev/null | grep -q PONG
}

# ensure_redis exports ONCE_REDIS_ADDR: as given; else 127.0.0.1:6379 when
# it answers; else a redis-server of our own, stopped on exit.
ensure_redis() {
  need_redis
  if [ -n "${ONCE_REDIS_ADDR:-}" ]; then
    redis_answers "$ONCE_REDIS_ADDR" || die "Redis at ONCE_REDIS_ADDR ($ONCE_REDIS_ADDR) does not answer"
    log "Redis: ONCE_REDIS_ADDR as given ($ONCE_REDIS_ADDR)"
    return 0
  fi
  if redis_answers "$REDIS_ADDR_DEFAULT"; then
    export ONCE_REDIS_ADDR=$REDIS_ADDR_DEFAULT
    log "Redis: the local server as is ($REDIS_ADDR_DEFAULT)"
    return 0
  fi
  local dir port
  dir=$(mktemp -d "${TMPDIR:-/tmp}/once-redis.XXXXXX")
  port=$(free_port) || die "no free loopback port for Redis"
  on_exit "redis-cli -p $port shutdown nosave >/dev/null 2>&1; rm -rf $(printf %q "$dir")"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
  for _ in $(seq 50); do redis_answers "127.0.0.1:$port" && break; sleep 0.1; done
  redis_answers "127.0.0.1:$port" || { cat "$dir/redis.log" >&2; die "Redis of our own did not start"; }
  own_pid "Redis on 127.0.0.1:$port" "$(cat "$dir/redis.pid")"
  export ONCE_REDIS_ADDR="127.0.0.1:$port"
  log "Redis of our own on $ONCE_REDIS_ADDR, stopped on exit"
}

# own_started_redis NAME DIR: the nodes a redis-*.sh start launched (it
# lists their ports in DIR/started) are ours.
own_started_redis() {
  local p
  [ -f "$2/started" ] || return 0
  for p in $(cat "$2/started"); do
    own_pid "$1 node 127.0.0.1:$p" "$(cat "$2/$p/redis.pid")"
  done
}

# ensure_redis_cluster exports ONCE_REDIS_CLUSTER_ADDRS: as given; else the
# six nodes of scripts/redis-cluster.sh on ONCE_REDIS_CLUSTER_BASE_PORT
# (default 7001). Nodes it started are stopped on exit; nodes that already
# ran are used and left alone.
ensure_redis_cluster() {
  need_redis
  if [ -n "${ONCE_REDIS_CLUSTER_ADDRS:-}" ]; then
    log "Redis Cluster: ONCE_REDIS_CLUSTER_ADDRS as given"
    return 0
  fi
  local base=${ONCE_REDIS_CLUSTER_BASE_PORT:-7001} dir addrs="" i
  dir=${ONCE_REDIS_CLUSTER_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/once-redis-cluster.XXXXXX")}
  on_exit "ONCE_REDIS_CLUSTER_BASE_PORT=$base ONCE_REDIS_CLUSTER_DIR=$(printf %q "$dir") scripts/redis-cluster.sh stop >&2"
  ONCE_REDIS_CLUSTER_BASE_PORT=$base ONCE_REDIS_CLUSTER_DIR=$dir scripts/redis-cluster.sh start >&2
  own_started_redis "Redis Cluster" "$dir"
  for ((i = 0; i < 6; i++)); do addrs+="${addrs:+,}127.0.0.1:$((base + i))"; done
  export ONCE_REDIS_CLUSTER_ADDRS=$addrs
}

# ensure_redis_sentinel exports ONCE_REDIS_SENTINEL_ADDRS: as given; else
# the primary, replica and Sentinel of scripts/redis-sentinel.sh.
ensure_redis_sentinel() {
  need_redis
  if [ -n "${ONCE_REDIS_SENTINEL_ADDRS:-}" ]; then
    log "Redis Sentinel: ONCE_REDIS_SENTINEL_ADDRS as given"
    return 0
  fi
  local base=${ONCE_REDIS_SENTINEL_BASE_PORT:-6391} sport=${ONCE_REDIS_SENTINEL_PORT:-26391} dir
  dir=${ONCE_REDIS_SENTINEL_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/once-redis-sentinel.XXXXXX")}
  local envs
  envs="ONCE_REDIS_SENTINEL_BASE_PORT=$base ONCE_REDIS_SENTINEL_PORT=$sport ONCE_REDIS_SENTINEL_DIR=$(printf %q "$dir")"
  on_exit "$envs scripts/redis-sentinel.sh stop >&2"
  eval "$envs scripts/redis-sentinel.sh start >&2"
  own_started_redis "Redis Sentinel" "$dir"
  export ONCE_REDIS_SENTINEL_ADDRS="127.0.0.1:$sport"
}

# --- system services: MariaDB, RabbitMQ, NATS ----------------------------------
# Used only when a test of some module reads their variable.

tests_read() { grep -rqs --include='*.go' -e "$1" .; }

# start_system_service NAME PORT SECONDS HOW-TO-STOP CMD...: when nothing
# listens on PORT, run CMD and wait for PORT; note it as left running.
start_system_service() {
  local name=$1 port=$2 secs=$3 stop=$4
  shift 4
  port_open "$port" && { log "$name: the local server as is (127.0.0.1:$port)"; return 0; }
  log "$name: installed but down; starting the system service"
  "$@" >/dev/null
  wait_port "$port" "$secs" || die "$name did not answer on 127.0.0.1:$port within $secs s"
  note_left_running "$name on 127.0.0.1:$port" "$stop"
}

ensure_mariadb() {
  if [ -n "${ONCE_MYSQL_DSN:-}" ]; then log "MariaDB: ONCE_MYSQL_DSN as given"; return 0; fi
  local fresh=0
  [ -x /usr/sbin/mariadbd ] || { apt_install "MariaDB, for the MySQL store's tests" mariadb-server mariadb-client; fresh=1; }
  [ -d /run/mysqld ] || as_root install -d -o mysql -g mysql /run/mysqld
  start_system_service MariaDB 3306 60 "start-stop-daemon --stop --exec /usr/sbin/mariadbd" \
    as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  if [ "$fresh" = 1 ]; then
    # Installed by this run, so ours to set up: database test, and root
    # over TCP without a password (Debian gives root socket auth only).
    log "MariaDB: installed by this run; creating database test, root over loopback TCP without password"
    as_root mariadb -e "CREATE DATABASE IF NOT EXISTS test; ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('')"
  fi
  export ONCE_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test'
}

ensure_rabbitmq() {
  if [ -n "${ONCE_AMQP_URL:-}" ]; then log "RabbitMQ: ONCE_AMQP_URL as given"; return 0; fi
  command -v rabbitmq-server >/dev/null 2>&1 || apt_install "RabbitMQ, for the AMQP adapter's tests" rabbitmq-server
  start_system_service RabbitMQ 5672 120 "rabbitmqctl stop" as_root rabbitmq-server -detached
  export ONCE_AMQP_URL='amqp://guest:guest@127.0.0.1:5672/'
}

ensure_nats() {
  if [ -n "${ONCE_NATS_URL:-}" ]; then log "NATS: ONCE_NATS_URL as given"; return 0; fi
  [ -x /usr/sbin/nats-server ] || apt_install "nats-server, for the NATS adapter's tests" nats-server
  [ -d /var/lib/nats-server ] || as_root mkdir -p /var/lib/nats-server
  start_system_service NATS 4222 30 "start-stop-daemon --stop --exec /usr/sbin/nats-server" \
    as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server
  export ONCE_NATS_URL='nats://127.0.0.1:4222'
}

# ensure_servers: every server some module's tests read.
ensure_servers() {
  ensure_postgres
  ensure_redis
  ensure_redis_cluster
  ensure_redis_sentinel
  if tests_read ONCE_MYSQL_DSN; then ensure_mariadb; fi
  if tests_read ONCE_AMQP_URL; then ensure_rabbitmq; fi
  if tests_read ONCE_NATS_URL; then ensure_nats; fi
}
