/* Containers: knowing that the command is a `docker run` (podman, nerdctl) and labelling its
 * container so that the stop can find it through the engine (engine.c).
 *
 * `docker run -i --rm IMAGE` is a client: the container belongs to the engine's daemon, not to our
 * process tree, so no signal of ours reaches it. The command's argv alone says (no shell, never a
 * guess: anything not understood is left a plain command):
 *
 *   engine [global flags] run|container run [run flags] IMAGE [args...]
 *
 * and we add, after the user's run flags (right before the image), two labels: `reapkit.run=<32 hex>`, a fresh random id
 * that is the container's identity for every engine call (`ps -a --filter label=...` finds it even
 * when the client died before it learnt an id), and `reapkit.owner=<host>/<boot id>/<pid>/<start>/pidns:<inode>`,
 * who stops it (reapkit doctor tells a leftover from a live run by it). `-d`/`--detach` runs are
 * not ours to stop: the user asked them to outlive the client. */

#include "supervise.h"

container_t ctr;

enum engine_kind { ENGINE_NONE, ENGINE_DOCKER, ENGINE_PODMAN, ENGINE_NERDCTL };
static const char *const engine_names[] = {"", "docker", "podman", "nerdctl"};

/* Global flags before the subcommand, per engine: those that take a value (as the next argument,
 * unless written --flag=value) and those that take none. Anything else: not recognized. */
static const char *const docker_value[] = {"-H", "--host", "-c", "--context", "--config", "-l", "--log-level",
                                           "--tlscacert", "--tlscert", "--tlskey", NULL};
static const char *const docker_bool[] = {"-D", "--debug", "--tls", "--tlsverify", NULL};
static const char *const podman_value[] = {
    "-c", "--connection", "--url", "--identity", "--root", "--runroot", "--storage-driver", "--storage-opt",
    "--cgroup-manager", "--runtime", "--runtime-flag", "--log-level", "--events-backend", "--tmpdir", "--conmon",
    "--network-cmd-path", "--hooks-dir", "--module", "--network-config-dir", "--volumepath", "--imagestore", "--ssh",
    "--registries-conf", "--db-backend", NULL};
static const char *const podman_bool[] = {"-r", "--remote", "--syslog", "--noout", NULL};
static const char *const nerdctl_value[] = {"-n", "--namespace", "-a", "--address", "-H", "--host", "--snapshotter",
                                            "--cgroup-manager", "--data-root", NULL};
static const char *const nerdctl_bool[] = {"--debug", "--debug-full", "--insecure-registry", NULL};

static enum engine_kind engine_of(const char *argv0) {
  const char *base = strrchr(argv0, '/');
  base = base ? base + 1 : argv0;
  size_t n = strlen(base);
  if (n > 4 && strcasecmp(base + n - 4, ".exe") == 0) n -= 4;
  for (int k = ENGINE_DOCKER; k <= ENGINE_NERDCTL; k++)
    if (n == strlen(engine_names[k]) && strncasecmp(base, engine_names[k], n) == 0) return (enum engine_kind)k;
  return ENGINE_NONE;
}

/* 1: in the list, as `flag` or `flag=...` (*inline_value set for the latter); 0: not. */
static int flag_in(const char *const *list, const char *arg, int *inline_value) {
  for (; *list; list++) {
    size_t n = strlen(*list);
    if (strncmp(arg, *list, n) != 0) continue;
    if (arg[n] == '\0' || (arg[n] == '=' && (*list)[1] == '-')) {
      *inline_value = arg[n] == '=';
      return 1;
    }
  }
  return 0;
}

/* The index of the `run` token after the globals, or -1; *globals_end: where the globals end (the
 * `container` of `container run`, or `run` itself). */
static int find_run(char **argv, enum engine_kind kind, int *globals_end) {
  const char *const *value = kind == ENGINE_DOCKER ? docker_value : kind == ENGINE_PODMAN ? podman_value : nerdctl_value;
  const char *const *boolean = kind == ENGINE_DOCKER ? docker_bool : kind == ENGINE_PODMAN ? podman_bool : nerdctl_bool;
  for (int i = 1; argv[i] != NULL; i++) {
    const char *a = argv[i];
    int inline_value = 0;
    if (strcmp(a, "run") == 0) {
      *globals_end = i;
      return i;
    }
    if (strcmp(a, "container") == 0) {
      *globals_end = i;
      return argv[i + 1] != NULL && strcmp(argv[i + 1], "run") == 0 ? i + 1 : -1;
    }
    if (flag_in(value, a, &inline_value)) {
      if (!inline_value && argv[++i] == NULL) return -1;
    } else if (!flag_in(boolean, a, &inline_value)) {
      return -1; /* another subcommand, or a flag we do not know: never guess */
    }
  }
  return -1;
}

