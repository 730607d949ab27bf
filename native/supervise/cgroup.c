/* The command's own cgroup as the unit of every stop (Linux, cgroup v2; cgroup_where.c makes it),
 * as lib/mechanisms/stop/cgroup-unit.ts does for spawn({ cgroup: true }):
 *
 *   join     the command is moved in by us, its parent, before its exec (command.c holds the exec
 *            until we have written its pid to cgroup.procs), so it and all it starts are members;
 *   members  `cgroup.procs` of the cgroup and of every cgroup a member made inside it, each pid
 *            pinned by pidfd and then seen listed again (the pin is that member, never a stranger
 *            that took a freed pid), signalled through the pin, once per stop; the stop's first
 *            signal with the cgroup frozen (nothing forks while it is listed: what starts after the
 *            thaw started after the stop, and is left until the grace ends);
 *   outside  our children once it is empty: descendants that moved themselves out of it, re-parented
 *            to us, the subreaper; stopped the subreaper's way;
 *   forced   `cgroup.kill`: the kernel's SIGKILL to every member at once, escapees included;
 *   gone     `cgroup.events` says `populated 0`, seen as an inotify event on that file (the loop
 *            polls the inotify descriptor, bounded by the stop's deadline): no /proc read at all;
 *   after    the cgroup is removed once empty, the cgroups inside it first; one still populated
 *            stays, named for `reapkit doctor`.
 * Every file is opened relative to the directory descriptor taken at mkdir (its id checked then). */

#include "supervise.h"

#if RK_LINUX
#include <sys/inotify.h>
#include <sys/resource.h>

#define PIN_BATCH 256  /* pidfds held at once while pinning (well under any open-file limit) */
#define MAX_DEPTH 16   /* cgroups inside ours, nested that deep at most */
#define MAX_PASSES 16  /* first-signal passes over members forked meanwhile (when no freeze) */
#define FREEZE_WAIT_MS 1000 /* at most (and a quarter of the grace) for cgroup.events' `frozen 1` */

static pid_t *list;
static size_t nlist, list_cap;
static unsigned char *signalled_bits; /* by pid: had this stop's signal (a pid freed and taken again
                                       * since names a process started after the stop: left for SIGKILL) */
#define PID_BITS (1u << 22)           /* PID_MAX_LIMIT */

static int write_at(int dir, const char *file, const char *text) {
  int fd = openat(dir, file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  int e = errno;
  close(fd);
  errno = e;
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Moves `pid` (our child, not yet exec'd) into the cgroup: 0, or -1 with errno. */
int cgroup_join(pid_t pid) {
  char text[24];
  snprintf(text, sizeof text, "%d\n", (int)pid);
  return write_at(cg.dirfd, "cgroup.procs", text);
}

/* The join failed: no cgroup for this run (removed; the subreaper path stops it). */
void cgroup_drop(const char *what) {
  snprintf(cg.reason, sizeof cg.reason, "%s: %s", what, strerror(errno));
  close(cg.dirfd);
  cg.dirfd = -1;
  if (cg.inotify_fd >= 0) close(cg.inotify_fd);
  cg.inotify_fd = -1;
  rmdir(cg.path);
  cg.active = 0;
}

static void add_pid(long v) {
  if (nlist == list_cap) {
    size_t c = list_cap ? list_cap * 2 : 256;
    pid_t *l = realloc(list, c * sizeof *l);
    if (l == NULL) return;
    list = l;
    list_cap = c;
  }
  list[nlist++] = (pid_t)v;
}

/* A listing of `dir` with an offset of its own: a dup() would share the file offset with `dir`
 * (cg.dirfd above all), so after the first listing every later one would start at the end and find
 * nothing: no cgroup made inside ours would be signalled or removed. */
static DIR *open_listing(int dir) {
  int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL && fd >= 0) close(fd);
  return d;
}

/* Appends the pids of `dir`'s cgroup.procs and of the cgroups inside it. 0, or -1 (unreadable). */
static int members_of(int dir, int depth) {
  int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[8192], carry[16] = "";
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
    buf[n] = '\0';
    char *s = buf;
    if (carry[0]) { /* a number cut by the previous read */
      size_t k = strspn(s, "0123456789");
      size_t c = strlen(carry);
      if (c + k < sizeof carry) memcpy(carry + c, s, k), carry[c + k] = '\0';
      s += k;
      if (*s) add_pid(strtol(carry, NULL, 10)), carry[0] = '\0';
    }
    for (;;) {
      s += strspn(s, "\n");
      if (!*s) break;
      size_t k = strspn(s, "0123456789");
      if (s[k] == '\0' && k < sizeof carry) { /* may go on in the next read */
        memcpy(carry, s, k + 1);
        break;
      }
      add_pid(strtol(s, NULL, 10));
      s += k ? k : 1;
    }
  }
  close(fd);
  if (carry[0]) add_pid(strtol(carry, NULL, 10));
  if (depth >= MAX_DEPTH) return 0;
  DIR *d = open_listing(dir);
  if (d == NULL) return errno == EMFILE || errno == ENFILE ? -1 : 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int r = sub >= 0 ? members_of(sub, depth + 1) : -1;
    int err = errno;
    if (sub >= 0) close(sub);
    /* Out of descriptors: a listing that missed members must not verify anything. (One removed
     * between the readdir and the open, ENOENT, had no members left to list.) */
    if (r != 0 && (err == EMFILE || err == ENFILE)) {
      closedir(d);
      errno = err;
      return -1;
    }
  }
  closedir(d);
  return 0;
}

