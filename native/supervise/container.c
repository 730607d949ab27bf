/* Containers: knowing that the command is a `docker run` (podman, nerdctl) and labelling its
 * container so that the stop can find it through the engine (engine.c).
 *
 * `docker run -i --rm IMAGE` is a client: the container belongs to the engine's daemon, not to our
 * process tree, so no signal of ours reaches it. The command's argv alone says (no shell, never a
 * guess: anything not understood is left a plain command), read by run_grammar.c with the library's
 * grammar:
 *
 *   engine [global flags] run|container run [run flags] IMAGE [args...]
 *
 * and we add, after the user's run flags (right before the image), two labels: `reapkit.run=<32
 * hex>`, a fresh random id that is the container's identity for every engine call (`ps -a --filter
 * label=...` finds it even when the client died before it learnt an id), and `reapkit.owner=...`
 * (owner.c), who stops it (reapkit doctor tells a leftover from a live run by it). `-d`/`--detach`
 * runs are not ours to stop: the user asked them to outlive the client. */

#include "supervise.h"

container_t ctr;

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
static void refuse_isolated_podman(int engine) {
  if (strcmp(container_engine_name(engine), "podman") != 0 || !opt.isolate) return;
  fputs("reapkit: --isolate cannot run podman: a `podman run` would mount its network namespace where no other "
        "podman can reach it. Leave out --isolate: the container is stopped through podman on every stop path.\n",
        stderr);
  exit(EXIT_OWN_ERROR);
}

/* Recognizes a container run in the command and returns the argv to execute (labelled, or the same
 * when it is not one). Before the command starts: the engine is resolved from the starting folder. */
char **container_prepare(char **argv) {
  memset(&ctr, 0, sizeof ctr);
  container_run_t run;
  refuse_isolated_podman(container_engine_of(argv[0]));
  if (!opt.container || !container_run_parse(argv, &run)) return argv;
  char id[33];
  if (random_hex(id) != 0 || resolve_engine(argv[0], ctr.engine_path, sizeof ctr.engine_path) != 0) return argv;
  /* the engine's calls run from here (relative paths in global flags or the environment: --config
   * ./cfg, DOCKER_HOST=unix://d.sock), though we leave it once the command runs */
  if (getcwd(ctr.start_dir, sizeof ctr.start_dir) == NULL) ctr.start_dir[0] = '\0';
  snprintf(ctr.run_label, sizeof ctr.run_label, "reapkit.run=%s", id);
  owner_label(ctr.owner_label, sizeof ctr.owner_label);
  char **labelled = insert_labels(argv, run.flags_end);
  if (labelled == NULL) return argv;
  ctr.active = 1;
  ctr.engine = container_engine_name(run.engine);
  ctr.auto_remove = run.auto_remove;
  ctr.argv = argv;
  ctr.nglobals = run.globals_end - 1;
  return labelled;
}
