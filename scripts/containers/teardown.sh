#!/usr/bin/env bash
# Stops the private dockerd that scripts/containers/setup.sh started (and its containerd, which
# exits with it): by the pid in its own pidfile, and only if that pid is still a dockerd running on
# our data root (a stale pidfile's pid may name someone else by now). Bounded: SIGTERM, up to 20 s,
# then SIGKILL. podman runs no daemon; nothing to stop there. The env file then stops naming the
# daemon's socket, so the container tests skip docker (saying why) instead of failing against a
# daemon that is gone; setup.sh writes the line again when it starts one.
set -uo pipefail
ROOT=${REAPKIT_ENGINES_DIR:-/tmp/reapkit-engines}
envfile=$ROOT/engines.env
[ -f "$envfile" ] && sed -i '/^REAPKIT_TEST_DOCKER_HOST=/d' "$envfile"
pidfile=$ROOT/dockerd.pid
[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
case "$pid" in '' | *[!0-9]*) exit 0 ;; esac
cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || exit 0
case "$cmd" in dockerd*"--data-root $ROOT/docker-data"*) ;; *) exit 0 ;; esac
kill -TERM "$pid" 2>/dev/null || exit 0
for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || { echo "containers/teardown: dockerd $pid stopped" >&2; exit 0; }; sleep 0.1; done
kill -KILL "$pid" 2>/dev/null
echo "containers/teardown: dockerd $pid did not stop within 20 s: SIGKILLed" >&2
