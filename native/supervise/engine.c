/* Ending the container of a `docker run` (podman, nerdctl) through its engine, on every stop path.
 *
 * The container is found by its run label only (container.c), with the same client binary, global
 * flags and environment as the command's. Every engine call is bounded, and an engine that does not
 * answer (non-zero exit, time out) leaves the outcome uncertain, never "gone". A look (looks.c) lists
 * the run's containers and reads each one's state:
 *
 *   graceful  stop --time <the grace left, in whole seconds rounded up> <ids not at rest>
 *   confirm   look again until gone: removed with --rm, at rest without (looks.c: podman's
 *             `stopping`, docker's `removing`, `restarting`, `paused` still run)
 *   forced    kill <ids not at rest>, its answer awaited, then confirm once more; with --rm, a
 *             leftover at rest on two looks in a row is removed there (rm -f)
 *
 * A container not confirmed gone is named on stderr (with the kill's error, when it failed) and the
 * wrapper exits with EXIT_CONTAINER_LEFT. Nothing not at rest is ever removed: podman 4's `rm -f` of
 * a `stopping` container (a stop in flight, or one whose client was cut short) drops the record and
 * leaves its conmon and PID 1 running.
 *
 * The order matters with podman: its conmon (the container's monitor, forked by the client) is
 * re-parented to us, the subreaper, and the container's processes descend from it. Killing conmon
 * leaves podman's record `Up` and the name taken, so the engine's stop comes before our signals
 * reach anything but the command's own group (stop.c), and we keep reaping while we wait. */

#include "supervise.h"

#define CONFIRM_MIN_MS 5000  /* how long a confirm waits, at least (docker removes --rm asynchronously) */

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

/* "reapkit: <engine> <what> failed: <why>" on stderr. */
void engine_failed(const char *what, const char *err) {
  size_t len = strlen(err);
  fprintf(stderr, "reapkit: %s %s failed: %s%s", ctr.engine, what, err, len > 0 && err[len - 1] == '\n' ? "" : "\n");
}

/* Forks the client of an engine call, its stdout and stderr into the pipes' write ends (closed here). */
static void fork_call(char **args, int out_pipe[2], int err_pipe[2]) {
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
  errno = fork_errno;
}

/* Runs `<engine> <globals> sub...`, its stdout into `out`, bounded by `timeout_ms` (the client's
 * group SIGKILLed at the bound). 1 when it exited 0; 0 otherwise, its stderr (or why it has none)
 * then on ours unless `quiet` (a failure the caller judges), and into `err` (ENGINE_ERR_MAX bytes,
 * "" on success) unless NULL. */
int engine_call(const char *const *sub, char *out, size_t out_size, char *err_out, long timeout_ms, int quiet) {
  char err[ENGINE_ERR_MAX] = "";
  char **args = call_argv(sub);
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  out[0] = '\0';
  if (err_out != NULL) err_out[0] = '\0';
  if (args == NULL || cloexec_pipe(out_pipe, 0) != 0 || cloexec_pipe(err_pipe, 0) != 0) {
    snprintf(err, sizeof err, "%s\n", strerror(errno));
    if (!quiet) engine_failed(sub[0], err);
    if (err_out != NULL) memcpy(err_out, err, sizeof err);
    free(args);
    for (int k = 0; k < 2; k++) {
      if (out_pipe[k] >= 0) close(out_pipe[k]);
      if (err_pipe[k] >= 0) close(err_pipe[k]);
    }
    return 0;
  }
  fork_call(args, out_pipe, err_pipe);
  int fork_errno = errno;
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
  if (!ok && !quiet) engine_failed(sub[0], err);
  if (err_out != NULL) memcpy(err_out, ok ? "" : err, ok ? 1 : sizeof err);
  return ok;
}

/* `<engine> <verb...> <ids>`, bounded by timeout_ms: engine_call's answer (`err` as there). */
int on_ids(const char *const *verb, int nverb, char *const *ids, int n, char *err, long timeout_ms, int quiet) {
  const char *sub[8 + MAX_IDS + 1];
  int k = 0;
  char out[256];
  for (int i = 0; i < nverb && k < 8; i++) sub[k++] = verb[i];
  for (int i = 0; i < n && i < MAX_IDS; i++) sub[k++] = ids[i];
  sub[k] = NULL;
  return engine_call(sub, out, sizeof out, err, timeout_ms, quiet);
}

/* The ids of the look that are not at rest (looks.c): what a stop or a kill is for. Their number. */
static int not_at_rest(const look_t *l, char **ids) {
  int n = 0;
  for (int i = 0; i < l->n; i++)
    if (!at_rest(l, i)) ids[n++] = l->id[i];
  return n;
}

/* Graceful: the engine's own stop, with `secs`, of what is not at rest. */
static void stop_running(const look_t *l, long secs) {
  char *ids[MAX_IDS], time_arg[24];
  int n = not_at_rest(l, ids);
  snprintf(time_arg, sizeof time_arg, "%ld", secs);
  const char *stop[] = {"stop", "--time", time_arg};
  if (n > 0) on_ids(stop, 3, ids, n, NULL, secs * 1000 + ENGINE_CALL_MS, 0);
}

/* Keeps the last line of `text` that is not blank (a client's error comes after its warnings). */
void last_line(char *text) {
  size_t end = strlen(text);
  while (end > 0 && isspace((unsigned char)text[end - 1])) end--;
  text[end] = '\0';
  char *nl = strrchr(text, '\n');
  if (nl != NULL) memmove(text, nl + 1, strlen(nl + 1) + 1);
}

/* The ids the forced phase has sent the engine's kill. */
typedef struct {
  char id[MAX_IDS][72];
  int n;
} killed_t;

