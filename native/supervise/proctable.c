/* The process table (Linux): /proc reads, pinned signals. */

#include "supervise.h"

proc_t *procs = NULL;
size_t nprocs = 0;
long proc_reads = 0;
static size_t procs_cap = 0;

#if RK_LINUX
int read_stat(pid_t pid, proc_t *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  proc_reads++;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the command name may contain anything, even ')' */
  if (p == NULL) return -1;
  int ppid = 0, pgrp = 0, threads = 0;
  char state = 0;
  unsigned long long start = 0;
  if (sscanf(p + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %d %*d %llu", &state, &ppid,
             &pgrp, &threads, &start) != 5)
    return -1;
  out->threads = threads;
  out->pid = pid;
  out->ppid = ppid;
  out->pgrp = pgrp;
  out->start = start;
  out->state = state;
  return 0;
}

void scan_procs(void) {
  nprocs = 0;
  proc_reads++;
  DIR *d = opendir("/proc");
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    if (nprocs == procs_cap) {
      size_t cap = procs_cap ? procs_cap * 2 : 256;
      proc_t *p = realloc(procs, cap * sizeof *p);
      if (p == NULL) break;
      procs = p;
      procs_cap = cap;
    }
    if (read_stat((pid_t)atoi(e->d_name), &procs[nprocs]) == 0) nprocs++;
  }
  closedir(d);
}

/* Signal one process found by the scan, only if it is still that process: pin it with a pidfd,
 * re-check its start time, signal through the pidfd (no pid reuse can slip in between). */
