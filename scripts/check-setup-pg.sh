#!/usr/bin/env bash
# check-setup-pg.sh [SERVICES]: the set-up of scripts/test.sh changes no
# role, password or database of a PostgreSQL it did not start.
#
# It starts a throwaway PostgreSQL set up as a fresh Debian install is:
# password (scram-sha-256) authentication over TCP, peer authentication on
# the socket for the postgres OS user, plus a role and a database of "the
# user's". It snapshots the roles (names, attributes, password hashes) and
# the databases (names, owners), then runs the set-up functions of SERVICES
# (default scripts/services.sh) as a user would, with PGHOST and PGPORT
# naming that server so that any psql or createdb they run lands on it:
#   1. ONCE_POSTGRES_URL with the password: it must be used as given;
#   2. no ONCE_POSTGRES_URL, and a default URL naming that server without
#      the password: the set-up must start a PostgreSQL of its own, usable,
#      and stop and delete it on exit.
# It fails when a snapshot differs afterwards, or when the set-up's own
# server is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
services=${1:-scripts/services.sh}
. scripts/lib.sh
. scripts/services.sh
trap run_cleanups EXIT

password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
start_own_postgres scram "$password"
host=$OWN_PG_DIR port=$OWN_PG_PORT
su_psql() { as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -U postgres -d postgres "$@"; }
su_psql -c "CREATE ROLE once_check_app LOGIN PASSWORD 'app-secret'" -c "CREATE DATABASE once_check_appdb OWNER once_check_app"

snapshot() {
  su_psql -tA \
    -c "SELECT 'role', rolname, rolsuper, rolcreatedb, rolcanlogin, coalesce(rolpassword, '-') FROM pg_authid ORDER BY rolname" \
    -c "SELECT 'db', datname, pg_get_userbyid(datdba) FROM pg_database ORDER BY datname" \
    -c "SELECT 'setting', setdatabase, setrole, setconfig FROM pg_db_role_setting ORDER BY 2, 3"
}
before=$(snapshot)
[ -n "$before" ] || die "empty snapshot"

url="postgres://postgres:$password@127.0.0.1:$port/test?sslmode=disable"
set +e
(
  set -e
  trap run_cleanups EXIT
  CLEANUPS=() OWNED_PIDS=()
  export PGHOST=$host PGPORT=$port
  unset ONCE_POSTGRES_URL PGPASSWORD PGDATABASE PGUSER
  # shellcheck source=services.sh
  . "$services"

  export ONCE_POSTGRES_URL=$url
  ensure_postgres
  [ "$ONCE_POSTGRES_URL" = "$url" ] || die "case 1: ONCE_POSTGRES_URL was changed to $(redact "$ONCE_POSTGRES_URL")"
  log "case 1 (ONCE_POSTGRES_URL with a password): used as given"

  unset ONCE_POSTGRES_URL
  PG_URL_DEFAULT="postgres://postgres@127.0.0.1:$port/test?sslmode=disable"
  ensure_postgres
  case "$ONCE_POSTGRES_URL" in *":$port/"*) die "case 2: the set-up used the password-protected server: $ONCE_POSTGRES_URL" ;; esac
  pg_answers "$ONCE_POSTGRES_URL" || die "case 2: the set-up's own PostgreSQL does not answer at $ONCE_POSTGRES_URL"
  own=("${OWNED_PIDS[@]}")
  run_cleanups
  check_none_left || die "case 2: the set-up's own PostgreSQL is left running: ${own[*]}"
  log "case 2 (default URL refused): a PostgreSQL of its own, used, then stopped and deleted"
)
setup_rc=$?
set -e

after=$(snapshot)
if [ "$before" != "$after" ]; then
  log "FAILED: the set-up changed the password-protected PostgreSQL:"
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
[ "$setup_rc" = 0 ] || exit 1
log "roles, password hashes and databases unchanged ($(grep -c '^role' <<<"$before") roles, $(grep -c '^db' <<<"$before") databases)"
