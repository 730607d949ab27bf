/* The process table (Linux): /proc reads, pinned signals. */

#include "supervise.h"

proc_t *procs = NULL;
size_t nprocs = 0;
static size_t procs_cap = 0;

#if RK_LINUX
int read_stat(pid_t pid, proc_t *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the command name may contain anything, even ')' */
  if (p == NULL) return -1;
  int ppid = 0, pgrp = 0;
  char state = 0;
  unsigned long long start = 0;
  if (sscanf(p + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &state,
             &ppid, &pgrp, &start) != 4)
    return -1;
  out->pid = pid;
  out->ppid = ppid;
  out->pgrp = pgrp;
  out->start = start;
  out->state = state;
  return 0;
}

void scan_procs(void) {
  nprocs = 0;
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
    if (read_stat(p->pid, &again) == 0 && again.start == p->start && again.state != 'Z')
      r = (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
    close(fd);
    return r;
  }
  if (errno != ENOSYS) return -1;
#endif
  if (read_stat(p->pid, &again) == 0 && again.start == p->start && again.state != 'Z') return kill(p->pid, sig);
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
