// The controlling terminal's foreground process group, for spawn()'s foreground hand-over
// (lib/mechanisms/terminal.ts), and a look at whether our own child is stopped.
//
// tcsetpgrp from a process that is not in the terminal's foreground group sends SIGTTOU to its
// group unless SIGTTOU is blocked or ignored in the caller (POSIX; drivers/tty/tty_jobctrl.c,
// tty_check_change): taking the terminal back after a foreground child exits is exactly that case,
// so the call runs with SIGTTOU blocked in this thread, and the mask is restored right after.
//
// childStopped(pid): waitid(P_PID, pid, WSTOPPED | WNOHANG | WNOWAIT). WSTOPPED alone never
// reports, let alone reaps, an exit, and WNOWAIT leaves the stop reportable: libuv's own waitpid
// (no WUNTRACED) is unaffected. Only meaningful for our own child. childStopSignal(pid): the same
// look, answering the signal that stopped the child (SIGTTIN for a background read of the
// terminal), 0 when it is not stopped.
#include <napi.h>

#include <cerrno>

#include "errors.h"
#include "reapkit.h"

#ifndef _WIN32
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#endif

namespace reapkit {

static Napi::Value TcGetPgrp(const Napi::CallbackInfo& info) {
  int32_t fd;
  if (!ArgInt(info, 0, "fd", &fd)) return info.Env().Undefined();
  pid_t pgrp = tcgetpgrp(fd);
  if (pgrp < 0) return ThrowSystemError(info.Env(), errno, "tcgetpgrp");
  return Napi::Number::New(info.Env(), pgrp);
}

static Napi::Value TcSetPgrp(const Napi::CallbackInfo& info) {
  int32_t fd, pgrp;
  if (!ArgInt(info, 0, "fd", &fd) || !ArgInt(info, 1, "pgid", &pgrp)) return info.Env().Undefined();
  if (pgrp <= 1) return ThrowSystemError(info.Env(), EINVAL, "tcsetpgrp");
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &old);
  int rc = tcsetpgrp(fd, pgrp);
  int err = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc < 0) return ThrowSystemError(info.Env(), err, "tcsetpgrp");
  return info.Env().Undefined();
}

// The signal that stopped our child `pid`, 0 if it is not stopped; -1 with an exception pending.
static int StopSignal(const Napi::CallbackInfo& info) {
  int32_t pid;
  if (!ArgInt(info, 0, "pid", &pid)) return -1;
  if (pid <= 1) {
    ThrowSystemError(info.Env(), EINVAL, "waitid");
    return -1;
  }
  siginfo_t si{};
  int rc;
  do rc = waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG | WNOWAIT);
  while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    ThrowSystemError(info.Env(), errno, "waitid");
    return -1;
  }
  return si.si_pid == pid && si.si_code == CLD_STOPPED ? si.si_status : 0;
}

static Napi::Value ChildStopped(const Napi::CallbackInfo& info) {
  int sig = StopSignal(info);
  if (sig < 0) return info.Env().Undefined();
  return Napi::Boolean::New(info.Env(), sig > 0);
}

static Napi::Value ChildStopSignal(const Napi::CallbackInfo& info) {
  int sig = StopSignal(info);
  if (sig < 0) return info.Env().Undefined();
  return Napi::Number::New(info.Env(), sig);
}

void InitTerminal(Napi::Env env, Napi::Object exports) {
  exports.Set("tcgetpgrp", Napi::Function::New(env, TcGetPgrp, "tcgetpgrp"));
  exports.Set("tcsetpgrp", Napi::Function::New(env, TcSetPgrp, "tcsetpgrp"));
  exports.Set("childStopped", Napi::Function::New(env, ChildStopped, "childStopped"));
  exports.Set("childStopSignal", Napi::Function::New(env, ChildStopSignal, "childStopSignal"));
}

}  // namespace reapkit
