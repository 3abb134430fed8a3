#!/usr/bin/env bash
# redis-cluster.sh starts or stops a local Redis Cluster for the redisstore
# tests: 3 masters, each with one replica (the failover test needs replicas),
# on loopback ports BASE..BASE+5 (default 7001-7006), no persistence.
#
#   scripts/redis-cluster.sh start   # idempotent; waits for cluster_state:ok
#   scripts/redis-cluster.sh stop    # stops only the nodes start launched
#
# A port that already answers is used as it is and never stopped: start
# lists the ports of the nodes it launched in DIR/started, and stop shuts
# down those alone.
#
# Environment:
#   ONCE_REDIS_CLUSTER_BASE_PORT  first port (default 7001)
#   ONCE_REDIS_CLUSTER_DIR        working directory (default /tmp/once-redis-cluster)
#   REDIS_SERVER, REDIS_CLI       binaries (default: redis-server, redis-cli on PATH)
#
# The tests read ONCE_REDIS_CLUSTER_ADDRS (default 127.0.0.1:7001,...,:7006).
set -euo pipefail

base=${ONCE_REDIS_CLUSTER_BASE_PORT:-7001}
dir=${ONCE_REDIS_CLUSTER_DIR:-/tmp/once-redis-cluster}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
nodes=6
ports=()
for ((i = 0; i < nodes; i++)); do ports+=($((base + i))); done

ping() { "$cli" -h 127.0.0.1 -p "$1" ping >/dev/null 2>&1; }

cluster_ok() {
	local p
	for p in "${ports[@]}"; do
		"$cli" -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
	done
}

start() {
	local p
	mkdir -p "$dir"
	for p in "${ports[@]}"; do
		if ping "$p"; then
			continue
		fi
		mkdir -p "$dir/$p"
		# A node restarted without its nodes.conf would be a fresh,
		# unassigned node: start clean so `cluster create` rebuilds.
		rm -f "$dir/$p/nodes.conf"
		"$server" --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file nodes.conf --cluster-node-timeout 2000 \
			--dir "$dir/$p" --save "" --appendonly no --daemonize yes \
			--logfile "$dir/$p/redis.log" --pidfile "$dir/$p/redis.pid"
		echo "$p" >>"$dir/started"
	done
	for p in "${ports[@]}"; do
		for _ in $(seq 50); do ping "$p" && break; sleep 0.1; done
		ping "$p" || { echo "redis on port $p did not start; see $dir/$p/redis.log" >&2; exit 1; }
	done
	if cluster_ok; then
		echo "redis cluster already running on ports ${ports[0]}-${ports[-1]}"
		return
	fi
	# Assigned slots on the first node mean the cluster exists and is
	# still converging; otherwise create it.
	if [[ $("$cli" -h 127.0.0.1 -p "${ports[0]}" cluster info | tr -d '\r' | awk -F: '/^cluster_slots_assigned/{print $2}') == 0 ]]; then
		local addrs=()
		for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
		"$cli" --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
			{ cat "$dir/create.log" >&2; exit 1; }
	fi
	for _ in $(seq 150); do
		if cluster_ok; then
			echo "redis cluster ok on ports ${ports[0]}-${ports[-1]}"
			return
		fi
		sleep 0.2
	done
	echo "redis cluster did not reach cluster_state:ok" >&2
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
	[ -f "$dir/started" ] || { echo "redis cluster: no node of ours to stop"; return; }
	# Every node is told first, then waited for: each takes a moment to exit.
	for p in $(cat "$dir/started"); do
		pids+=("$(cat "$dir/$p/redis.pid" 2>/dev/null || true)")
		shutdown_node "$p"
		stopped+=("$p")
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	for p in "${stopped[@]}"; do rm -rf "${dir:?}/$p"; done
	rm -f "$dir/started" "$dir/create.log"
	rmdir "$dir" 2>/dev/null || true
	echo "redis cluster stopped: ports ${stopped[*]}"
}

case ${1:-} in
start) start ;;
stop) stop ;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
