/* Ending the container of a `docker run` (podman, nerdctl) through its engine, on every stop path.
 *
 * The container is found by its run label only (container.c), with the same client binary, global
 * flags and environment as the command's. Every engine call is bounded, and an engine that does not
 * answer (non-zero exit, time out) leaves the outcome uncertain, never "gone":
 *
 *   list      ps -a -q --no-trunc --filter label=reapkit.run=<id>
 *   graceful  stop --time <the grace left, in whole seconds rounded up> <ids>
 *   confirm   list again until gone: removed with --rm, not running without
 *   forced    rm -f <ids> (--rm) or kill <ids>, then confirm once more
 *
 * A container not confirmed gone is named on stderr and the wrapper exits with EXIT_CONTAINER_LEFT.
 *
 * The order matters with podman: its conmon (the container's monitor, forked by the client) is
 * re-parented to us, the subreaper, and the container's processes descend from it. Killing conmon
 * leaves podman's record `Up` and the name taken, so the engine's stop comes before our signals
 * reach anything but the command's own group (stop.c), and we keep reaping while we wait. */

#include "supervise.h"

#define ENGINE_CALL_MS 10000 /* a list, kill or rm: the engine answers in well under this */
#define CONFIRM_MIN_MS 5000  /* how long a confirm waits, at least (docker removes --rm asynchronously) */
#define CONFIRM_POLL_MS 200
/* The last look, when no list has named a container yet and the client did not end on its own (a
 * stop of ours reached it, or it died by a signal): the client may have asked for the container
 * just before it died, and the daemon creates it afterwards (never started: `--rm` will not remove
 * it). The look goes on this long for one to appear. */
#define SETTLE_MS 3000
#define ENGINE_ERR_MAX 2048

/* The child of ours running an engine call, reaped by reap() like any other child (stop.c). */
int container_reaped(pid_t pid, int status) {
  if (ctr.call_pid <= 0 || pid != ctr.call_pid) return 0;
  ctr.call_status = status;
  ctr.call_done = 1;
  return 1;
}

/* In the engine client, before exec: its own group (a signal to ours must not cut the stop short),
 * default dispositions but what our caller ignored, no blocked signal, stdin from /dev/null. */
static void engine_child(char **args, int out_fd, int err_fd) {
  setpgid(0, 0);
  restore_inherited_dispositions();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(err_fd, STDERR_FILENO) < 0)
    _exit(126);
  if (null_fd > STDERR_FILENO) close(null_fd);
  /* relative paths in the global flags or the environment are the command's, from its folder */
  if (ctr.start_dir[0] != '\0' && chdir(ctr.start_dir) != 0) {
    /* gone since: the call runs from /, and its failure says so */
  }
  execv(ctr.engine_path, args);
  _exit(127);
}

/* Reads what is there from `fd` into buf (kept NUL-terminated, the excess dropped); 0 at EOF. */
static int drain(int fd, char *buf, size_t size, size_t *len) {
  char chunk[512];
  ssize_t n = read(fd, chunk, sizeof chunk);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return 0;
  size_t room = size - 1 - *len;
  size_t take = (size_t)n < room ? (size_t)n : room;
  memcpy(buf + *len, chunk, take);
  *len += take;
  buf[*len] = '\0';
  return 1;
}

/* Reaps the call if it has exited: waitpid's answer (its pid, 0 while it runs, -1 on error). */
static pid_t reap_call(void) {
  int status;
  pid_t r = waitpid(ctr.call_pid, &status, WNOHANG);
  if (r == ctr.call_pid) container_reaped(r, status);
  return r;
}

/* Waits for the call's exit and its output, reaping whatever else of ours exits meanwhile (podman's
 * conmon among them). 1 when it exited in time, 0 at the deadline. */
