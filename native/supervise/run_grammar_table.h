/* GENERATED from lib/mechanisms/container/grammar.ts by scripts/container-grammar/generate.mjs: do
 * not edit. Change the table there and run `node scripts/container-grammar/generate.mjs`;
 * test/container-grammar.test.ts fails while this file differs from what the table generates.
 *
 * The container clients' grammar for the C wrapper (run_grammar.c includes it, and nothing else):
 * the global flags of each client and the run flags, those that take a value and those that take
 * none; the run booleans that make a run not ours; the inline values of a boolean. */
#ifndef REAPKIT_RUN_GRAMMAR_TABLE_H
#define REAPKIT_RUN_GRAMMAR_TABLE_H

#include <stddef.h>

typedef struct {
  const char *const *values;   /* take a value: the next argument, after '=', or the rest of a short cluster */
  const char *const *booleans; /* take none ('--flag=false' and '-f=false' allowed) */
} flag_table_t;

#define ENGINE_COUNT 3
static const char *const engine_names[] = {"docker", "podman", "nerdctl", NULL};

static const char *const docker_global_values[] = {"-H", "--host", "-c", "--context", "--config", "-l",
    "--log-level", "--tlscacert", "--tlscert", "--tlskey", NULL};
static const char *const docker_global_booleans[] = {"-D", "--debug", "--tls", "--tlsverify", NULL};
static const char *const podman_global_values[] = {"-c", "--connection", "--url", "--identity", "--root",
    "--runroot", "--storage-driver", "--storage-opt", "--cgroup-manager", "--runtime", "--runtime-flag",
    "--log-level", "--events-backend", "--tmpdir", "--conmon", "--network-cmd-path", "--hooks-dir",
    "--module", "--network-config-dir", "--volumepath", "--imagestore", "--ssh", "--registries-conf",
    "--db-backend", "--namespace", NULL};
static const char *const podman_global_booleans[] = {"-r", "--remote", "--syslog", "--noout",
    "--transient-store", NULL};
static const char *const nerdctl_global_values[] = {"-n", "--namespace", "-a", "-H", "--address", "--host",
    "--snapshotter", "--storage-driver", "--cgroup-manager", "--data-root", NULL};
static const char *const nerdctl_global_booleans[] = {"--debug", "--debug-full", "--insecure-registry",
    "--experimental", NULL};
/* Per engine, in engine_names' order. */
static const flag_table_t global_flags[ENGINE_COUNT] = {
    {docker_global_values, docker_global_booleans},
    {podman_global_values, podman_global_booleans},
    {nerdctl_global_values, nerdctl_global_booleans},
};

static const char *const run_values[] = {"-a", "-c", "-e", "-h", "-l", "-m", "-p", "-u", "-v", "-w",
    "--add-host", "--annotation", "--arch", "--attach", "--authfile", "--blkio-weight",
    "--blkio-weight-device", "--cap-add", "--cap-drop", "--cert-dir", "--cgroup-conf", "--cgroup-parent",
    "--cgroupns", "--cgroups", "--chrootdirs", "--cidfile", "--conmon-pidfile", "--cpu-count",
    "--cpu-percent", "--cpu-period", "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime", "--cpu-shares",
    "--cpus", "--cpuset-cpus", "--cpuset-mems", "--credentialspec", "--creds", "--decryption-key",
    "--detach-keys", "--device", "--device-cgroup-rule", "--device-read-bps", "--device-read-iops",
    "--device-write-bps", "--device-write-iops", "--dns", "--dns-opt", "--dns-option", "--dns-search",
    "--domainname", "--entrypoint", "--env", "--env-file", "--env-merge", "--expose", "--gidmap", "--gpus",
    "--group-add", "--group-entry", "--health-cmd", "--health-interval", "--health-log-destination",
    "--health-max-log-count", "--health-max-log-size", "--health-on-failure", "--health-retries",
    "--health-start-interval", "--health-start-period", "--health-startup-cmd", "--health-startup-interval",
    "--health-startup-retries", "--health-startup-success", "--health-startup-timeout", "--health-timeout",
    "--hostname", "--hostuser", "--image-volume", "--init-path", "--io-maxbandwidth", "--io-maxiops", "--ip",
    "--ip6", "--ipc", "--isolation", "--kernel-memory", "--label", "--label-file", "--link",
    "--link-local-ip", "--log-driver", "--log-opt", "--mac-address", "--memory", "--memory-reservation",
    "--memory-swap", "--memory-swappiness", "--mount", "--name", "--net", "--net-alias", "--network",
    "--network-alias", "--oom-score-adj", "--os", "--passwd-entry", "--personality", "--pid", "--pidfile",
    "--pids-limit", "--platform", "--pod", "--pod-id-file", "--preserve-fd", "--preserve-fds", "--publish",
    "--pull", "--rdt-class", "--requires", "--restart", "--retry", "--retry-delay", "--runtime", "--sdnotify",
    "--seccomp-policy", "--secret", "--security-opt", "--shm-size", "--shm-size-systemd", "--stop-signal",
    "--stop-timeout", "--storage-opt", "--subgidname", "--subuidname", "--sysctl", "--systemd", "--timeout",
    "--tmpfs", "--tz", "--uidmap", "--ulimit", "--umask", "--unsetenv", "--user", "--userns", "--uts",
    "--variant", "--volume", "--volume-driver", "--volumes-from", "--workdir", NULL};
static const char *const run_booleans[] = {"-d", "-i", "-t", "-P", "-q", "--detach",
    "--disable-content-trust", "--env-host", "--help", "--http-proxy", "--init", "--interactive",
    "--no-healthcheck", "--no-hosts", "--oom-kill-disable", "--passwd", "--privileged", "--publish-all",
    "--quiet", "--read-only", "--read-only-tmpfs", "--replace", "--rm", "--rmi", "--rootfs", "--sig-proxy",
    "--tls-verify", "--tty", "--unsetenv-all", "--use-api-socket", NULL};
static const flag_table_t run_flags = {run_values, run_booleans};

static const char *const run_not_ours[] = {"-d", "--detach", "--help", NULL};
static const char run_auto_remove[] = "--rm";
static const char *const bool_true[] = {"1", "t", "T", "true", "TRUE", "True", NULL};
static const char *const bool_false[] = {"0", "f", "F", "false", "FALSE", "False", NULL};

#endif
