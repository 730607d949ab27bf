// Module init on Windows: its own per-environment state and exports (see win.h).
#include <cerrno>
#include <string>

#include "../errors.h"
#include "win.h"

namespace reapkit {
namespace win {

static void FreeData(Napi::Env, Data* data) {
  DestroyExitWatcher(data);  // normally already done by the env cleanup hook
  delete data;
}

Data* GetData(Napi::Env env) { return env.GetInstanceData<Data>(); }

int ErrnoFromWin32(DWORD err) {
  switch (err) {
    case ERROR_INVALID_PARAMETER:  // OpenProcess of a pid that names no process
      return ESRCH;
    case ERROR_ACCESS_DENIED:
      return EPERM;
    case ERROR_INVALID_HANDLE:
      return EBADF;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
      return ENOMEM;
    case ERROR_TOO_MANY_OPEN_FILES:
      return EMFILE;
    case ERROR_NOT_SUPPORTED:
    case ERROR_CALL_NOT_IMPLEMENTED:
      return ENOSYS;
    default:
      return EIO;
  }
}

Napi::Value ThrowErrno(Napi::Env env, int err, const char* syscall, DWORD winerror) {
  Napi::Error error = SystemError(env, err, syscall);
  if (winerror != 0) error.Value().Set("winerror", Napi::Number::New(env, (double)winerror));
  error.ThrowAsJavaScriptException();
  return env.Undefined();
}

Napi::Value ThrowWin32Error(Napi::Env env, DWORD err, const char* syscall) {
  return ThrowErrno(env, ErrnoFromWin32(err), syscall, err);
}

}  // namespace win

Napi::Object InitWin32(Napi::Env env, Napi::Object exports) {
  auto* data = new win::Data();
  env.SetInstanceData<win::Data, win::FreeData>(data);

  win::InitProcessHandle(env, exports, data);
  win::InitExitWatch(env, exports, data);
  win::InitJob(env, exports);
  win::InitParent(env, exports);

  Napi::Object caps = Napi::Object::New(env);
  caps.Set("pidfd", Napi::Boolean::New(env, false));
  caps.Set("prctl", Napi::Boolean::New(env, false));
  caps.Set("exitWatch", Napi::String::New(env, "handle"));
  caps.Set("job", Napi::Boolean::New(env, true));
  exports.Set("capabilities", caps);
  return exports;
}

}  // namespace reapkit

// The Windows build compiles this file instead of native/addon.cc (see scripts/win32/build.sh and
// binding.gyp's OS=="win" sources): the module's entry point for Windows.
static Napi::Object InitReapkitWin32(Napi::Env env, Napi::Object exports) { return reapkit::InitWin32(env, exports); }

NODE_API_MODULE(reapkit, InitReapkitWin32)
