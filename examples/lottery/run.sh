#!/usr/bin/env bash
# Three replicas of the lottery service share one Redis and draw every 5
# seconds: each line comes from whichever replica won that run, and no run is
# drawn twice. Ctrl-C stops everything.
#
#   examples/lottery/run.sh                  # starts its own redis-server
#   REDIS_URL=redis://host:port/0 examples/lottery/run.sh
#   examples/lottery/run.sh --no-solocron    # extra flags go to every replica
#
# Needs bash 4.3 or later, Go and, unless REDIS_URL is set, redis-server. It never touches port
# 6379: its own Redis listens on a free loopback port, in a temporary
# directory, with persistence off, and is gone when the script ends.
set -euo pipefail

cd "$(dirname "$0")/../.." # the repository root, wherever we are called from
work=$(mktemp -d)
replicas=()
redis_pid=""

cleanup() {
	trap - EXIT INT TERM
	# Replicas first, so none of them is cut off from Redis while stopping.
	if ((${#replicas[@]})); then
		kill -TERM "${replicas[@]}" 2>/dev/null || true
		wait "${replicas[@]}" 2>/dev/null || true
	fi
	if [[ -n $redis_pid ]]; then
		kill -TERM "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# redis_ping PORT: true when a Redis server answers PING on 127.0.0.1:PORT.
redis_ping() {
	local reply=""
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'PING\r\n' >&3
	IFS= read -r -t 1 reply <&3 || true
	exec 3<&- 3>&-
	[[ $reply == "+PONG"* ]]
}

# start_redis: a redis-server on a free loopback port; sets port and redis_pid.
start_redis() {
	local pid
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		if redis_ping "$port" 2>/dev/null || (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue # something listens there already
		fi
		redis-server --port "$port" --bind 127.0.0.1 --dir "$work" --save "" --appendonly no \
			--logfile "$work/redis.log" &
		pid=$!
		for _ in $(seq 50); do
			if redis_ping "$port" 2>/dev/null; then
				redis_pid=$pid
				return 0
			fi
			kill -0 "$pid" 2>/dev/null || break # it could not bind: try another port
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	echo "could not start redis-server; its log:" >&2
	cat "$work/redis.log" >&2 2>/dev/null || true
	return 1
}

if [[ -z ${REDIS_URL:-} ]]; then
	if ! command -v redis-server >/dev/null; then
		echo "redis-server not found: install it (Debian/Ubuntu: apt-get install redis-server) or set REDIS_URL" >&2
		exit 1
	fi
	start_redis
	export REDIS_URL="redis://127.0.0.1:$port/0"
	echo "started redis-server on 127.0.0.1:$port (pid $redis_pid)"
fi

go build -o "$work/lottery" ./examples/lottery
echo "three replicas, a draw every 5 seconds; Ctrl-C to stop"
for i in 1 2 3; do
	"$work/lottery" --redis "$REDIS_URL" --replica-id "replica-$i" \
		--schedule "*/5 * * * * *" "$@" &
	replicas+=("$!")
done
# Until Ctrl-C, or until a replica (a bad flag, say) or Redis exits.
wait -n
