/* The owner label of a container run: reapkit.owner=<value>, the same value lib/mechanisms/container/
 * owner.ts writes, so that reapkit doctor judges the wrapper's runs and spawn()'s alike:
 *
 *   Linux:  <hostname>/<boot_id>/<pid>/<starttime>/pidns:<inode>/mid:<machine id>
 *   other:  <hostname>/<boot_id>/<pid>/<starttime>
 *
 * "-" for what the system does not have or would not tell. The pid and its start time name this
 * process (the run's owner) for as long as it lives; the boot id, this boot; the PID namespace, where
 * the pid is a number; the machine id, this machine: two machines with one hostname (clones of one
 * image, a hostname given twice) have different boot ids too, so without it a run of the other
 * machine would read as one of an earlier boot of this one, and its owner as dead (issue 28). */

#include "supervise.h"

#if RK_LINUX
/* 1 when this /proc numbers processes as our PID namespace does (its `self` is our pid); 0 under a
 * /proc mounted for another namespace (`unshare --pid --fork` without `--mount-proc`), where the
 * entry at our pid number is another process, if any, and where there is no /proc. */
static int proc_is_ours(void) {
  char link[32];
  ssize_t n = readlink("/proc/self", link, sizeof link - 1);
  if (n <= 0) return 0;
  link[n] = '\0';
  return strtol(link, NULL, 10) == (long)getpid();
}

/* "pidns:<inode>": the PID namespace our pid is a number in (doctor judges an owner only from its
 * own namespace). /proc/self/ns/pid is our own through any /proc; "pidns:-" where even that cannot
 * be read (never judged). */
static void pid_namespace(char *buf, size_t size) {
  char link[64];
  ssize_t n = readlink("/proc/self/ns/pid", link, sizeof link - 1);
  unsigned long long ino = 0;
  char tail = 0;
  snprintf(buf, size, "pidns:-");
  if (n <= 0) return;
  link[n] = '\0';
  if (sscanf(link, "pid:[%llu%c", &ino, &tail) == 2 && tail == ']' && ino > 0) snprintf(buf, size, "pidns:%llu", ino);
}

/* Reads a machine-id file into out[33]: 0 when it holds exactly 32 lowercase hex digits (and at most
 * a newline after them), as systemd and D-Bus write it; -1 otherwise (missing, unreadable, systemd's
 * "uninitialized" of a first boot, anything else). At most 64 bytes are read. */
static int machine_id_from(const char *path, char out[33]) {
  char raw[64];
  size_t got = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -1;
  while (got < sizeof raw) {
    ssize_t n = read(fd, raw + got, sizeof raw - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  if (got != 32 && !(got == 33 && raw[32] == '\n')) return -1;
  for (size_t i = 0; i < 32; i++)
    if (!((raw[i] >= '0' && raw[i] <= '9') || (raw[i] >= 'a' && raw[i] <= 'f'))) return -1;
  memcpy(out, raw, 32);
  out[32] = '\0';
  return 0;
}

/* "mid:<32 hex>": /etc/machine-id, or D-Bus's /var/lib/dbus/machine-id where that holds none;
 * "mid:-" when neither does. */
static void machine_id(char *buf, size_t size) {
  char id[33];
  if (machine_id_from("/etc/machine-id", id) == 0 || machine_id_from("/var/lib/dbus/machine-id", id) == 0)
    snprintf(buf, size, "mid:%s", id);
  else
    snprintf(buf, size, "mid:-");
}
#endif

/* The boot id ("-" where there is none), at most 63 bytes. */
static void boot_id(char *buf, size_t size) {
  snprintf(buf, size, "-");
#if RK_LINUX
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  if (buf[0] == '\0') snprintf(buf, size, "-");
#endif
}

/* reapkit.owner=<value> into buf. At most 14 + host 255 + boot 63 + pid 11 + start 31 + pidns 26 +
 * mid 36 + 5 slashes = 441 bytes: OWNER_LABEL_SIZE (supervise.h) holds it, never cut. */
void owner_label(char *buf, size_t size) {
  char host[256] = "-", boot[64], start[32] = "-";
  if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "-");
  host[sizeof host - 1] = '\0';
  boot_id(boot, sizeof boot);
#if RK_LINUX
  char ns[40], mid[40];
  proc_t self;
  if (proc_is_ours() && read_stat(getpid(), &self) == 0) snprintf(start, sizeof start, "%llu", self.start);
  pid_namespace(ns, sizeof ns);
  machine_id(mid, sizeof mid);
  snprintf(buf, size, "reapkit.owner=%s/%s/%d/%s/%s/%s", host, boot, (int)getpid(), start, ns, mid);
#else
  snprintf(buf, size, "reapkit.owner=%s/%s/%d/%s", host, boot, (int)getpid(), start);
#endif
}