static int was_killed(const killed_t *k, const char *id) {
  for (int i = 0; i < k->n; i++)
    if (strcmp(k->id[i], id) == 0) return 1;
  return 0;
}

/* Forced: the engine's kill of what is not at rest and was not killed yet, its answer awaited
 * (bounded). Nothing is removed here, whatever the kill answered: a container whose kill failed runs
 * on, and podman 4's `rm -f` of one `stopping` drops the record and leaves its processes. With --rm,
 * the confirm that follows removes a leftover once it is at rest (looks.c). Quiet ("not running" is
 * as expected: the confirm judges); a failure's last line is kept in `err` for the report. The
 * number of containers killed. */
static int force(const look_t *l, killed_t *k, char *err) {
  static const char *const kill_verb[] = {"kill"};
  char *ids[MAX_IDS];
  int n = 0;
  for (int i = 0; i < l->n; i++) {
    if (at_rest(l, i) || was_killed(k, l->id[i]) || k->n >= MAX_IDS) continue;
    snprintf(k->id[k->n++], sizeof k->id[0], "%s", l->id[i]);
    ids[n++] = l->id[i];
  }
  char e[ENGINE_ERR_MAX];
  if (n > 0 && !on_ids(kill_verb, 1, ids, n, e, ENGINE_CALL_MS, 1)) {
    last_line(e);
    memcpy(err, e, sizeof e); /* (a later kill that succeeds keeps an earlier one's error) */
  }
  return n;
}

/* Names what is not confirmed gone on stderr (the engine's own list, each with its state and the
 * error of its kill, or at rest of its rm -f; the run label when the engine does not answer). */
static void report_left(int answer, const look_t *l, const char *kill_err, const char *rm_err) {
  ctr.left = answer < 0 ? 1 : remaining(l);
  if (answer < 0) {
    fprintf(stderr, "reapkit: %s did not answer: the container of this run (label %s) may still be running\n",
            ctr.engine, ctr.run_label);
  } else {
    for (int i = 0; i < l->n; i++) {
      if (!keeps(l, i)) continue;
      int rest = at_rest(l, i);
      const char *why = rest ? rm_err : kill_err;
      fprintf(stderr, "reapkit: container %s (%s) is still %s (%s) after stop and %s%s%s\n", l->id[i], ctr.engine,
              rest ? "there" : "running", l->state[i], rest ? "rm -f" : "kill", why[0] != '\0' ? ": " : "", why);
    }
  }
  event("container-left", "\"run\":\"%s\",\"containers\":%d", ctr.run_label + 12, ctr.left);
}

/* Is this a container run of ours? (Not in --isolate's init: the supervisor outside, which watches
 * the host, ends the container.) */
static int ours_to_end(void) {
  return ctr.active && ctr.left == 0 && st.mode != NS_INIT;
}

/* Stop with `secs`, confirm, force, confirm (no grace: force, confirm); `l` holds the last look.
 * A look that failed in the grace does not spare the kill when the engine answers again; a container
 * that started after the kill (a created one whose start was on its way) gets its own, once. 1 when
 * confirmed gone. */
static int end_listed(look_t *l, long secs) {
  long window = opt.close_ms > CONFIRM_MIN_MS ? opt.close_ms : CONFIRM_MIN_MS;
  tally_t tally; /* the forced confirm's looks in a row at rest */
  killed_t killed;
  char kill_err[ENGINE_ERR_MAX] = "";
  int gone = 0;
  tally.n = 0;
  tally.rm_err[0] = '\0';
  killed.n = 0;
  if (secs > 0) {
    stop_running(l, secs);
    gone = confirm(window, l, NULL);
    if (gone < 0 && look(l) >= 0) gone = 0;
  }
  for (int round = 0; gone == 0 && round < 2; round++) {
    if (force(l, &killed, kill_err) == 0 && round > 0) break; /* nothing new to kill: the verdict stands */
    gone = confirm(window, l, &tally);
  }
  if (gone != 1) report_left(gone, l, kill_err, tally.rm_err);
  return gone == 1;
}

/* Did the client end on its own? Not when a stop of ours reached it alive, nor when it died by a
 * signal (a client exits 128 + n on a signal it handles): then it may have asked for its container
 * and died before the daemon answered. */
static int client_cut_short(void) {
  return ctr.stopped_live || st.exit_code > 128;
}

/* Ends this run's container through the engine: stop with `grace_ms` (rounded up to whole seconds,
 * the engine's unit), confirm, force, confirm. Blocks for at most the grace and a few bounded engine
 * calls, reaping meanwhile; sets ctr.left when something is not confirmed gone. The first call
 * counts every container of the run (a created one, an exited one too); later ones only what keeps
 * the run from being gone (looks.c). The `last` look before we exit settles (looks.c) when no look
 * ever named a container and the client was cut short. */
static void end_run(const char *why, long grace_ms, int last) {
  if (!ours_to_end()) return;
  int first = !ctr.done;
  ctr.done = 1;
  if (first && !st.main_done) ctr.stopped_live = 1;
  long long t0 = now_ms();
  look_t l;
  int n = look(&l);
  if (n > 0 && !first) n = undecided(&l);
  if (n == 0 && last && !ctr.seen && client_cut_short()) {
    why = "settle";
    grace_ms = 0; /* created for a client that is gone: nothing waits for a graceful end */
    n = settle(&l);
  }
  if (n == 0 && !first) return;
  long secs = grace_ms > 0 ? (grace_ms + 999) / 1000 : 0;
  event("container-stop", "\"why\":\"%s\",\"run\":\"%s\",\"containers\":%d,\"time\":%ld", why,
        ctr.run_label + 12, n, secs);
  if (n < 0) report_left(-1, &l, "", "");
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