static int await_call(int fds[2], char *out, size_t out_size, char *err, long long deadline) {
  size_t out_len = 0, err_len = 0;
  int open_fds = 2;
  for (;;) {
    reap();
    if (!ctr.call_done) reap_call();
    if (ctr.call_done && open_fds == 0) return 1;
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    /* (a descendant of the client may keep the pipes: once the client has exited, wait no more) */
    struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    int r = poll(p, 2, (int)(left < 50 ? left : 50));
    if (r <= 0) {
      if (ctr.call_done) return 1;
      continue;
    }
    for (int k = 0; k < 2; k++)
      if (fds[k] >= 0 && p[k].revents &&
          !drain(fds[k], k ? err : out, k ? ENGINE_ERR_MAX : out_size, k ? &err_len : &out_len)) {
        close(fds[k]);
        fds[k] = -1;
        open_fds--;
      }
  }
}

/* The argv of an engine call: the command's argv[0] and global flags, then `sub` (NULL-ended). */
static char **call_argv(const char *const *sub) {
  int nsub = 0;
  while (sub[nsub] != NULL) nsub++;
  char **args = malloc((size_t)(1 + ctr.nglobals + nsub + 1) * sizeof *args);
  if (args == NULL) return NULL;
  int k = 0;
  args[k++] = ctr.argv[0];
  for (int i = 1; i <= ctr.nglobals; i++) args[k++] = ctr.argv[i];
  for (int i = 0; i < nsub; i++) args[k++] = (char *)sub[i];
  args[k] = NULL;
  return args;
}

/* At the bound: SIGKILL the call's group (the client itself, should it not have made its group yet),
 * and reap it, bounded too (a client stuck in the kernel is left to reap() later). */
static void kill_call(void) {
  if (ctr.call_done) return;
  if (killpg(ctr.call_pid, SIGKILL) != 0) kill(ctr.call_pid, SIGKILL); /* unreaped: its pid is still its */
  long long end = now_ms() + KILL_CONFIRM_MS;
  while (!ctr.call_done && now_ms() < end) {
    pid_t r = reap_call();
    if (r < 0 && errno != EINTR) break;
    if (r != ctr.call_pid) poll(NULL, 0, 10);
  }
}

/* Runs `<engine> <globals> sub...`, its stdout into `out`, bounded by `timeout_ms` (the client's
 * group SIGKILLed at the bound). 1 when it exited 0; 0 otherwise, its stderr then on ours unless
 * `quiet` (a failure the confirm that follows judges). */
static int engine_call(const char *const *sub, char *out, size_t out_size, long timeout_ms, int quiet) {
  char err[ENGINE_ERR_MAX] = "";
  char **args = call_argv(sub);
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  out[0] = '\0';
  if (args == NULL || cloexec_pipe(out_pipe, 0) != 0 || cloexec_pipe(err_pipe, 0) != 0) {
    fprintf(stderr, "reapkit: %s %s: %s\n", ctr.engine, sub[0], strerror(errno));
    free(args);
    for (int k = 0; k < 2; k++) {
      if (out_pipe[k] >= 0) close(out_pipe[k]);
      if (err_pipe[k] >= 0) close(err_pipe[k]);
    }
    return 0;
  }
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old); /* no handler of ours may run in the child */
  ctr.call_done = 0;
  ctr.call_pid = fork();
  int fork_errno = errno;
  if (ctr.call_pid == 0) engine_child(args, out_pipe[1], err_pipe[1]);
  if (ctr.call_pid > 0) setpgid(ctr.call_pid, ctr.call_pid); /* both sides, as for the command */
  sigprocmask(SIG_SETMASK, &old, NULL);
  close(out_pipe[1]);
  close(err_pipe[1]);
  free(args);
  int fds[2] = {out_pipe[0], err_pipe[0]};
  int in_time = ctr.call_pid > 0 && await_call(fds, out, out_size, err, now_ms() + timeout_ms);
  if (ctr.call_pid > 0 && !in_time) {
    kill_call();
    snprintf(err, sizeof err, "no answer within %ld ms\n", timeout_ms);
  }
  for (int k = 0; k < 2; k++)
    if (fds[k] >= 0) close(fds[k]);
  int ok = in_time && WIFEXITED(ctr.call_status) && WEXITSTATUS(ctr.call_status) == 0;
  if (ctr.call_pid < 0) snprintf(err, sizeof err, "fork: %s\n", strerror(fork_errno));
  else if (!ok && err[0] == '\0') snprintf(err, sizeof err, "exit status %d\n", WIFEXITED(ctr.call_status) ? WEXITSTATUS(ctr.call_status) : 128 + WTERMSIG(ctr.call_status));
  ctr.call_pid = 0;
  if (!ok && !quiet) fprintf(stderr, "reapkit: %s %s failed: %s%s", ctr.engine, sub[0], err, strchr(err, '\n') ? "" : "\n");
  return ok;
}

