/* Where the command gets a cgroup of its own (Linux, cgroup v2), and its name: the same rules and the
 * same name as the library's (lib/mechanisms/cgroup/where.ts, name.ts), so that `reapkit doctor`
 * lists and judges the wrapper's cgroups as it does spawn()'s.
 *
 * systemd's single-writer rule: a cgroup is made only inside our own cgroup namespace where no
 * systemd runs (a container's), inside a subtree that is ours by ownership (delegated to our uid),
 * or as root where no systemd manages the tree (no /run/systemd/system). Never inside a unit systemd
 * manages without delegation. And only where the kernel has `cgroup.kill` (5.14) and our own cgroup
 * accepts a child (no controllers enabled below it, unless it is the root).
 *
 * Name: reapkit-<hostname>_<boot id, 32 hex>_<pid namespace inode>_<pid>_<start time>_<thread>_<seq>,
 * '-' for a field that cannot be read; thread 0 (the wrapper has one), seq from 1. */

#include "supervise.h"

cgroup_t cg = {0, -1, -1, "", "", 0, 0, 0, 0, 0, 0, 0, ""};

#if RK_LINUX
#include <sys/utsname.h>

#define INITIAL_CGROUP_NS_INO 0xeffffffbULL /* include/linux/proc_ns.h: PROC_CGROUP_INIT_INO */

static void why(const char *fmt, const char *arg) {
  snprintf(cg.reason, sizeof cg.reason, fmt, arg);
}

/* A small file read whole into buf (NUL-ended); -1 when it cannot be read. */
static ssize_t slurp(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < size - 1) {
    ssize_t n = read(fd, buf + got, size - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  buf[got] = '\0';
  return (ssize_t)got;
}

static int kernel_has_cgroup_kill(void) {
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2) return 0;
  return major > 5 || (major == 5 && minor >= 14);
}

/* The cgroup2 mount of the hierarchy's root, as our mount namespace sees it (mountinfo, octal escapes undone). */
static int cgroup2_mount(char *out, size_t size) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL) return -1;
  char line[4096];
  int found = -1;
  while (found < 0 && fgets(line, sizeof line, f)) {
    char *sep = strstr(line, " - ");
    if (sep == NULL || strncmp(sep + 3, "cgroup2 ", 8) != 0) continue;
    char root[PATH_MAX], mnt[PATH_MAX];
    if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 || strcmp(root, "/") != 0) continue;
    size_t o = 0;
    for (const char *s = mnt; *s && o < size - 1; s++) {
      if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
        out[o++] = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
        s += 3;
      } else {
        out[o++] = *s;
      }
    }
    out[o] = '\0';
    found = 0;
  }
  fclose(f);
  return found;
}

/* Our cgroup in the v2 hierarchy (the 0:: line), or -1 (none, or removed under us). */
static int own_cgroup(char *out, size_t size) {
  char buf[8192];
  if (slurp("/proc/self/cgroup", buf, sizeof buf) < 0) return -1;
  for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, "0::", 3) != 0) continue;
    size_t n = strcspn(l + 3, "\n");
    if (n == 0 || n >= size) return -1;
    memcpy(out, l + 3, n);
    out[n] = '\0';
    return strstr(out, " (deleted)") ? -1 : 0;
  }
  return -1;
}

/* 0 when we may write under `path` (the rule at the top), else -1 with cg.reason. */
static int ours_to_write(const char *path) {
  struct stat s;
  int systemd = stat("/run/systemd/system", &s) == 0;
  if (!systemd && stat("/proc/self/ns/cgroup", &s) == 0 && (unsigned long long)s.st_ino != INITIAL_CGROUP_NS_INO) return 0;
  if (geteuid() != 0) {
    if (stat(path, &s) == 0 && s.st_uid == geteuid()) return 0;
    why(systemd ? "our cgroup %s belongs to a unit systemd manages, not delegated to us" : "our cgroup %s is not owned by our uid", path);
    return -1;
  }
  if (!systemd) return 0;
  why("systemd manages our cgroup %s; a delegation to a root service cannot be read here, so it is left to systemd", path);
  return -1;
}