/* The members now, into list/nlist (pids this namespace cannot see, listed as 0, left out). */
static int list_members(void) {
  nlist = 0;
  if (members_of(cg.dirfd, 0) != 0) return -1;
  size_t o = 0;
  for (size_t i = 0; i < nlist; i++)
    if (list[i] > 0) list[o++] = list[i];
  nlist = o;
  return 0;
}

static int cmp_pid(const void *a, const void *b) {
  pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
  return x < y ? -1 : x > y;
}

static int is_signalled(pid_t p) {
  return signalled_bits && (unsigned)p < PID_BITS && (signalled_bits[p >> 3] >> (p & 7)) & 1;
}

static void mark_signalled(pid_t p) {
  if (signalled_bits == NULL) signalled_bits = calloc(PID_BITS / 8, 1);
  if (signalled_bits && (unsigned)p < PID_BITS) signalled_bits[p >> 3] |= (unsigned char)(1u << (p & 7));
}

/* Descriptors a verifying listing needs besides the pins: two per nesting level (a directory and
 * its cgroup.procs), and a few to spare. */
#define LIST_FDS (2 * MAX_DEPTH + 8)

/* How many pidfds may be held at once: the open-file limit, less the descriptors open now and
 * those the verifying listing needs (a batch that filled the table could not be verified, and
 * nobody would get the signal). */
static size_t pin_room(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return PIN_BATCH;
  long limit = r.rlim_cur > 1 << 20 ? 1 << 20 : (long)r.rlim_cur, used = 0;
  for (int fd = 0; fd < limit && fd < 4096; fd++)
    if (fcntl(fd, F_GETFD) >= 0) used++;
  long room = limit - used - LIST_FDS;
  return room < 1 ? 1 : room > PIN_BATCH ? PIN_BATCH : (size_t)room;
}

/* Pins pids of `pids` (up to n) by pidfd, lists the members again, and signals through each pin
 * whose pid is still listed. *used: how many of `pids` this batch dealt with (fewer than n when
 * descriptors ran out: the rest are the next batch's; 0 when not even one could be). Returns how
 * many were signalled. */
static int signal_batch(const pid_t *pids, size_t n, int sig, int mark, size_t *used) {
  int fds[PIN_BATCH];
  size_t k = 0;
  for (; k < n; k++) {
    fds[k] = (int)syscall(SYS_pidfd_open, pids[k], 0);
    if (fds[k] < 0 && (errno == EMFILE || errno == ENFILE)) break; /* the rest: the next batch */
  }
  int listed;
  /* the listing needs descriptors too: give pins back (their pids go to the next batch) until it can be made */
  while ((listed = list_members()) != 0 && (errno == EMFILE || errno == ENFILE) && k > 0) {
    size_t keep = k > LIST_FDS ? k - LIST_FDS : k / 2;
    while (k > keep)
      if (fds[--k] >= 0) close(fds[k]);
  }
  *used = listed == 0 || (errno != EMFILE && errno != ENFILE) ? k : 0;
  int sent = 0;
  if (listed == 0) {
    qsort(list, nlist, sizeof *list, cmp_pid);
    for (size_t i = 0; i < k; i++) {
      if (fds[i] < 0 || bsearch(&pids[i], list, nlist, sizeof *list, cmp_pid) == NULL) continue;
      if (syscall(SYS_pidfd_send_signal, fds[i], sig, NULL, 0) == 0) {
        sent++;
        if (stop_needs_cont(sig)) syscall(SYS_pidfd_send_signal, fds[i], SIGCONT, NULL, 0);
      }
      if (mark) mark_signalled(pids[i]);
    }
  }
  for (size_t i = 0; i < k; i++)
    if (fds[i] >= 0) close(fds[i]);
  return sent;
}

/* The command's group when cgroup_signal_command signalled it whole (0: not): the frozen listing
 * skips its members then, which the group's signal reached (a fork races no group signal: the
 * kernel restarts a fork that a pending signal meets). */
static pid_t group_signalled = 0;