#define MAX_IDS 32
typedef struct {
  char buf[MAX_IDS * 72]; /* an id is 64 hex digits and a newline */
  char *id[MAX_IDS + 1];
  int n;
} idlist_t;

/* The containers of this run (`all`: stopped ones too). Their number, or -1: the engine did not answer. */
static int list(int all, idlist_t *l) {
  char filter[128];
  snprintf(filter, sizeof filter, "label=%s", ctr.run_label);
  const char *with_all[] = {"ps", "-a", "-q", "--no-trunc", "--filter", filter, NULL};
  const char *running[] = {"ps", "-q", "--no-trunc", "--filter", filter, NULL};
  l->n = 0;
  l->id[0] = NULL;
  if (!engine_call(all ? with_all : running, l->buf, sizeof l->buf, ENGINE_CALL_MS, 0)) return -1;
  for (char *save = NULL, *tok = strtok_r(l->buf, " \t\r\n", &save); tok != NULL && l->n < MAX_IDS;
       tok = strtok_r(NULL, " \t\r\n", &save))
    l->id[l->n++] = tok;
  l->id[l->n] = NULL;
  if (all && l->n > 0) ctr.seen = 1;
  return l->n;
}

/* Sleeps `ms`, reaping what exits meanwhile. */
static void pause_reaping(int ms) {
  poll(NULL, 0, ms);
  reap();
}

/* Gone as the user asked: removed with --rm, not running without. 1 gone, 0 still there when the
 * window ends, -1 the engine did not answer. `l` gets the last list. */
static int confirm(long window_ms, idlist_t *l) {
  long long end = now_ms() + window_ms;
  for (;;) {
    int n = list(ctr.auto_remove, l);
    if (n <= 0) return n == 0 ? 1 : -1;
    if (now_ms() >= end) return 0;
    pause_reaping(CONFIRM_POLL_MS);
  }
}

/* `<engine> <verb...> <ids>`, bounded by timeout_ms. */
static void on_ids(const char *const *verb, int nverb, const idlist_t *l, long timeout_ms, int quiet) {
  const char *sub[8 + MAX_IDS + 1];
  int k = 0;
  char out[256];
  for (int i = 0; i < nverb && k < 8; i++) sub[k++] = verb[i];
  for (int i = 0; i < l->n; i++) sub[k++] = l->id[i];
  sub[k] = NULL;
  engine_call(sub, out, sizeof out, timeout_ms, quiet);
}

/* Forced: the engine's kill of what runs, then with --rm the removal (a leftover that never started,
 * or that podman's cleanup, which died with its client, left). Never `rm -f` first: podman 4 drops
 * the record of a container a stop is ending without killing it. Quiet: "not running", "removal
 * in progress" are as expected, and the confirm that follows judges. */
static void force(const idlist_t *l) {
  const char *kill_verb[] = {"kill"};
  const char *rm_docker[] = {"rm", "-f"};
  const char *rm_podman[] = {"rm", "-f", "-t", "0"}; /* (podman's rm -f would stop with a timeout first) */
  int podman = strcmp(ctr.engine, "podman") == 0;
  on_ids(kill_verb, 1, l, ENGINE_CALL_MS, 1);
  if (ctr.auto_remove) on_ids(podman ? rm_podman : rm_docker, podman ? 4 : 2, l, ENGINE_CALL_MS, 1);
}

/* Names what is not confirmed gone on stderr (the engine's own list, or the run label when the
 * engine does not answer). */
