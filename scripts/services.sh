# Makes sure PostgreSQL and Redis answer on loopback, starting them when
# installed but down and installing them with apt when missing, and starts
# the loopback Redis Cluster the cluster tests use. Sourced by test.sh.

PG_URL_DEFAULT="postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable"

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

ensure_postgres() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    apt_install postgresql postgresql-client
  fi
  if ! pg_up; then
    log "starting PostgreSQL"
    local v
    v=$(ls /etc/postgresql | sort -V | tail -n1)
    as_root pg_ctlcluster --skip-systemctl-redirect "$v" main start || true
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  fi
  pg_up || { log "PostgreSQL does not answer on 127.0.0.1:5432"; return 1; }
  # A fresh install authenticates TCP clients with a password: give the
  # postgres role the one in the default URL, and create the test database.
  # Where the server trusts loopback (CI here), both are harmless.
  as_root su postgres -c "psql -q -c \"ALTER ROLE postgres PASSWORD 'postgres'\"" >/dev/null 2>&1 || true
  as_root su postgres -c "psql -tAc \"SELECT 1 FROM pg_database WHERE datname='test'\" | grep -q 1 || createdb test" >/dev/null 2>&1 || true
  export ONCE_POSTGRES_URL="${ONCE_POSTGRES_URL:-$PG_URL_DEFAULT}"
}

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

ensure_redis() {
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  if ! redis_up; then
    log "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /tmp >/dev/null
    for _ in $(seq 1 30); do redis_up && break; sleep 0.2; done
  fi
  redis_up || { log "Redis does not answer on 127.0.0.1:6379"; return 1; }
  export ONCE_REDIS_ADDR="${ONCE_REDIS_ADDR:-127.0.0.1:6379}"
  scripts/redis-cluster.sh start
  scripts/redis-sentinel.sh start
}
