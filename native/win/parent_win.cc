// Parent watching on Windows: there is no death signal; a process learns of its parent's death by
// waiting on a handle to it. The parent's pid (from the process's basic information) may already
// name another process if the parent died and the pid was reused, so openParent() checks that the
// process it opened was created before this one: a reused pid belongs to a younger process.
#include <cerrno>

#include "../errors.h"
#include "win.h"

namespace reapkit {
namespace win {

// ProcessBasicInformation through ntdll (documented in winternl.h; the parent is
// InheritedFromUniqueProcessId), as libuv's uv_os_getppid does.
typedef LONG(NTAPI* NtQueryInformationProcessFn)(HANDLE, int, PVOID, ULONG, PULONG);
struct BasicInformation {
  PVOID Reserved1;
  PVOID PebBaseAddress;
  PVOID Reserved2[2];
  ULONG_PTR UniqueProcessId;
  ULONG_PTR InheritedFromUniqueProcessId;
};

static DWORD ParentPid() {
  static NtQueryInformationProcessFn query = reinterpret_cast<NtQueryInformationProcessFn>(
      reinterpret_cast<void*>(GetProcAddress(GetModuleHandleW(L"ntdll.dll"), "NtQueryInformationProcess")));
  if (query == nullptr) return 0;
  BasicInformation info;
  ZeroMemory(&info, sizeof info);
  if (query(GetCurrentProcess(), 0 /* ProcessBasicInformation */, &info, sizeof info, nullptr) != 0) return 0;
  return (DWORD)info.InheritedFromUniqueProcessId;
}

static Napi::Value GetParentPid(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), (double)ParentPid());
}

static bool CreationTime(HANDLE process, ULONGLONG* out) {
  FILETIME created, exited, kernel, user;
  if (!GetProcessTimes(process, &created, &exited, &kernel, &user)) return false;
  *out = ((ULONGLONG)created.dwHighDateTime << 32) | created.dwLowDateTime;
  return true;
}

// openParent(ProcessHandleCtor): a ProcessHandle on our parent, or ESRCH when it is gone (no such
// pid, exited, or the pid now names a process younger than us).
static Napi::Value OpenParent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  DWORD ppid = ParentPid();
  if (ppid == 0) return ThrowErrno(env, ESRCH, "NtQueryInformationProcess");
  Data* data = GetData(env);
  Napi::Value handle = data->process_handle_ctor.New({Napi::Number::New(env, (double)ppid)});
  if (env.IsExceptionPending()) return env.Undefined();
  HANDLE h = UnwrapProcessHandle(env, handle, nullptr);
  ULONGLONG parent_created = 0, self_created = 0;
  if (h == nullptr || !CreationTime(h, &parent_created) || !CreationTime(GetCurrentProcess(), &self_created)) {
    return ThrowWin32Error(env, GetLastError(), "GetProcessTimes");
  }
  if (parent_created > self_created || WaitForSingleObject(h, 0) == WAIT_OBJECT_0) {
    handle.As<Napi::Object>().Get("close").As<Napi::Function>().Call(handle, {});
    return ThrowErrno(env, ESRCH, "OpenProcess");
  }
  return handle;
}

void InitParent(Napi::Env env, Napi::Object exports) {
  exports.Set("getppid", Napi::Function::New(env, GetParentPid, "getppid"));
  exports.Set("openParent", Napi::Function::New(env, OpenParent, "openParent"));
}

}  // namespace win
}  // namespace reapkit