static void report_left(int answer, const idlist_t *l) {
  ctr.left = answer < 0 ? 1 : l->n;
  if (answer < 0) {
    fprintf(stderr, "reapkit: %s did not answer: the container of this run (label %s) may still be running\n",
            ctr.engine, ctr.run_label);
  } else {
    for (int i = 0; i < l->n; i++)
      fprintf(stderr, "reapkit: container %s (%s) is still %s after stop and %s\n", l->id[i], ctr.engine,
              ctr.auto_remove ? "there" : "running", ctr.auto_remove ? "rm -f" : "kill");
  }
  event("container-left", "\"run\":\"%s\",\"containers\":%d", ctr.run_label + 12, ctr.left);
}

/* Is this a container run of ours? (Not in --isolate's init: the supervisor outside, which watches
 * the host, ends the container.) */
static int ours_to_end(void) {
  return ctr.active && ctr.left == 0 && st.mode != NS_INIT;
}

/* Stop with `secs`, confirm, force, confirm (no grace: force, confirm); `l` holds the containers
 * listed. 1 when confirmed gone. */
static int end_listed(idlist_t *l, long secs) {
  long window = opt.close_ms > CONFIRM_MIN_MS ? opt.close_ms : CONFIRM_MIN_MS;
  int gone = 0;
  if (secs > 0) {
    char time_arg[24];
    snprintf(time_arg, sizeof time_arg, "%ld", secs);
    const char *stop[] = {"stop", "--time", time_arg};
    on_ids(stop, 3, l, secs * 1000 + ENGINE_CALL_MS, 0);
    gone = confirm(window, l);
  }
  if (gone == 0) {
    force(l);
    gone = confirm(window, l);
  }
  if (gone != 1) report_left(gone, l);
  return gone == 1;
}

/* Did the client end on its own? Not when a stop of ours reached it alive, nor when it died by a
 * signal (a client exits 128 + n on a signal it handles): then it may have asked for its container
 * and died before the daemon answered. */
static int client_cut_short(void) {
  return ctr.stopped_live || st.exit_code > 128;
}

/* The last look, for a run that no list has named a container of and whose client was cut short:
 * looks again for SETTLE_MS. The number of containers found (`l`), or -1: no answer. */
static int settle(idlist_t *l) {
  long long end = now_ms() + SETTLE_MS;
  for (;;) {
    int n = list(1, l);
    if (n != 0 || now_ms() >= end) return n;
    pause_reaping(CONFIRM_POLL_MS);
  }
}

/* Ends this run's container through the engine: stop with `grace_ms` (rounded up to whole seconds,
 * the engine's unit), confirm, force, confirm. Blocks for at most the grace and a few bounded engine
 * calls, reaping meanwhile; sets ctr.left when something is not confirmed gone. The first call
 * lists every container of the run (a created one too); later ones only what is not gone yet. The
 * `last` look before we exit settles (above) when no list ever named a container. */
static void end_run(const char *why, long grace_ms, int last) {
  if (!ours_to_end()) return;
  int first = !ctr.done;
  ctr.done = 1;
  if (first && !st.main_done) ctr.stopped_live = 1;
  long long t0 = now_ms();
  idlist_t l;
  int n = list(first || ctr.auto_remove, &l);
  if (n == 0 && last && !ctr.seen && client_cut_short()) {
    why = "settle";
    grace_ms = 0; /* created for a client that is gone: nothing waits for a graceful end */
    n = settle(&l);
  }
  if (n == 0 && !first) return;
  long secs = grace_ms > 0 ? (grace_ms + 999) / 1000 : 0;
  event("container-stop", "\"why\":\"%s\",\"run\":\"%s\",\"containers\":%d,\"time\":%ld", why,
        ctr.run_label + 12, n, secs);
  if (n < 0) report_left(-1, &l);
  if (n <= 0 || !end_listed(&l, secs)) return;
  event("container-gone", "\"run\":\"%s\",\"elapsedMs\":%lld", ctr.run_label + 12, now_ms() - t0);
}

void containers_stop(const char *why, long grace_ms) {
  end_run(why, grace_ms, 0);
}

/* Before we exit, nothing of ours left but maybe the container: a client that died, or one that
 * created its container after the stop had looked. */
void containers_last_look(void) {
  end_run(ctr.done ? "last-look" : "child-exit", ctr.done ? 0 : opt.grace_ms, 1);
}
