#!/usr/bin/env bash
# redis-sentinel.sh starts or stops a Sentinel-managed Redis for the
# redisstore tests: a primary, one replica and one Sentinel, on loopback
# ports from the same redis-server binary, no persistence.
#
#   scripts/redis-sentinel.sh start   # idempotent; waits until Sentinel knows the primary
#   scripts/redis-sentinel.sh stop    # stops only the servers start launched
#
# A port that already answers is used as it is and never stopped: start
# lists the ports of the servers it launched in DIR/started, and stop shuts
# down those alone.
#
# Environment:
#   ONCE_REDIS_SENTINEL_BASE_PORT  primary port; replica +1 (default 6391, 6392)
#   ONCE_REDIS_SENTINEL_PORT       Sentinel port (default 26391)
#   ONCE_REDIS_SENTINEL_DIR        working directory (default /tmp/once-redis-sentinel)
#
# The tests read ONCE_REDIS_SENTINEL_ADDRS (default 127.0.0.1:26391) and the
# primary's name, "oncemaster".
set -euo pipefail

base=${ONCE_REDIS_SENTINEL_BASE_PORT:-6391}
sport=${ONCE_REDIS_SENTINEL_PORT:-26391}
dir=${ONCE_REDIS_SENTINEL_DIR:-/tmp/once-redis-sentinel}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
primary=$base
replica=$((base + 1))

ping() { "$cli" -h 127.0.0.1 -p "$1" ping >/dev/null 2>&1; }

start_node() {
	local p=$1
	shift
	ping "$p" && return 0
	mkdir -p "$dir/$p"
	"$server" --port "$p" --bind 127.0.0.1 --dir "$dir/$p" --save "" --appendonly no \
		--daemonize yes --logfile "$dir/$p/redis.log" --pidfile "$dir/$p/redis.pid" "$@"
	echo "$p" >>"$dir/started"
	for _ in $(seq 50); do ping "$p" && return 0; sleep 0.1; done
	echo "redis on port $p did not start; see $dir/$p/redis.log" >&2
	exit 1
}

start() {
	mkdir -p "$dir"
	start_node "$primary"
	start_node "$replica" --replicaof 127.0.0.1 "$primary"
	if ! ping "$sport"; then
		mkdir -p "$dir/$sport"
		cat >"$dir/$sport/sentinel.conf" <<CONF
port $sport
bind 127.0.0.1
daemonize yes
logfile $dir/$sport/redis.log
pidfile $dir/$sport/redis.pid
dir $dir/$sport
sentinel monitor oncemaster 127.0.0.1 $primary 1
sentinel down-after-milliseconds oncemaster 2000
sentinel failover-timeout oncemaster 10000
CONF
		"$server" "$dir/$sport/sentinel.conf" --sentinel
		echo "$sport" >>"$dir/started"
	fi
	for _ in $(seq 100); do
		if "$cli" -h 127.0.0.1 -p "$sport" sentinel get-master-addr-by-name oncemaster 2>/dev/null | grep -q 127.0.0.1; then
			echo "redis sentinel ok on port $sport (primary $primary, replica $replica)"
			return
		fi
		sleep 0.1
	done
	echo "sentinel did not learn the primary; see $dir/$sport/redis.log" >&2
	exit 1
}

# shutdown_node PORT: at once, without waiting for lagging replicas (NOW,
# Redis 7+; plain SHUTDOWN NOSAVE before that).
shutdown_node() {
	local out
	out=$("$cli" -h 127.0.0.1 -p "$1" shutdown nosave now 2>&1) || true
	case $out in *ERR*) "$cli" -h 127.0.0.1 -p "$1" shutdown nosave >/dev/null 2>&1 || true ;; esac
}

stop() {
	local p pid pids=() stopped=()
	[ -f "$dir/started" ] || { echo "redis sentinel: no server of ours to stop"; return; }
	# Every node is told first, then waited for: each takes a moment to exit.
	for p in $(tac "$dir/started"); do
		pids+=("$(cat "$dir/$p/redis.pid" 2>/dev/null || true)")
		shutdown_node "$p"
		stopped+=("$p")
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	for p in "${stopped[@]}"; do rm -rf "${dir:?}/$p"; done
	rm -f "$dir/started"
	rmdir "$dir" 2>/dev/null || true
	echo "redis sentinel stopped: ports ${stopped[*]}"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
