// ProcessHandle on Windows: an OpenProcess handle. While it is open the process object lives on
// (even after the process exits), so its pid cannot be given to another process: every signal()
// through it reaches the process it was opened for, or fails with ESRCH once that has exited.
//
// Signals, Windows style (as libuv's uv_kill, so Node's own subprocess.kill() agrees):
//   0                         -> ESRCH if the process has exited, else nothing;
//   SIGTERM, SIGKILL, SIGINT, SIGHUP, SIGQUIT
//                             -> TerminateProcess(handle, 1): immediate, no handler runs;
//   anything else             -> ENOSYS (Windows has no way to deliver it).
// A graceful stop on Windows is the caller's business (close stdin, CTRL_BREAK_EVENT to a console
// group); TerminateProcess is the SIGKILL of Windows and is what both SIGTERM and SIGKILL do here.
#include <cerrno>
#include <csignal>

#include "../errors.h"
#include "win.h"

#ifndef SIGKILL
#define SIGKILL 9
#endif
#ifndef SIGHUP
#define SIGHUP 1
#endif
#ifndef SIGQUIT
#define SIGQUIT 3
#endif

namespace reapkit {
namespace win {

static const DWORD kAccess = SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_TERMINATE;

class ProcessHandleWrap : public Napi::ObjectWrap<ProcessHandleWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "ProcessHandle",
                       {
                           InstanceAccessor<&ProcessHandleWrap::Pid>("pid"),
                           InstanceAccessor<&ProcessHandleWrap::Closed>("closed"),
                           InstanceMethod<&ProcessHandleWrap::Signal>("signal"),
                           InstanceMethod<&ProcessHandleWrap::Close>("close"),
                           InstanceMethod<&ProcessHandleWrap::ExitCode>("exitCode"),
                       });
  }

  explicit ProcessHandleWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ProcessHandleWrap>(info) {
    Napi::Env env = info.Env();
    int32_t pid;
    if (!ArgInt(info, 0, "pid", &pid)) return;
    if (pid <= 0) {
      ThrowErrno(env, EINVAL, "OpenProcess");
      return;
    }
    HANDLE h = OpenProcess(kAccess, FALSE, (DWORD)pid);
    if (h == nullptr) {
      ThrowWin32Error(env, GetLastError(), "OpenProcess");
      return;
    }
    handle_ = h;
    pid_ = (DWORD)pid;
  }

  ~ProcessHandleWrap() override { Release(); }

  HANDLE handle() const { return handle_; }
  DWORD pid() const { return pid_; }

 private:
  void Release() {
    if (handle_ != nullptr) {
      CloseHandle(handle_);
      handle_ = nullptr;
    }
  }

  Napi::Value Pid(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), pid_); }
  Napi::Value Closed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), handle_ == nullptr); }

  // The exit code once the process has exited, or null while it runs.
  Napi::Value ExitCode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (handle_ == nullptr) return ThrowErrno(env, EBADF, "GetExitCodeProcess");
    if (WaitForSingleObject(handle_, 0) != WAIT_OBJECT_0) return env.Null();
    DWORD code;
    if (!GetExitCodeProcess(handle_, &code)) return ThrowWin32Error(env, GetLastError(), "GetExitCodeProcess");
    return Napi::Number::New(env, (double)code);
  }

  Napi::Value Signal(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int32_t sig;
    if (!ArgInt(info, 0, "signal", &sig)) return env.Undefined();
    if (handle_ == nullptr) return ThrowErrno(env, EBADF, "TerminateProcess");
    // Exited? The wait state is the truth (an exit code of 259 = STILL_ACTIVE is ambiguous).
    if (WaitForSingleObject(handle_, 0) == WAIT_OBJECT_0) return ThrowErrno(env, ESRCH, "TerminateProcess");
    switch (sig) {
      case 0:
        return env.Undefined();
      case SIGTERM:
      case SIGKILL:
      case SIGINT:
      case SIGHUP:
      case SIGQUIT:
        if (TerminateProcess(handle_, 1)) return env.Undefined();
        {
          DWORD err = GetLastError();
          // It exited between the check and the call: that is ESRCH, as in libuv.
          if (err == ERROR_ACCESS_DENIED && WaitForSingleObject(handle_, 0) == WAIT_OBJECT_0) {
            return ThrowErrno(env, ESRCH, "TerminateProcess", err);
          }
          return ThrowWin32Error(env, err, "TerminateProcess");
        }
      default:
        return ThrowErrno(env, ENOSYS, "TerminateProcess");
    }
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Release();
    return info.Env().Undefined();
  }

  HANDLE handle_ = nullptr;
  DWORD pid_ = 0;
};

HANDLE UnwrapProcessHandle(Napi::Env env, Napi::Value value, DWORD* pid) {
  if (!value.IsObject()) return nullptr;
  Data* data = GetData(env);
  if (data->process_handle_ctor.IsEmpty()) return nullptr;
  Napi::Object obj = value.As<Napi::Object>();
  bool is_handle = obj.InstanceOf(data->process_handle_ctor.Value());
  if (env.IsExceptionPending() || !is_handle) return nullptr;
  ProcessHandleWrap* wrap = ProcessHandleWrap::Unwrap(obj);
  if (wrap == nullptr) return nullptr;
  if (pid != nullptr) *pid = wrap->pid();
  return wrap->handle();
}

void InitProcessHandle(Napi::Env env, Napi::Object exports, Data* data) {
  Napi::Function ctor = ProcessHandleWrap::Define(env);
  data->process_handle_ctor = Napi::Persistent(ctor);
  exports.Set("ProcessHandle", ctor);
}

}  // namespace win
}  // namespace reapkit
