#!/usr/bin/env bash
# Container engines for the test suite (issue 18), from Debian's packages only, no registry:
#  - a private dockerd (its own data root, exec root and socket; no iptables, no bridge), so the
#    suite never touches a daemon someone else runs;
#  - podman with runc and cgroupfs (crun refuses this kind of machine's hybrid cgroups, and rlimit
#    changes fail without CAP_SYS_RESOURCE: ../shared/FACTS.md, "Containers");
#  - one image in each, `reapkit-test/busybox`, imported from busybox-static's rootfs.
# Idempotent: a second run finds the daemon and the images and does nothing. Prints the file of
# environment settings the suite reads (REAPKIT_TEST_DOCKER_HOST...); its absence means "skip".
# Usage: scripts/containers/setup.sh [--install]   (--install: apt-get what is missing)
# scripts/containers/teardown.sh stops the private dockerd again (CI runs it when it ends).
set -euo pipefail

ROOT=${REAPKIT_ENGINES_DIR:-/tmp/reapkit-engines}
ENV_FILE=$ROOT/engines.env
IMAGE=reapkit-test/busybox
mkdir -p "$ROOT"
log() { echo "containers/setup: $*" >&2; }

if [ "${1:-}" = "--install" ]; then
  want=()
  command -v dockerd >/dev/null || want+=(docker.io)
  command -v podman >/dev/null || want+=(podman)
  command -v runc >/dev/null || want+=(runc)
  [ -x /bin/busybox ] || want+=(busybox-static)
  if [ "${#want[@]}" -gt 0 ]; then
    log "installing from Debian: ${want[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
  fi
fi

: > "$ENV_FILE.tmp"

# The rootfs: busybox and the applets the tests use, as links.
rootfs=$ROOT/rootfs
if [ ! -x "$rootfs/bin/busybox" ] && [ -x /bin/busybox ]; then
  mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev" "$rootfs/etc"
  cp /bin/busybox "$rootfs/bin/busybox"
  for a in sh sleep cat echo true false trap kill ps ls env wc head; do ln -sf busybox "$rootfs/bin/$a"; done
fi

# Docker: a private daemon.
if command -v dockerd >/dev/null && command -v docker >/dev/null; then
  sock=$ROOT/docker.sock
  export DOCKER_HOST=unix://$sock
  if ! docker version >/dev/null 2>&1; then
    log "starting a private dockerd ($sock)"
    # setsid + nohup: the daemon outlives this script (the suite runs after it) and is nobody's child.
    # From /: a daemon started here must not hold the checkout as its working folder.
    (cd / && exec setsid nohup dockerd --iptables=false --ip6tables=false --bridge=none \
      --data-root "$ROOT/docker-data" --exec-root "$ROOT/docker-exec" -H "$DOCKER_HOST" \
      --pidfile "$ROOT/dockerd.pid" >"$ROOT/dockerd.log" 2>&1 < /dev/null) &
    for _ in $(seq 1 150); do docker version >/dev/null 2>&1 && break; sleep 0.2; done
  fi
  if docker version >/dev/null 2>&1; then
    if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then tar -C "$rootfs" -c . | docker import - "$IMAGE" >/dev/null; fi
    echo "REAPKIT_TEST_DOCKER_HOST=$DOCKER_HOST" >> "$ENV_FILE.tmp"
    log "docker ready ($(docker version --format '{{.Server.Version}}'))"
  else
    log "dockerd did not start; see $ROOT/dockerd.log"
    tail -5 "$ROOT/dockerd.log" >&2 || true
  fi
  unset DOCKER_HOST
fi

# podman: runc, cgroupfs, no default ulimits (FACTS.md).
if command -v podman >/dev/null && command -v runc >/dev/null; then
  conf=/etc/containers/containers.conf
  if ! grep -q 'reapkit' "$conf" 2>/dev/null; then
    if [ -e "$conf" ]; then cp "$conf" "$conf.before-reapkit"; fi
    cat > "$conf" <<'CONF'
# Written by reapkit's scripts/containers/setup.sh (crun refuses hybrid cgroups; no CAP_SYS_RESOURCE)
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
CONF
  fi
  if podman info >/dev/null 2>&1; then
    if ! podman image exists "localhost/$IMAGE"; then tar -C "$rootfs" -c . | podman import - "$IMAGE" >/dev/null; fi
    if podman run --rm "localhost/$IMAGE" true >/dev/null 2>"$ROOT/podman-probe.log"; then
      echo "REAPKIT_TEST_PODMAN=1" >> "$ENV_FILE.tmp"
      log "podman ready ($(podman version --format '{{.Client.Version}}'))"
    else
      log "podman cannot run a container here: $(tail -1 "$ROOT/podman-probe.log")"
    fi
  else
    log "podman info failed"
  fi
fi

echo "REAPKIT_TEST_IMAGE=$IMAGE" >> "$ENV_FILE.tmp"
mv "$ENV_FILE.tmp" "$ENV_FILE"
echo "$ENV_FILE"
