/**
 * The container clients' command-line grammar: which flags docker, podman and nerdctl take before
 * the subcommand and after `run`, and which of them take a value. The one table of it: the library
 * reads an argv with it (command.ts), and the C wrapper (native/supervise/run_grammar.c) with
 * native/supervise/run_grammar_table.h, which scripts/container-grammar/generate.mjs writes from this
 * file. That header is committed (a source build on a user's machine has no TypeScript and no
 * esbuild); test/container-grammar.test.ts fails when it differs from what this file generates, and
 * feeds the same argvs to both readers.
 *
 * Pure data, nothing else: no imports, so that the generator loads it alone.
 */

/** The clients, by program name (the C side numbers them in this order). */
export const ENGINES = ['docker', 'podman', 'nerdctl'] as const

export type ContainerEngine = (typeof ENGINES)[number]

export interface FlagLists {
  /** Flags that take a value (next argument, or after `=`; a short one also the rest of its cluster). */
  values: readonly string[]
  /** Flags that take none (`--flag=true|false` allowed, and `-x=false`). */
  booleans: readonly string[]
}

// Pure (a bundler may drop the tables a file does not use: spawn() reads ENGINES alone at require).
const lists = /* @__NO_SIDE_EFFECTS__ */ (values: string, booleans: string): FlagLists => ({
  values: values.split(' ').filter(Boolean),
  booleans: booleans.split(' ').filter(Boolean),
})

/** Global flags, per client (the contract's lists; anything else before the subcommand: not ours). */
export const GLOBAL_FLAGS: Readonly<Record<ContainerEngine, FlagLists>> = {
  docker: lists('-H --host -c --context --config -l --log-level --tlscacert --tlscert --tlskey', '-D --debug --tls --tlsverify'),
  podman: lists(
    '-c --connection --url --identity --root --runroot --storage-driver --storage-opt --cgroup-manager --runtime ' +
      '--runtime-flag --log-level --events-backend --tmpdir --conmon --network-cmd-path --hooks-dir --module ' +
      '--network-config-dir --volumepath --imagestore --ssh --registries-conf --db-backend --namespace',
    '-r --remote --syslog --noout --transient-store',
  ),
  // -a, -H and --host are all nerdctl's --address
  nerdctl: lists(
    '-n --namespace -a -H --address --host --snapshotter --storage-driver --cgroup-manager --data-root',
    '--debug --debug-full --insecure-registry --experimental',
  ),
}

/**
 * The run flags of docker 20-28, podman 4-5 and nerdctl (one table for all three: where a name is
 * shared, it is of the same kind in each). An unknown one makes the command a plain one.
 */
export const RUN_FLAGS: FlagLists = lists(
  '-a -c -e -h -l -m -p -u -v -w ' +
    '--add-host --annotation --arch --attach --authfile --blkio-weight --blkio-weight-device --cap-add --cap-drop ' +
    '--cert-dir --cgroup-conf --cgroup-parent --cgroupns --cgroups --chrootdirs --cidfile --conmon-pidfile ' +
    '--cpu-count --cpu-percent --cpu-period --cpu-quota --cpu-rt-period --cpu-rt-runtime --cpu-shares --cpus ' +
    '--cpuset-cpus --cpuset-mems --credentialspec --creds --decryption-key --detach-keys --device ' +
    '--device-cgroup-rule --device-read-bps --device-read-iops --device-write-bps --device-write-iops --dns ' +
    '--dns-opt --dns-option --dns-search --domainname --entrypoint --env --env-file --env-merge --expose ' +
    '--gidmap --gpus --group-add --group-entry --health-cmd --health-interval --health-log-destination ' +
    '--health-max-log-count --health-max-log-size --health-on-failure --health-retries --health-start-interval ' +
    '--health-start-period --health-startup-cmd --health-startup-interval --health-startup-retries ' +
    '--health-startup-success --health-startup-timeout --health-timeout --hostname --hostuser --image-volume ' +
    '--init-path --io-maxbandwidth --io-maxiops --ip --ip6 --ipc --isolation --kernel-memory --label ' +
    '--label-file --link --link-local-ip --log-driver --log-opt --mac-address --memory --memory-reservation ' +
    '--memory-swap --memory-swappiness --mount --name --net --net-alias --network --network-alias ' +
    '--oom-score-adj --os --passwd-entry --personality --pid --pidfile --pids-limit --platform --pod ' +
    '--pod-id-file --preserve-fd --preserve-fds --publish --pull --rdt-class --requires --restart --retry ' +
    '--retry-delay --runtime --sdnotify --seccomp-policy --secret --security-opt --shm-size --shm-size-systemd ' +
    '--stop-signal --stop-timeout --storage-opt --subgidname --subuidname --sysctl --systemd --timeout --tmpfs ' +
    '--tz --uidmap --ulimit --umask --unsetenv --user --userns --uts --variant --volume --volume-driver ' +
    '--volumes-from --workdir',
  '-d -i -t -P -q ' +
    '--detach --disable-content-trust --env-host --help --http-proxy --init --interactive --no-healthcheck ' +
    '--no-hosts --oom-kill-disable --passwd --privileged --publish-all --quiet --read-only --read-only-tmpfs ' +
    '--replace --rm --rmi --rootfs --sig-proxy --tls-verify --tty --unsetenv-all --use-api-socket',
)

/**
 * Run booleans that, set, make the run not ours: `-d`/`--detach` (the user asked the container to
 * outlive its client) and `--help` (no container at all).
 */
export const RUN_NOT_OURS: readonly string[] = ['-d', '--detach', '--help']

/** The run boolean that has the engine remove the container once it exits. */
export const RUN_AUTO_REMOVE = '--rm'

/** The run flags that add a label (their values, in order: the engine keeps the last of a key). */
export const RUN_LABEL_FLAGS: readonly string[] = ['-l', '--label']

/**
 * The inline values of a boolean, as Go's strconv.ParseBool reads them (the clients' flag parser):
 * anything else the client refuses, and reapkit does not guess.
 */
export const BOOL_TRUE: readonly string[] = ['1', 't', 'T', 'true', 'TRUE', 'True']
export const BOOL_FALSE: readonly string[] = ['0', 'f', 'F', 'false', 'FALSE', 'False']
