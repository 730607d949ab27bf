// Process groups and plain signals: setpgid / getpgid / killpg / kill / getppid. Thin: the TS layer
// (lib/ground/native.ts, lib/ground/validate.ts) refuses dangerous pids and unknown signals before we get here.
#include <napi.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__linux__)
#include <dirent.h>
#include <fcntl.h>
#endif

#include "errors.h"
#include "reapkit.h"

namespace reapkit {

static Napi::Value GetPgid(const Napi::CallbackInfo& info) {
  int32_t pid;
  if (!ArgInt(info, 0, "pid", &pid)) return info.Env().Undefined();
  pid_t pgid = getpgid(pid);
  if (pgid < 0) return ThrowSystemError(info.Env(), errno, "getpgid");
  return Napi::Number::New(info.Env(), pgid);
}

static Napi::Value SetPgid(const Napi::CallbackInfo& info) {
  int32_t pid, pgid;
  if (!ArgInt(info, 0, "pid", &pid) || !ArgInt(info, 1, "pgid", &pgid)) return info.Env().Undefined();
  if (setpgid(pid, pgid) < 0) return ThrowSystemError(info.Env(), errno, "setpgid");
  return info.Env().Undefined();
}

static Napi::Value Kill(const Napi::CallbackInfo& info) {
  int32_t pid, sig;
  if (!ArgInt(info, 0, "pid", &pid) || !ArgInt(info, 1, "signal", &sig)) return info.Env().Undefined();
  // Last line of defence; the TS layer already refuses these with a RangeError.
  if (pid <= 1) return ThrowSystemError(info.Env(), EINVAL, "kill");
  if (kill(pid, sig) < 0) return ThrowSystemError(info.Env(), errno, "kill");
  return info.Env().Undefined();
}

static Napi::Value KillPg(const Napi::CallbackInfo& info) {
  int32_t pgrp, sig;
  if (!ArgInt(info, 0, "pgid", &pgrp) || !ArgInt(info, 1, "signal", &sig)) return info.Env().Undefined();
  if (pgrp <= 1) return ThrowSystemError(info.Env(), EINVAL, "killpg");
  if (killpg(pgrp, sig) < 0) return ThrowSystemError(info.Env(), errno, "killpg");
  return info.Env().Undefined();
}

// groupProbe(pgid): kill(-pgid, 0)'s errno, returned, not thrown: 0 (some process has the id, a
// zombie included), ESRCH (none) or EPERM (only another user's). spawn() asks it once at every
// child's reap (lib/mechanisms/spawn.ts, groupEmptyAtReap), where the usual answer is ESRCH and an
// Error built for it (process.kill's, its stack captured) cost several times the syscall.
static Napi::Value GroupProbe(const Napi::CallbackInfo& info) {
  int32_t pgrp;
  if (!ArgInt(info, 0, "pgid", &pgrp)) return info.Env().Undefined();
  if (pgrp <= 1) return ThrowSystemError(info.Env(), EINVAL, "kill");
  return Napi::Number::New(info.Env(), kill(-pgrp, 0) == 0 ? 0 : errno);
}

static Napi::Value GetPpid(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), getppid());
}

#if defined(__linux__)
// Calls visit(pid, pgrp) for every live (not zombie) process, from one pass over /proc/PID/stat
// (field 3: state, field 5: pgrp). Returns 0 or an errno.
template <typename Visit>
static int ScanProcesses(Visit visit) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return errno;
  char path[300];
  char buf[512];
  while (dirent* entry = readdir(proc)) {
    const char* name = entry->d_name;
    if (name[0] < '1' || name[0] > '9') continue;
    std::snprintf(path, sizeof path, "/proc/%s/stat", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ESRCH) continue;  // exited meanwhile
      int err = errno;  // EMFILE and the like: the listing would be incomplete, so it is an error
      closedir(proc);
      return err;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int read_err = n < 0 ? errno : 0;
    close(fd);
    if (n < 0 && read_err != ESRCH && read_err != ENOENT) {
      closedir(proc);
      return read_err;
    }
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses, so parse after the last ')'.
    char* close_paren = std::strrchr(buf, ')');
    if (close_paren == nullptr || close_paren[1] == '\0') continue;
    char state = close_paren[2];
    int ppid = 0, pgrp = 0;
    if (std::sscanf(close_paren + 3, "%d %d", &ppid, &pgrp) != 2) continue;
    if (state != 'Z' && state != 'X') visit(std::atoi(name), pgrp);
  }
  closedir(proc);
  return 0;
}
#endif

#ifndef ENOTSUP
#define ENOTSUP EOPNOTSUPP
#endif

// groupMembers(pgid) -> pids of the live (not zombie) members of process group `pgid`.
// kill(-pgid, 0) cannot tell a group of zombies from a live one. Elsewhere: ENOTSUP (the TS layer
// falls back to ps).
static Napi::Value GroupMembers(const Napi::CallbackInfo& info) {
  int32_t pgid;
  if (!ArgInt(info, 0, "pgid", &pgid)) return info.Env().Undefined();
#if defined(__linux__)
  std::vector<int> members;
  int err = ScanProcesses([&](int pid, int pgrp) {
    if (pgrp == pgid) members.push_back(pid);
  });
  if (err != 0) return ThrowSystemError(info.Env(), err, "opendir");
  Napi::Array out = Napi::Array::New(info.Env(), members.size());
  if (out.IsEmpty()) return Napi::Value();  // the environment is being torn down
  for (size_t i = 0; i < members.size(); i++) out.Set(static_cast<uint32_t>(i), members[i]);
  return out;
#else
  return ThrowSystemError(info.Env(), ENOTSUP, "group_members");
#endif
}

// groupTable() -> Int32Array [pid, pgid, pid, pgid, ...] of every live process: one scan that
// answers for many groups at once (shutting down hundreds of children scans once, not per child).
static Napi::Value GroupTable(const Napi::CallbackInfo& info) {
#if defined(__linux__)
  std::vector<int32_t> pairs;
  int err = ScanProcesses([&](int pid, int pgrp) {
    pairs.push_back(pid);
    pairs.push_back(pgrp);
  });
  if (err != 0) return ThrowSystemError(info.Env(), err, "opendir");
  Napi::Int32Array out = Napi::Int32Array::New(info.Env(), pairs.size());
  // While its environment is torn down (a worker terminated), V8 allocates no buffer: the array is
  // empty, its data null, and writing it was a segfault (seen: a worker ended mid group listing).
  if (out.IsEmpty() || (pairs.size() > 0 && out.Data() == nullptr)) return Napi::Value();
  for (size_t i = 0; i < pairs.size(); i++) out[i] = pairs[i];
  return out;
#else
  return ThrowSystemError(info.Env(), ENOTSUP, "group_table");
#endif
}

void InitGroup(Napi::Env env, Napi::Object exports) {
  exports.Set("groupMembers", Napi::Function::New(env, GroupMembers, "groupMembers"));
  exports.Set("groupTable", Napi::Function::New(env, GroupTable, "groupTable"));
  exports.Set("getpgid", Napi::Function::New(env, GetPgid, "getpgid"));
  exports.Set("setpgid", Napi::Function::New(env, SetPgid, "setpgid"));
  exports.Set("kill", Napi::Function::New(env, Kill, "kill"));
  exports.Set("killpg", Napi::Function::New(env, KillPg, "killpg"));
  exports.Set("groupProbe", Napi::Function::New(env, GroupProbe, "groupProbe"));
  exports.Set("getppid", Napi::Function::New(env, GetPpid, "getppid"));
}

}  // namespace reapkit