/* Fills `out` with 32 hex digits of kernel randomness; 0 on success. */
static int random_hex(char out[33]) {
  unsigned char raw[16];
  ssize_t got = -1;
#if RK_LINUX && defined(SYS_getrandom)
  got = syscall(SYS_getrandom, raw, sizeof raw, 0);
#endif
  if (got != (ssize_t)sizeof raw) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    got = read(fd, raw, sizeof raw);
    close(fd);
    if (got != (ssize_t)sizeof raw) return -1;
  }
  for (size_t i = 0; i < sizeof raw; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
  return 0;
}

/* 1 when this /proc numbers processes as our PID namespace does (its `self` is our pid); 0 under a
 * /proc mounted for another namespace (`unshare --pid --fork` without `--mount-proc`), where the
 * entry at our pid number is another process, if any, and where there is no /proc. */
static int proc_is_ours(void) {
#if RK_LINUX
  char link[32];
  ssize_t n = readlink("/proc/self", link, sizeof link - 1);
  if (n <= 0) return 0;
  link[n] = '\0';
  return strtol(link, NULL, 10) == (long)getpid();
#else
  return 0;
#endif
}

/* "/pidns:<inode>": the PID namespace our pid is a number in (doctor judges an owner only from its
 * own namespace). Always written on Linux, as the library does (owner.ts): /proc/self/ns/pid is our
 * own through any /proc, and a label without it would be judged by its pid in the reader's
 * namespace; "/pidns:-" where even that cannot be read (never judged). "" where there are no PID
 * namespaces (not Linux). */
static void pid_namespace(char *buf, size_t size) {
  buf[0] = '\0';
#if RK_LINUX
  char link[64];
  ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
  unsigned long long ino = 0;
  char tail = 0;
  snprintf(buf, size, "/pidns:-");
  if (n <= 0) return;
  link[n] = '\0';
  if (sscanf(link, "pid:[%llu%c", &ino, &tail) == 2 && tail == ']' && ino > 0) snprintf(buf, size, "/pidns:%llu", ino);
#else
  (void)size;
#endif
}

/* reapkit.owner=<hostname>/<boot_id>/<pid>/<starttime>[/pidns:<inode>] ("-" where the system has
 * no such thing; the start time "-" too under a /proc that is not of our namespace). */
static void owner_label(char *buf, size_t size) {
  char host[256] = "-", boot[64] = "-", start[32] = "-", ns[40];
  if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "-");
  host[sizeof host - 1] = '\0';
#if RK_LINUX
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, boot, sizeof boot - 1);
    close(fd);
    boot[n > 0 ? n : 0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    if (boot[0] == '\0') strcpy(boot, "-");
  }
  proc_t self;
  if (proc_is_ours() && read_stat(getpid(), &self) == 0) snprintf(start, sizeof start, "%llu", self.start);
#endif
  pid_namespace(ns, sizeof ns);
  snprintf(buf, size, "reapkit.owner=%s/%s/%d/%s%s", host, boot, (int)getpid(), start, ns);
}

/* Where execvp would find `name` (a PATH search, or the name itself when it holds a '/'), made
 * absolute: we leave the starting folder once the command runs. 0 on success. */
static int resolve_engine(const char *name, char *out, size_t size) {
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == NULL) return -1;
  if (strchr(name, '/') != NULL) {
    int n = snprintf(out, size, "%s%s%s", name[0] == '/' ? "" : cwd, name[0] == '/' ? "" : "/", name);
    return n > 0 && (size_t)n < size && access(out, X_OK) == 0 ? 0 : -1;
  }
  const char *path = getenv("PATH");
  if (path == NULL) path = "/bin:/usr/bin"; /* the C library's default search path */
  for (const char *p = path;; p++) {
    size_t len = strcspn(p, ":");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)len, p);
    if (dir[0] == '\0') strcpy(dir, "."); /* an empty entry is the current folder */
    int n = snprintf(out, size, "%s%s%s/%s", dir[0] == '/' ? "" : cwd, dir[0] == '/' ? "" : "/", dir, name);
    struct stat s;
    if (n > 0 && (size_t)n < size && stat(out, &s) == 0 && S_ISREG(s.st_mode) && access(out, X_OK) == 0) return 0;
    p += len;
    if (*p == '\0') return -1;
  }
}

