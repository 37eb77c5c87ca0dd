#!/bin/sh
# Starts drover's dev agent in the background (state in .dev-data/) and
# runs the example job; `scripts/dev.sh stop` stops the agent and its tasks.
# DROVER_DEV_DIR, DROVER_DEV_ADDR and DROVER_BIN choose another state
# directory, address and binary. The agent's log is appended to, never
# truncated: the log of an agent that crashed is still there after the
# next start.
set -eu
cd "$(dirname "$0")/.."
BIN=${DROVER_BIN:-./bin/drover}
DEV=${DROVER_DEV_DIR:-.dev-data}
ADDR=${DROVER_DEV_ADDR:-127.0.0.1:4646}
PID_FILE="$DEV/agent.pid"
# How long dev-stop waits for the agent to end, in seconds.
STOP_WAIT=${DROVER_DEV_STOP_WAIT:-20}

# running: the recorded agent is alive (a killed agent not yet reaped by
# its parent is a zombie: not running).
running() {
	[ -f "$PID_FILE" ] || return 1
	pid=$(cat "$PID_FILE")
	kill -0 "$pid" 2>/dev/null || return 1
	! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

# orphans lists the task supervisors left under the dev data dir by an
# agent that died without stopping its tasks.
orphans() {
	data=$(cd "$DEV" 2>/dev/null && pwd)/data
	for f in /proc/[0-9]*/cmdline; do
		# A process may end between the glob and the read: quietly skip it
		# (the braces send the shell's own "cannot open" to /dev/null).
		cmd=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) || continue
		case "$cmd" in
		*task-supervisor*"$data"*) p=${f#/proc/}; echo "${p%/cmdline}" ;;
		esac
	done
}

if [ "${1:-start}" = "stop" ]; then
	if running; then
		pid=$(cat "$PID_FILE")
		kill -TERM "$pid" 2>/dev/null || true
		i=0
		while running && [ $i -lt $((STOP_WAIT * 5)) ]; do sleep 0.2; i=$((i + 1)); done
		if running; then
			# Hung (or stopped with SIGSTOP): keep its record, and its tasks.
			echo "==> the dev agent (pid $pid) did not stop within $STOP_WAIT s; it is still running, and the stop request stays pending (a stopped process ends once it resumes; its log: $DEV/agent.log)" >&2
			exit 1
		fi
		echo "==> dev agent (pid $pid) stopped; its tasks were stopped with it"
	elif [ -f "$PID_FILE" ]; then
		echo "==> the dev agent (pid $(cat "$PID_FILE" 2>/dev/null)) is not running: it ended without make dev-stop, or after an earlier one gave up waiting (its log, $DEV/agent.log, says whether it stopped or crashed)"
	else
		echo "==> no dev agent running"
	fi
	rm -f "$PID_FILE"
	# An agent that crashed left its tasks running under their supervisors:
	# stop those too (each task runs in its own process group).
	for sup in $(orphans); do
		for child in $({ grep -l "^[0-9]* ([^)]*) [A-Z] $sup " /proc/[0-9]*/stat; } 2>/dev/null | cut -d/ -f3); do
			kill -TERM -- "-$child" 2>/dev/null || true
		done
		kill -TERM "$sup" 2>/dev/null || true
		echo "==> stopped tasks left by a crashed agent (supervisor pid $sup)"
	done
	exit 0
fi

mkdir -p "$DEV"
if running; then
	echo "==> dev agent already running (pid $(cat "$PID_FILE")), API at http://$ADDR"
elif "$BIN" node status -address "$ADDR" >/dev/null 2>&1; then
	# Another agent (someone's drover or Nomad) answers there: the job
	# would go to it.
	echo "==> something already answers the API at http://$ADDR (another agent?): set DROVER_DEV_ADDR to a free address" >&2
	exit 1
else
	echo "==> $(date -u +%Y-%m-%dT%H:%M:%SZ): scripts/dev.sh starts the dev agent" >>"$DEV/agent.log"
	nohup "$BIN" agent -dev -data-dir "$DEV/data" -http-addr "$ADDR" >>"$DEV/agent.log" 2>&1 &
	echo $! >"$PID_FILE"
	echo "==> dev agent started (pid $(cat "$PID_FILE")), API at http://$ADDR, log in $DEV/agent.log"
fi

i=0
until "$BIN" node status -address "$ADDR" 2>/dev/null | grep -q ' ready'; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! running; then
		echo "==> the dev agent did not become ready; its log:" >&2
		tail -n 30 "$DEV/agent.log" >&2
		exit 1
	fi
	sleep 0.2
done
if ! running; then
	echo "==> the dev agent ended right after it started; its log:" >&2
	tail -n 30 "$DEV/agent.log" >&2
	exit 1
fi

"$BIN" job run -address "$ADDR" examples/hello.json
sleep 2
echo
"$BIN" job status -address "$ADDR" hello
A=""
if [ "$ADDR" != "127.0.0.1:4646" ]; then
	A=" -address $ADDR"
fi
# make dev-stop finds the agent by its state directory: name it (and the
# address) when they are not the defaults.
STOP="make dev-stop"
if [ "$DEV" != ".dev-data" ]; then
	STOP="DROVER_DEV_DIR=$DEV $STOP"
fi
cat <<MSG

==> The example job "hello" is running: two allocations of a task that says hello every 5 seconds.
    See it:      $BIN job status$A hello
                 $BIN alloc status$A <alloc ID from the table above>
                 tail -f $DEV/data/client/alloc/*/alloc/logs/greeter.stdout.0
    The API:     curl http://$ADDR/v1/job/hello/allocations
    Stop it:     $BIN job stop$A hello        (or: $STOP, which stops the agent too)
MSG