/* Whether the stop's first signal already reached `pid` (fresh_only passes). */
static int had_first_signal(pid_t pid) {
  return is_signalled(pid) || (group_signalled > 0 && getpgid(pid) == group_signalled);
}

/* `sig` once to each member listed now (fresh_only: to those that have not had this stop's
 * signal yet). Returns how many got it; *listed: how many were new. */
static int signal_listed(int sig, int fresh_only, size_t *listed) {
  *listed = 0;
  if (list_members() != 0) return 0;
  if ((int)nlist > cg.members) cg.members = (int)nlist;
  pid_t *todo = malloc((nlist ? nlist : 1) * sizeof *todo);
  if (todo == NULL) return 0;
  size_t ntodo = 0;
  for (size_t i = 0; i < nlist; i++)
    if (!fresh_only || !had_first_signal(list[i])) todo[ntodo++] = list[i];
  size_t room = pin_room();
  int sent = 0;
  for (size_t at = 0; at < ntodo;) {
    size_t used = 0;
    sent += signal_batch(todo + at, ntodo - at < room ? ntodo - at : room, sig, fresh_only, &used);
    if (used == 0) break; /* not one descriptor to spare: the grace's end (cgroup.kill) takes them */
    at += used;
  }
  free(todo);
  *listed = ntodo;
  return sent;
}

/* 0 once cgroup.events says `frozen <want>`; -1 when it has not within `ms`. */
static int await_frozen(int want, long long ms) {
  long long until = now_ms() + ms;
  char text[16];
  snprintf(text, sizeof text, "frozen %d", want);
  for (;;) {
    int fd = openat(cg.dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
    char buf[256];
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n > 0) {
      buf[n] = '\0';
      if (strstr(buf, text)) return 0;
    }
    long long left = until - now_ms();
    if (left <= 0) return -1;
    /* a change of `frozen` is an inotify event on cgroup.events; without the watch, short sleeps */
    if (cg.inotify_fd >= 0) {
      struct pollfd p = {cg.inotify_fd, POLLIN, 0};
      if (poll(&p, 1, left > 50 ? 50 : (int)left) > 0) cgroup_drain();
    } else {
      struct timespec t = {0, 5 * 1000000L};
      nanosleep(&t, NULL);
    }
  }
}

/* `sig` to every member. fresh_only (the stop's first signal): the cgroup is frozen first, so
 * nothing in it can fork while it is listed and signalled: one listing holds every process that
 * existed when the stop began, and whatever starts after the thaw started after the stop (a
 * server's cleanup helpers: left until the grace ends, as on the subreaper path). Where the freeze
 * cannot be had (or is not confirmed in FREEZE_WAIT_MS), passes until one finds none new, each
 * member once; cg.freeze says which. Returns how many got it. */
int cgroup_signal(int sig, int fresh_only) {
  size_t listed;
  if (!fresh_only) return signal_listed(sig, 0, &listed);
  long long wait = opt.grace_ms / 4 < FREEZE_WAIT_MS ? opt.grace_ms / 4 : FREEZE_WAIT_MS;
  if (write_at(cg.dirfd, "cgroup.freeze", "1") != 0) {
    snprintf(cg.freeze, sizeof cg.freeze, "cgroup.freeze: %s", strerror(errno));
  } else if (await_frozen(1, wait) != 0) {
    snprintf(cg.freeze, sizeof cg.freeze, "not frozen within %lld ms", wait);
  } else {
    int sent = signal_listed(sig, 1, &listed);
    write_at(cg.dirfd, "cgroup.freeze", "0");
    snprintf(cg.freeze, sizeof cg.freeze, "frozen");
    return sent;
  }
  int sent = 0;
  for (int pass = 0; pass < MAX_PASSES; pass++) {
    sent += signal_listed(sig, 1, &listed);
    if (listed == 0) break;
  }
  write_at(cg.dirfd, "cgroup.freeze", "0"); /* (a freeze asked for but not confirmed) */
  return sent;
}

/* The stop's signal to the command's group, ahead of the rest (stop.c: a container run's client,
 * before the engine's stop), as the tree's path gives it: a client run by a shim that does not exec
 * is a member of that group, not the command. The command leads its group, our unreaped child: the
 * id is exact. Where it does not lead one, the command alone, marked, so the cgroup's first signal
 * does not give it a second one. */
void cgroup_signal_command(pid_t pid, int sig) {
  if (getpgid(pid) == pid && killpg_then_cont(pid, sig) == 0) {
    group_signalled = pid;
    return;
  }
  mark_signalled(pid);
  kill_then_cont(pid, sig);
}