/* Where children may be made (our own cgroup's directory), or -1 with cg.reason. */
static int parent_dir(char *out, size_t size) {
  char mount[PATH_MAX], own[PATH_MAX], buf[256];
  if (!kernel_has_cgroup_kill()) return why("%s", "the kernel has no cgroup.kill (5.14+)"), -1;
  if (cgroup2_mount(mount, sizeof mount) != 0) return why("%s", "no cgroup v2 hierarchy is mounted"), -1;
  if (own_cgroup(own, sizeof own) != 0) return why("%s", "this process is in no cgroup v2"), -1;
  int root = strcmp(own, "/") == 0;
  if ((size_t)snprintf(out, size, "%s%s", mount, root ? "" : own) >= size) return why("%s", "our cgroup's path is too long"), -1;
  struct stat s;
  if (stat(out, &s) != 0 || !S_ISDIR(s.st_mode)) return why("our cgroup %s is not visible under the v2 mount", own), -1;
  if (ours_to_write(out) != 0) return -1;
  char ctl[PATH_MAX + 32];
  snprintf(ctl, sizeof ctl, "%s/cgroup.subtree_control", out);
  if (slurp(ctl, buf, sizeof buf) < 0) return why("cannot read %s", ctl), -1;
  if (!root && buf[strspn(buf, " \n")] != '\0') return why("our cgroup %s enables controllers for its children", out), -1;
  snprintf(ctl, sizeof ctl, "%s/cgroup.procs", out);
  if (access(out, W_OK) != 0 || access(ctl, W_OK) != 0) return why("our cgroup %s is not writable by this process", out), -1;
  return 0;
}

/* This process's part of the name, up to its start time (name.ts's ownNamePrefix). */
static void name_prefix(char *out, size_t size) {
  char host[256] = "", boot[64] = "-", ns[32] = "-", start[32] = "-", buf[1024];
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  host[63] = '\0';
  for (char *h = host; *h; h++)
    if (!isalnum((unsigned char)*h) && *h != '.' && *h != '-') *h = '-';
  if (host[0] == '\0') strcpy(host, "-");
  if (slurp("/proc/sys/kernel/random/boot_id", buf, sizeof buf) > 0) {
    size_t o = 0;
    for (char *b = buf; *b && *b != '\n' && o < 32; b++)
      if (*b != '-') boot[o++] = *b;
    boot[o] = '\0';
    if (o != 32 || strspn(boot, "0123456789abcdef") != 32) strcpy(boot, "-");
  }
  struct stat s;
  if (stat("/proc/self/ns/pid", &s) == 0) snprintf(ns, sizeof ns, "%llu", (unsigned long long)s.st_ino);
  /* our start time (field 22), from our own entry: /proc/self is this process through any /proc */
  if (slurp("/proc/self/stat", buf, sizeof buf) > 0 && strrchr(buf, ')')) {
    unsigned long long t;
    if (sscanf(strrchr(buf, ')') + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &t) == 1)
      snprintf(start, sizeof start, "%llu", t);
  }
  snprintf(out, size, "reapkit-%s_%s_%s_%d_%s", host, boot, ns, (int)getpid(), start);
}

static void remove_at_exit(void) {
  if (cg.active && !cg.removed) cgroup_remove(); /* an empty one only: a populated one stays, for doctor */
}

/* Makes the command's cgroup: 0 (cg.active, cg.path, cg.dirfd), or -1 with cg.reason. */
int cgroup_make(void) {
  char parent[PATH_MAX], prefix[512];
  if (parent_dir(parent, sizeof parent) != 0) return -1;
  name_prefix(prefix, sizeof prefix);
  for (int seq = 1; seq <= 16; seq++) {
    if ((size_t)snprintf(cg.path, sizeof cg.path, "%s/%s_0_%d", parent, prefix, seq) >= sizeof cg.path)
      return why("%s", "the cgroup's path is too long"), -1;
    if (mkdir(cg.path, 0755) != 0) {
      if (errno == EEXIST) continue;
      return why("mkdir: %s", strerror(errno)), -1;
    }
    cg.dirfd = open(cg.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat s;
    if (cg.dirfd < 0 || fstat(cg.dirfd, &s) != 0) {
      int e = errno;
      if (cg.dirfd >= 0) close(cg.dirfd);
      cg.dirfd = -1;
      rmdir(cg.path);
      return why("cannot open the cgroup made: %s", strerror(e)), -1;
    }
    cg.id = (unsigned long long)s.st_ino; /* the kernel's cgroup id: never reused while it exists */
    cg.active = 1;
    atexit(remove_at_exit);
    return 0;
  }
  return why("%s", "16 names taken"), -1;
}
#endif
