#!/bin/bash
# floor.sh [ROUNDS]: hourglass serve beside beanstalkd and beside the floor
# of a server of its shape (cmd/floorserve), over the beanstalkd protocol,
# `hourglass bench --jobs 20000 --lateness-jobs 0` against each, fresh
# servers every round, in a fixed rotation: in memory (beanstalkd, floor,
# hourglass serve --store mem://), then on one redis-server of its own
# (beanstalkd, floor with a round trip per command, floor with the
# waiting commands batched, hourglass serve --store redis://). Prints
# put/s and reserve+delete/s, the server's CPU (utime+stime, clock ticks)
# and Redis's (INFO cpu, seconds) over both phases.
#
#   cd bench && ./floor.sh 3
set -euo pipefail
rounds=${1:-3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$here" && go build -o "$tmp/floorserve" ./cmd/floorserve)
(cd "$here/.." && go build -o "$tmp/hourglass" ./cmd/hourglass)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
	for _ in $(seq 100); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on $1" >&2
	return 1
}
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
rpid=$!
pids+=("$rpid")
wait_port "$rport"
rcpu() { redis-cli -p "$rport" info cpu | awk -F: '/used_cpu_(user|sys):/{s+=$2} END{printf "%.3f", s}'; }

run() { # name, then the server's command line with PORT for its port
	local name=$1
	shift
	local port
	port=$(free_port)
	redis-cli -p "$rport" flushall >/dev/null
	"${@//PORT/$port}" >/dev/null 2>&1 &
	local pid=$!
	wait_port "$port"
	local s0 c0 s1 c1 out
	s0=$(ticks "$pid")
	c0=$(rcpu)
	out=$("$tmp/hourglass" bench --addr "127.0.0.1:$port" --jobs 20000 --lateness-jobs 0 | awk '/^put|^reserve/{print $4}' | tr '\n' ' ')
	s1=$(ticks "$pid")
	c1=$(rcpu)
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	printf '%-28s put/s, reserve+delete/s: %s server CPU ticks: %d  Redis CPU s: %.3f  load %s\n' \
		"$name" "$out" $((s1 - s0)) "$(echo "$c1 - $c0" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
}

for r in $(seq "$rounds"); do
	echo "round $r"
	run "beanstalkd" beanstalkd -l 127.0.0.1 -p PORT
	run "floor, in memory" "$tmp/floorserve" -addr 127.0.0.1:PORT
	run "hourglass serve mem://" "$tmp/hourglass" serve --store mem:// --beanstalk-addr 127.0.0.1:PORT --http-addr ""
	run "floor, Redis" "$tmp/floorserve" -addr 127.0.0.1:PORT -redis "127.0.0.1:$rport"
	run "floor, Redis, batched" "$tmp/floorserve" -addr 127.0.0.1:PORT -redis "127.0.0.1:$rport" -batch
	run "hourglass serve redis://" "$tmp/hourglass" serve --store "redis://127.0.0.1:$rport" --beanstalk-addr 127.0.0.1:PORT --http-addr ""
done
