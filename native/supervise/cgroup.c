/* The command's own cgroup as the unit of every stop (Linux, cgroup v2; cgroup_where.c makes it),
 * as lib/mechanisms/stop/cgroup-unit.ts does for spawn({ cgroup: true }):
 *
 *   join     the command is moved in by us, its parent, before its exec (command.c holds the exec
 *            until we have written its pid to cgroup.procs), so it and all it starts are members;
 *   members  `cgroup.procs` of the cgroup and of every cgroup a member made inside it, each pid
 *            pinned by pidfd and then seen listed again (the pin is that member, never a stranger
 *            that took a freed pid), signalled through the pin, once per stop;
 *   forced   `cgroup.kill`: the kernel's SIGKILL to every member at once, escapees included;
 *   gone     `cgroup.events` says `populated 0`, seen as an inotify event on that file (the loop
 *            polls the inotify descriptor, bounded by the stop's deadline): no /proc read at all;
 *   after    the cgroup is removed once empty, the cgroups inside it first; one still populated
 *            stays, named for `reapkit doctor`.
 * Every file is opened relative to the directory descriptor taken at mkdir (its id checked then). */

#include "supervise.h"

#if RK_LINUX
#include <sys/inotify.h>

#define PIN_BATCH 256  /* pidfds held at once while pinning (well under any open-file limit) */
#define MAX_DEPTH 16   /* cgroups inside ours, nested that deep at most */
#define MAX_PASSES 16  /* first-signal passes over members forked meanwhile */

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
  int dfd = dup(dir);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (d == NULL) {
    if (dfd >= 0) close(dfd);
    return 0;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sub < 0) continue;
    members_of(sub, depth + 1);
    close(sub);
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

/* Pins each pid of `pids`, lists the members again, and signals through each pin whose pid is
 * still listed. Returns how many were signalled. */
static int signal_batch(const pid_t *pids, size_t n, int sig, int mark) {
  int fds[PIN_BATCH];
  for (size_t i = 0; i < n; i++) fds[i] = (int)syscall(SYS_pidfd_open, pids[i], 0);
  int sent = 0;
  if (list_members() == 0) {
    qsort(list, nlist, sizeof *list, cmp_pid);
    for (size_t i = 0; i < n; i++) {
      if (fds[i] < 0 || bsearch(&pids[i], list, nlist, sizeof *list, cmp_pid) == NULL) continue;
      if (syscall(SYS_pidfd_send_signal, fds[i], sig, NULL, 0) == 0) {
        sent++;
        if (stop_needs_cont(sig)) syscall(SYS_pidfd_send_signal, fds[i], SIGCONT, NULL, 0);
      }
      if (mark) mark_signalled(pids[i]);
    }
  }
  for (size_t i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
  return sent;
}

/* `sig` to every member (fresh_only: to those that have not had this stop's signal yet, in passes
 * until one finds none new, so members forked meanwhile get it too). Returns how many got it. */
int cgroup_signal(int sig, int fresh_only) {
  int sent = 0;
  for (int pass = 0; pass < (fresh_only ? MAX_PASSES : 1); pass++) {
    if (list_members() != 0) break;
    if ((int)nlist > cg.members) cg.members = (int)nlist;
    pid_t *todo = malloc((nlist ? nlist : 1) * sizeof *todo);
    if (todo == NULL) break;
    size_t ntodo = 0;
    for (size_t i = 0; i < nlist; i++)
      if (!fresh_only || !is_signalled(list[i])) todo[ntodo++] = list[i];
    for (size_t at = 0; at < ntodo; at += PIN_BATCH)
      sent += signal_batch(todo + at, ntodo - at < PIN_BATCH ? ntodo - at : PIN_BATCH, sig, fresh_only);
    free(todo);
    if (ntodo == 0) break;
  }
  return sent;
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
  int dfd = dup(dir);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (d == NULL) {
    if (dfd >= 0) close(dfd);
    return -1;
  }
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
  struct stat s;
  if (fstat(cg.dirfd, &s) != 0 || (unsigned long long)s.st_ino != cg.id) return 0;
  remove_inside(cg.dirfd, 0);
  if (rmdir(cg.path) != 0 && errno != ENOENT) return 0;
  cg.removed = 1;
  return 1;
}
#endif
