// Process groups and plain signals: setpgid / getpgid / killpg / kill / getppid. Thin: the TS layer
// (lib/native.ts, lib/validate.ts) refuses dangerous pids and unknown signals before we get here.
#include <napi.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

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

void InitGroup(Napi::Env env, Napi::Object exports) {
  exports.Set("getpgid", Napi::Function::New(env, GetPgid, "getpgid"));
  exports.Set("setpgid", Napi::Function::New(env, SetPgid, "setpgid"));
  exports.Set("kill", Napi::Function::New(env, Kill, "kill"));
  exports.Set("killpg", Napi::Function::New(env, KillPg, "killpg"));
  exports.Set("getppid", Napi::Function::New(env, GetPpid, "getppid"));
}

}  // namespace reapkit