/* The run flags of docker, podman and nerdctl that take a value (as the next argument unless written
 * --flag=value, or glued to a short flag), and those that take none. The image is the first
 * argument that is not a flag or a flag's value; an unknown flag before it makes the run unknown. */
static const char *const run_value[] = {
    "add-host", "annotation", "arch", "attach", "authfile", "blkio-weight", "blkio-weight-device", "cap-add",
    "cap-drop", "cert-dir", "cgroup-conf", "cgroup-parent", "cgroupns", "cgroups", "chrootdirs", "cidfile",
    "conmon-pidfile", "cpu-count", "cpu-percent", "cpu-period", "cpu-quota", "cpu-rt-period", "cpu-rt-runtime",
    "cpu-shares", "cpus", "cpuset-cpus", "cpuset-mems", "creds", "decryption-key", "detach-keys", "device",
    "device-cgroup-rule", "device-read-bps", "device-read-iops", "device-write-bps", "device-write-iops", "dns",
    "dns-opt", "dns-option", "dns-search", "domainname", "entrypoint", "env", "env-file", "env-merge", "expose",
    "gidmap", "gpus", "group-add", "group-entry", "health-cmd", "health-interval", "health-log-destination",
    "health-max-log-count", "health-max-log-size", "health-on-failure", "health-retries", "health-start-interval",
    "health-start-period", "health-startup-cmd", "health-startup-interval", "health-startup-retries",
    "health-startup-success", "health-startup-timeout", "health-timeout", "hostname", "hostuser", "image-volume",
    "init-path", "io-maxbandwidth", "io-maxiops", "ip", "ip6", "ipc", "isolation", "kernel-memory", "label",
    "label-file", "link", "link-local-ip", "log-driver", "log-opt", "mac-address", "memory", "memory-reservation",
    "memory-swap", "memory-swappiness", "mount", "name", "net", "net-alias", "network", "network-alias",
    "oom-score-adj", "os", "passwd-entry", "personality", "pid", "pidfile", "pids-limit", "platform", "pod",
    "pod-id-file", "preserve-fds", "publish", "pull", "rdt-class", "requires", "restart", "retry", "retry-delay",
    "runtime", "seccomp-policy", "secret", "security-opt", "shm-size", "shm-size-systemd", "stop-signal",
    "stop-timeout", "storage-opt", "subgidname", "subuidname", "sysctl", "systemd", "timeout", "tmpfs", "tz",
    "uidmap", "ulimit", "umask", "unsetenv", "user", "userns", "uts", "variant", "volume", "volume-driver",
    "volumes-from", "workdir", NULL};
static const char *const run_bool[] = {
    "detach", "disable-content-trust", "env-host", "http-proxy", "init", "interactive", "no-healthcheck", "no-hosts",
    "oom-kill-disable", "passwd", "privileged", "publish-all", "quiet", "read-only", "read-only-tmpfs", "replace",
    "rm", "rootfs", "sig-proxy", "tls-verify", "tty", "use-api-socket", NULL};
static const char run_short_value[] = "acehlmpuvw";
static const char run_short_bool[] = "dPqit";

static int word_in(const char *const *list, const char *word, size_t n) {
  for (; *list; list++)
    if (strlen(*list) == n && strncmp(*list, word, n) == 0) return 1;
  return 0;
}

/* A boolean flag's value as the engines' flag parser (Go's strconv.ParseBool) reads it: `--rm` and
 * `--rm=1|t|T|true|TRUE|True` set it, `--rm=0|f|F|false|FALSE|False` clear it; -1 for anything else
 * (the engine refuses it: we do not guess). */
static int bool_value(const char *eq) {
  static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True", NULL};
  static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False", NULL};
  if (eq == NULL) return 1;
  for (int i = 0; yes[i] != NULL; i++)
    if (strcmp(eq + 1, yes[i]) == 0) return 1;
  for (int i = 0; no[i] != NULL; i++)
    if (strcmp(eq + 1, no[i]) == 0) return 0;
  return -1;
}

/* `-itd`, `-eKEY=v`, `-p 80:80`: returns how many arguments the cluster used (1 or 2), -1 unknown. */
static int short_cluster(char **argv, int i, int *detach) {
  for (const char *c = argv[i] + 1; *c; c++) {
    if (strchr(run_short_bool, *c) != NULL) {
      if (*c == 'd') *detach = 1;
    } else if (strchr(run_short_value, *c) != NULL) {
      if (c[1] != '\0') return 1;             /* the rest of the cluster is the value */
      return argv[i + 1] != NULL ? 2 : -1;    /* the next argument is */
    } else {
      return -1;
    }
  }
  return 1;
}