/* A member that is exiting leaves its cgroup (populated 0) before it becomes a zombie (do_exit:
 * cgroup_exit, then exit_notify): in between, our last child of the cgroup is neither a member nor
 * one to reap, and a look for children outside it would read /proc for nothing (once in a CI run).
 * So, once per stop, that moment is given up to 20 ms: 0 if a child is still alive and unexited
 * after it (one outside the cgroup: it is listed), 1 once one is to reap (its SIGCHLD wakes the
 * loop), -1 once we have none. */
static int exit_window_passed(void) {
  static int waited = 0;
  if (waited) return 0;
  waited = 1;
  for (int i = 0; i < 40; i++) {
    struct timespec t = {0, 500 * 1000L};
    nanosleep(&t, NULL);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return -1; /* ECHILD */
    if (si.si_pid != 0) return 1;
  }
  return 0;
}

/* Our live children once the cgroup is empty: descendants that moved themselves into another
 * cgroup (cgexec, runc, conmon do), re-parented to us, the subreaper; the cgroup's stop cannot
 * reach them. `sig` to each (fresh_only: each once per stop). An unreaped child's pid cannot be
 * taken by another process, so kill() on it is exact. Returns how many there are. No /proc read
 * unless there is one: waitid says whether we have children at all. */
int cgroup_outside(int sig, int fresh_only) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return 0; /* ECHILD: none */
  if (si.si_pid != 0) return 1; /* one to reap: its SIGCHLD wakes the loop, which looks again */
  int window = exit_window_passed();
  if (window != 0) return window > 0 ? 1 : 0;
  pid_t *kids = NULL;
  size_t nkids = 0;
  if (st.children_ok && read_children()) {
    kids = children;
    nkids = nchildren;
  } else {
    scan_procs();
    kids = malloc((nprocs ? nprocs : 1) * sizeof *kids);
    if (kids == NULL) return 1;
    for (size_t i = 0; i < nprocs; i++)
      if (procs[i].ppid == getpid() && procs[i].state != 'Z') kids[nkids++] = procs[i].pid;
  }
  for (size_t i = 0; i < nkids; i++) {
    if (sig && !(fresh_only && is_signalled(kids[i]))) {
      if (sig == SIGKILL || fresh_only) mark_signalled(kids[i]);
      kill_then_cont(kids[i], sig);
    }
  }
  if ((int)nkids > cg.outside) cg.outside = (int)nkids;
  if (kids != children) free(kids);
  return nkids ? (int)nkids : 1; /* (children, none listed yet: look again) */
}

/* How many members are listed now (-1: unreadable). */
int cgroup_count(void) {
  return list_members() == 0 ? (int)nlist : -1;
}

/* The forced phase: `cgroup.kill`. 0, or -1. */
int cgroup_kill(void) {
  int n = cgroup_count();
  if (n > cg.members) cg.members = n;
  int r = write_at(cg.dirfd, "cgroup.kill", "1");
  if (r == 0) cg.killed = 1;
  return r;
}

/* 1 populated, 0 empty, -1 unknown (never read as empty). */
int cgroup_populated(void) {
  int fd = openat(cg.dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strstr(buf, "populated ");
  if (p == NULL) return -1;
  return p[10] == '0' ? 0 : 1;
}

/* The inotify descriptor on cgroup.events for the loop (made once), or -1 (then the loop ticks). */
int cgroup_watch_fd(void) {
  if (cg.inotify_fd >= 0 || cg.watch_failed) return cg.inotify_fd;
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/cgroup.events", cg.path);
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd >= 0 && inotify_add_watch(fd, path, IN_MODIFY) < 0) {
    close(fd);
    fd = -1;
  }
  if (fd < 0) cg.watch_failed = 1;
  cg.inotify_fd = fd;
  return fd;
}

/* Reads the inotify events that woke the loop (the next ours_remaining() reads cgroup.events). */
void cgroup_drain(void) {
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  while (read(cg.inotify_fd, buf, sizeof buf) > 0) cg.events++;
}

static int remove_inside(int dir, int depth) {
  DIR *d = open_listing(dir);
  if (d == NULL) return -1;
  int ok = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sub >= 0) {
      if (depth < MAX_DEPTH) remove_inside(sub, depth + 1);
      close(sub);
    }
    if (unlinkat(dir, e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT) ok = -1;
  }
  closedir(d);
  return ok;
}

/* Removes the cgroup once empty, deepest first: 1 when removed. A populated one stays (doctor). */
int cgroup_remove(void) {
  if (cg.removed) return 1;
  if (cgroup_populated() != 0) return 0;
  remove_inside(cg.dirfd, 0);
  /* rmdir goes by path: the path must still name the cgroup we made (not one made there since) */
  struct stat s;
  if (stat(cg.path, &s) != 0 || (unsigned long long)s.st_ino != cg.id) return 0;
  if (rmdir(cg.path) != 0 && errno != ENOENT) return 0;
  cg.removed = 1;
  return 1;
}
#endif