int signal_pinned(const proc_t *p, int sig) {
  proc_t again;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  int fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
  if (fd >= 0) {
    int r = -1;
    if (read_stat(p->pid, &again) == 0 && again.start == p->start && again.state != 'Z') {
      r = (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
      if (r == 0 && stop_needs_cont(sig)) syscall(SYS_pidfd_send_signal, fd, SIGCONT, NULL, 0);
    }
    close(fd);
    return r;
  }
  if (errno != ENOSYS) return -1;
#endif
  if (read_stat(p->pid, &again) == 0 && again.start == p->start && again.state != 'Z') {
    int r = kill(p->pid, sig);
    if (r == 0 && stop_needs_cont(sig)) kill(p->pid, SIGCONT);
    return r;
  }
  return -1;
}
#endif

/* The process table can be read and is our PID namespace's (Linux, /proc/self is us). A /proc of
 * another namespace would name other processes by our pids: then only the group is signalled. */
int scan_ok = 0;

void check_proc(void) {
#if RK_LINUX
  char buf[32];
  ssize_t n = readlink("/proc/self", buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = '\0';
    scan_ok = atoi(buf) == (int)getpid();
  }
#endif
}

#if RK_LINUX
pid_t *children = NULL;
size_t nchildren = 0;
static size_t children_cap = 0;
static int read_pid_list(const char *path, pid_t **list, size_t *n, size_t *cap);

/* Our children, from /proc/self/task/<tid>/children (one thread: the supervisor has no other).
 * Returns 0 when the kernel does not offer the list. */
int read_children(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  return read_pid_list(path, &children, &nchildren, &children_cap);
}

/* mine[i] = procs[i] descends from `self`, for the table just scanned: each row walks up its
 * parents through a pid index until it meets a decided row, so the cost is linear in the table
 * (the old pass-until-stable marking was quadratic). Returns a calloc'd array, or NULL. */
char *mark_descendants(pid_t self) {
  size_t n = nprocs ? nprocs : 1;
  size_t cap = 1;
  while (cap < n * 2) cap <<= 1;
  int *index = malloc(cap * sizeof *index); /* pid -> row, open addressing; -1 empty */
  char *mine = calloc(n, 1);                /* 0 unknown, 1 ours, 2 not ours, 3 being walked */
  int *path = malloc(n * sizeof *path);
  if (index == NULL || mine == NULL || path == NULL) {
    free(index);
    free(mine);
    free(path);
    return NULL;
  }
  for (size_t i = 0; i < cap; i++) index[i] = -1;
  for (size_t i = 0; i < nprocs; i++) {
    size_t h = ((size_t)procs[i].pid * 2654435761u) & (cap - 1);
    while (index[h] >= 0) h = (h + 1) & (cap - 1);
    index[h] = (int)i;
  }
  for (size_t i = 0; i < nprocs; i++) {
    size_t depth = 0;
    int row = (int)i;
    char verdict = 2;
    while (row >= 0 && mine[row] == 0 && depth < n) {
      mine[row] = 3;
      path[depth++] = row;
      pid_t parent = procs[row].ppid;
      if (parent == self) {
        verdict = 1;
        row = -1;
        break;
      }
      size_t h = ((size_t)parent * 2654435761u) & (cap - 1);
      int next = -1;
      while (index[h] >= 0) {
        if (procs[index[h]].pid == parent) {
          next = index[h];
          break;
        }
        h = (h + 1) & (cap - 1);
      }
      row = next;
    }
    if (row >= 0 && mine[row] != 3) verdict = mine[row]; /* met a decided row (3: a cycle, not ours) */
    for (size_t k = 0; k < depth; k++) mine[path[k]] = verdict;
  }
  for (size_t i = 0; i < nprocs; i++) mine[i] = mine[i] == 1;
  free(index);
  free(path);
  return mine;
}

static int append_proc(pid_t pid, pid_t parent) {
  if (nprocs == procs_cap) {
    size_t cap = procs_cap ? procs_cap * 2 : 256;
    proc_t *p = realloc(procs, cap * sizeof *p);
    if (p == NULL) return -1;
    procs = p;
    procs_cap = cap;
  }
  /* a row only if the pid is still the child of the parent we read it from (not a pid that died
   * and was reused since: a reused pid has another parent, unless the parent forked it, then ours) */
  if (read_stat(pid, &procs[nprocs]) == 0 && procs[nprocs].ppid == parent) nprocs++;
  return 0;
}

/* Read a /proc list of pids ("children") whole into *list. Returns 0 when it cannot be opened. */
static int read_pid_list(const char *path, pid_t **list, size_t *n, size_t *cap) {
  static char *buf = NULL;
  static size_t buf_cap = 0;
  proc_reads++;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t len = 0;
  for (;;) {
    if (buf_cap - len < 4096) {
      size_t c = buf_cap ? buf_cap * 2 : 8192;
      char *b = realloc(buf, c);
      if (b == NULL) break;
      buf = b;
      buf_cap = c;
    }
    ssize_t r = read(fd, buf + len, buf_cap - len - 1);
    if (r <= 0) break;
    len += (size_t)r;
  }
  close(fd);
  *n = 0;
  if (buf == NULL) return 1;
  buf[len] = '\0';
  char *s = buf, *end;
  for (;;) {
    long v = strtol(s, &end, 10);
    if (end == s) break;
    s = end;
    if (*n == *cap) {
      size_t c = *cap ? *cap * 2 : 64;
      pid_t *l = realloc(*list, c * sizeof *l);
      if (l == NULL) break;
      *list = l;
      *cap = c;
    }
    if (v > 0) (*list)[(*n)++] = (pid_t)v;
  }
  return 1;
}

static void append_children_of(pid_t pid, pid_t tid) {
  static pid_t *kids = NULL;
  static size_t nkids = 0, kids_cap = 0;
  char path[80];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)tid);
  if (!read_pid_list(path, &kids, &nkids, &kids_cap)) return;
  for (size_t i = 0; i < nkids; i++) append_proc(kids[i], pid);
}

/* The table of our descendants only, walked down from our children through the kernel's children
 * lists (every thread's: a child belongs to the thread that forked it). Its cost is the size of our
 * tree, whatever else the machine runs; with a subreaper, every live descendant is on it. */
void walk_descendants(void) {
  nprocs = 0;
  pid_t self = getpid();
  append_children_of(self, self);
  for (size_t i = 0; i < nprocs; i++) {
    pid_t pid = procs[i].pid;
    if (procs[i].state == 'Z') continue;
    if (procs[i].threads <= 1) {
      append_children_of(pid, pid);
      continue;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL) continue;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
      if (isdigit((unsigned char)e->d_name[0])) append_children_of(pid, (pid_t)atoi(e->d_name));
    closedir(d);
  }
}
#endif