/* The run flags from `from` to the image: sets *detach and *auto_remove; returns where the image
 * is (or the `--` before it), -1 when not understood. */
static int scan_run_flags(char **argv, int from, int *detach, int *auto_remove) {
  for (int i = from; argv[i] != NULL;) {
    const char *a = argv[i];
    if (a[0] != '-' || a[1] == '\0') return i; /* the image */
    if (strcmp(a, "--") == 0) return argv[i + 1] != NULL ? i : -1;
    if (a[1] != '-') {
      int used = short_cluster(argv, i, detach);
      if (used < 0) return -1;
      i += used;
      continue;
    }
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    if (word_in(run_bool, name, n)) {
      int value = bool_value(eq);
      if (value < 0) return -1;
      if (n == 6 && strncmp(name, "detach", 6) == 0) *detach = value;
      if (n == 2 && strncmp(name, "rm", 2) == 0) *auto_remove = value;
      i++;
    } else if (word_in(run_value, name, n)) {
      if (eq == NULL && argv[i + 1] == NULL) return -1;
      i += eq ? 1 : 2;
    } else {
      return -1;
    }
  }
  return -1; /* no image */
}

/* The labelled argv: the two labels after the user's run flags, right before the image (or the `--`
 * before it). The engines keep the last value of a label given twice, and a --label over one of a
 * --label-file: a user's own reapkit.run or reapkit.owner cannot hide the run from its stop. */
static char **insert_labels(char **argv, int image_at) {
  int argc = 0;
  while (argv[argc] != NULL) argc++;
  char **out = malloc((size_t)(argc + 5) * sizeof *out);
  if (out == NULL) return NULL;
  int k = 0;
  for (int i = 0; i < image_at; i++) out[k++] = argv[i];
  out[k++] = "--label";
  out[k++] = ctr.run_label;
  out[k++] = "--label";
  out[k++] = ctr.owner_label;
  for (int i = image_at; i <= argc; i++) out[k++] = argv[i]; /* the NULL too */
  return out;
}

/* podman inside --isolate's mount namespace would mount a container's network namespace out of reach
 * of every other podman on the machine (each `podman ps` then fails): whatever the subcommand, and
 * with --no-container too, podman is not run under --isolate. */
static void refuse_isolated_podman(enum engine_kind kind) {
  if (kind != ENGINE_PODMAN || !opt.isolate) return;
  fputs("reapkit: --isolate cannot run podman: a `podman run` would mount its network namespace where no other "
        "podman can reach it. Leave out --isolate: the container is stopped through podman on every stop path.\n",
        stderr);
  exit(EXIT_OWN_ERROR);
}

/* Recognizes a container run in the command and returns the argv to execute (labelled, or the same
 * when it is not one). Before the command starts: the engine is resolved from the starting folder. */
char **container_prepare(char **argv) {
  memset(&ctr, 0, sizeof ctr);
  enum engine_kind kind = engine_of(argv[0]);
  int globals_end = 0, detach = 0, auto_remove = 0;
  refuse_isolated_podman(kind);
  if (!opt.container || kind == ENGINE_NONE) return argv;
  int run_at = find_run(argv, kind, &globals_end);
  int image_at = run_at < 0 ? -1 : scan_run_flags(argv, run_at + 1, &detach, &auto_remove);
  if (image_at < 0 || detach) return argv;
  char id[33];
  if (random_hex(id) != 0 || resolve_engine(argv[0], ctr.engine_path, sizeof ctr.engine_path) != 0) return argv;
  /* the engine's calls run from here (relative paths in global flags or the environment: --config
   * ./cfg, DOCKER_HOST=unix://d.sock), though we leave it once the command runs */
  if (getcwd(ctr.start_dir, sizeof ctr.start_dir) == NULL) ctr.start_dir[0] = '\0';
  snprintf(ctr.run_label, sizeof ctr.run_label, "reapkit.run=%s", id);
  owner_label(ctr.owner_label, sizeof ctr.owner_label);
  char **labelled = insert_labels(argv, image_at);
  if (labelled == NULL) return argv;
  ctr.active = 1;
  ctr.engine = engine_names[kind];
  ctr.auto_remove = auto_remove;
  ctr.argv = argv;
  ctr.nglobals = globals_end - 1;
  return labelled;
}
