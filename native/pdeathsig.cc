// Linux prctl: PR_SET_PDEATHSIG / PR_GET_PDEATHSIG and PR_SET_CHILD_SUBREAPER / PR_GET_CHILD_SUBREAPER.
// Elsewhere every call fails with ENOTSUP (never a silent no-op) and capabilities() says false.
// Also a subreaper's duty, on every POSIX system: reaping one adopted zombie by pid.
#include <napi.h>

#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "errors.h"
#include "reapkit.h"

#if defined(__linux__)
#include <sys/prctl.h>
#define REAPKIT_HAVE_PRCTL 1
#endif

#ifndef ENOTSUP
#define ENOTSUP EOPNOTSUPP
#endif

namespace reapkit {

#if REAPKIT_HAVE_PRCTL
static Napi::Value SetParentDeathSignal(const Napi::CallbackInfo& info) {
  int32_t sig;
  if (!ArgInt(info, 0, "signal", &sig)) return info.Env().Undefined();
  if (prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0) < 0) {
    return ThrowSystemError(info.Env(), errno, "prctl");
  }
  return info.Env().Undefined();
}

static Napi::Value GetParentDeathSignal(const Napi::CallbackInfo& info) {
  int sig = 0;
  if (prctl(PR_GET_PDEATHSIG, (unsigned long)&sig, 0, 0, 0) < 0) {
    return ThrowSystemError(info.Env(), errno, "prctl");
  }
  return Napi::Number::New(info.Env(), sig);
}

static Napi::Value SetChildSubreaper(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsBoolean()) return ThrowTypeError(info.Env(), "on must be a boolean");
  unsigned long on = info[0].As<Napi::Boolean>().Value() ? 1 : 0;
  if (prctl(PR_SET_CHILD_SUBREAPER, on, 0, 0, 0) < 0) return ThrowSystemError(info.Env(), errno, "prctl");
  return info.Env().Undefined();
}

static Napi::Value IsChildSubreaper(const Napi::CallbackInfo& info) {
  int on = 0;
  if (prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&on, 0, 0, 0) < 0) {
    return ThrowSystemError(info.Env(), errno, "prctl");
  }
  return Napi::Boolean::New(info.Env(), on != 0);
}
#else
static Napi::Value NotSupported(const Napi::CallbackInfo& info) {
  return ThrowSystemError(info.Env(), ENOTSUP, "prctl");
}
#define SetParentDeathSignal NotSupported
#define GetParentDeathSignal NotSupported
#define SetChildSubreaper NotSupported
#define IsChildSubreaper NotSupported
#endif

// reapZombie(pid): reaps child `pid` if it has exited (true), false if it still runs; ECHILD if it
// is not our child. For orphans adopted as a subreaper only: libuv waits for the children it
// spawned itself by pid, and a status taken from under it is lost to its ChildProcess.
static Napi::Value ReapZombie(const Napi::CallbackInfo& info) {
  int32_t pid;
  if (!ArgInt(info, 0, "pid", &pid)) return info.Env().Undefined();
  if (pid <= 0) return ThrowSystemError(info.Env(), EINVAL, "waitid");
  siginfo_t si;
  memset(&si, 0, sizeof si);
  int r;
  do r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r < 0) return ThrowSystemError(info.Env(), errno, "waitid");
  return Napi::Boolean::New(info.Env(), si.si_pid == pid);
}

bool HavePrctl() {
#if REAPKIT_HAVE_PRCTL
  return true;
#else
  return false;
#endif
}

void InitPdeathsig(Napi::Env env, Napi::Object exports) {
  exports.Set("setParentDeathSignal", Napi::Function::New(env, SetParentDeathSignal, "setParentDeathSignal"));
  exports.Set("getParentDeathSignal", Napi::Function::New(env, GetParentDeathSignal, "getParentDeathSignal"));
  exports.Set("setChildSubreaper", Napi::Function::New(env, SetChildSubreaper, "setChildSubreaper"));
  exports.Set("isChildSubreaper", Napi::Function::New(env, IsChildSubreaper, "isChildSubreaper"));
  exports.Set("reapZombie", Napi::Function::New(env, ReapZombie, "reapZombie"));
}

}  // namespace reapkit
