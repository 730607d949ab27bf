// Process groups and plain signals: setpgid / getpgid / killpg / kill / getppid. Thin: the TS layer
// (lib/native.ts, lib/validate.ts) refuses dangerous pids and unknown signals before we get here.
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

static Napi::Value GetPpid(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), getppid());
}

// groupMembers(pgid) -> pids of the live (not zombie) members of process group `pgid`. Linux reads
// /proc/PID/stat (field 3: state, field 5: pgrp) in one pass; kill(-pgid, 0) cannot tell a group of
// zombies from a live one. Elsewhere: ENOTSUP (the TS layer falls back to ps).
static Napi::Value GroupMembers(const Napi::CallbackInfo& info) {
  int32_t pgid;
  if (!ArgInt(info, 0, "pgid", &pgid)) return info.Env().Undefined();
#if defined(__linux__)
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return ThrowSystemError(info.Env(), errno, "opendir");
  std::vector<int> members;
  char path[300];
  char buf[512];
  while (dirent* entry = readdir(proc)) {
    const char* name = entry->d_name;
    if (name[0] < '1' || name[0] > '9') continue;
    std::snprintf(path, sizeof path, "/proc/%s/stat", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // exited meanwhile
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses, so parse after the last ')'.
    char* close_paren = std::strrchr(buf, ')');
    if (close_paren == nullptr || close_paren[1] == '\0') continue;
    char state = close_paren[2];
    int ppid = 0, pgrp = 0;
    if (std::sscanf(close_paren + 3, "%d %d", &ppid, &pgrp) != 2) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') members.push_back(std::atoi(name));
  }
  closedir(proc);
  Napi::Array out = Napi::Array::New(info.Env(), members.size());
  for (size_t i = 0; i < members.size(); i++) out.Set(static_cast<uint32_t>(i), members[i]);
  return out;
#else
#ifndef ENOTSUP
#define ENOTSUP EOPNOTSUPP
#endif
  return ThrowSystemError(info.Env(), ENOTSUP, "group_members");
#endif
}

void InitGroup(Napi::Env env, Napi::Object exports) {
  exports.Set("groupMembers", Napi::Function::New(env, GroupMembers, "groupMembers"));
  exports.Set("getpgid", Napi::Function::New(env, GetPgid, "getpgid"));
  exports.Set("setpgid", Napi::Function::New(env, SetPgid, "setpgid"));
  exports.Set("kill", Napi::Function::New(env, Kill, "kill"));
  exports.Set("killpg", Napi::Function::New(env, KillPg, "killpg"));
  exports.Set("getppid", Napi::Function::New(env, GetPpid, "getppid"));
}

}  // namespace reapkit
