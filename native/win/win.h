// Windows (win32) parts of the addon. Compiled instead of the POSIX files (exit_watch*.cc,
// process_handle.cc, group.cc, pdeathsig.cc) when building for Windows; errors.cc and addon.cc are
// shared. A process HANDLE is Windows' pidfd: while open, the process object (and its pid) cannot
// be reused, so everything here works on handles, never on bare pids after the open.
#pragma once

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <napi.h>

namespace reapkit {
namespace win {

class ExitWatcher;

// Per-environment state of the Windows addon (main thread and each worker have their own).
struct Data {
  ExitWatcher* exit_watcher = nullptr;
  Napi::FunctionReference process_handle_ctor;
};

Data* GetData(Napi::Env env);

// The errno name that best describes a Win32 error, as libuv's uv_translate_sys_error does for
// the cases that matter here (ERROR_INVALID_PARAMETER from OpenProcess means "no such pid").
int ErrnoFromWin32(DWORD err);
// A Node-style system error (code, errno, syscall) with the Win32 error in `winerror`.
Napi::Value ThrowWin32Error(Napi::Env env, DWORD err, const char* syscall);
Napi::Value ThrowErrno(Napi::Env env, int err, const char* syscall, DWORD winerror = 0);

void InitProcessHandle(Napi::Env env, Napi::Object exports, Data* data);
void InitExitWatch(Napi::Env env, Napi::Object exports, Data* data);
void InitJob(Napi::Env env, Napi::Object exports);
void InitParent(Napi::Env env, Napi::Object exports);

// The process HANDLE behind a ProcessHandle object (nullptr if `value` is not one, or closed).
HANDLE UnwrapProcessHandle(Napi::Env env, Napi::Value value, DWORD* pid);
// Stops the watcher (if any) and frees it. Safe to call twice.
void DestroyExitWatcher(Data* data);

}  // namespace win

Napi::Object InitWin32(Napi::Env env, Napi::Object exports);

}  // namespace reapkit
