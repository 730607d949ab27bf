// Job objects: Windows' process "group" that cannot be escaped. A job made here has
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and neither BREAKAWAY_OK nor SILENT_BREAKAWAY_OK, so:
//   - every process created by a member joins the job (no breakaway, even when asked);
//   - when the last handle to the job closes, which happens when this process dies by any means
//     (TerminateProcess, a crash, Task Manager, SIGKILL of Wine's process), the kernel kills every
//     member. The handle is not inheritable, so only this process holds it.
// A process already in another job (Node puts its children in libuv's global job) is nested:
// Windows 8+ (and Wine 8) let a process be in a chain of jobs.
#include <cerrno>
#include <cwchar>
#include <vector>

#include "../errors.h"
#include "win.h"

namespace reapkit {
namespace win {

class JobWrap : public Napi::ObjectWrap<JobWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Job",
                       {
                           InstanceAccessor<&JobWrap::Closed>("closed"),
                           InstanceMethod<&JobWrap::Assign>("assign"),
                           InstanceMethod<&JobWrap::Terminate>("terminate"),
                           InstanceMethod<&JobWrap::Pids>("pids"),
                           InstanceMethod<&JobWrap::Close>("close"),
                       });
  }

  explicit JobWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<JobWrap>(info) {
    Napi::Env env = info.Env();
    HANDLE job = CreateJobObjectW(nullptr, nullptr);
    if (job == nullptr) {
      ThrowWin32Error(env, GetLastError(), "CreateJobObject");
      return;
    }
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
    ZeroMemory(&limits, sizeof limits);
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits)) {
      DWORD err = GetLastError();
      CloseHandle(job);
      ThrowWin32Error(env, err, "SetInformationJobObject");
      return;
    }
    job_ = job;
  }

  ~JobWrap() override { Release(); }

 private:
  void Release() {
    if (job_ != nullptr) {
      CloseHandle(job_);  // the last handle: the kernel kills every member now
      job_ = nullptr;
    }
  }

  Napi::Value Closed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), job_ == nullptr); }

  // assign(pid): opens the process for assignment and adds it. The caller must own the pid (its
  // own child, still unreaped, so the pid is pinned by libuv's handle).
  Napi::Value Assign(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int32_t pid;
    if (!ArgInt(info, 0, "pid", &pid)) return env.Undefined();
    if (job_ == nullptr) return ThrowErrno(env, EBADF, "AssignProcessToJobObject");
    if (pid <= 0) return ThrowErrno(env, EINVAL, "AssignProcessToJobObject");
    HANDLE process = OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE | SYNCHRONIZE, FALSE, (DWORD)pid);
    if (process == nullptr) return ThrowWin32Error(env, GetLastError(), "OpenProcess");
    if (WaitForSingleObject(process, 0) == WAIT_OBJECT_0) {
      CloseHandle(process);
      return ThrowErrno(env, ESRCH, "AssignProcessToJobObject");
    }
    BOOL ok = AssignProcessToJobObject(job_, process);
    DWORD err = ok ? 0 : GetLastError();
    CloseHandle(process);
    if (!ok) return ThrowWin32Error(env, err, "AssignProcessToJobObject");
    return env.Undefined();
  }

  // terminate(exitCode = 1): TerminateJobObject, every member at once.
  Napi::Value Terminate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int32_t code = 1;
    if (info.Length() > 0 && !info[0].IsUndefined() && !ArgInt(info, 0, "exitCode", &code)) return env.Undefined();
    if (job_ == nullptr) return ThrowErrno(env, EBADF, "TerminateJobObject");
    if (!TerminateJobObject(job_, (UINT)code)) return ThrowWin32Error(env, GetLastError(), "TerminateJobObject");
    return env.Undefined();
  }

  // pids(): the members that still run (JobObjectBasicProcessIdList), growing the buffer as needed.
  Napi::Value Pids(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (job_ == nullptr) return ThrowErrno(env, EBADF, "QueryInformationJobObject");
    size_t capacity = 64;
    for (int attempt = 0; attempt < 8; attempt++) {
      size_t bytes = sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) + capacity * sizeof(ULONG_PTR);
      std::vector<unsigned char> buffer(bytes);
      auto* list = reinterpret_cast<JOBOBJECT_BASIC_PROCESS_ID_LIST*>(buffer.data());
      BOOL ok = QueryInformationJobObject(job_, JobObjectBasicProcessIdList, list, (DWORD)bytes, nullptr);
      DWORD err = ok ? 0 : GetLastError();
      if (!ok && err != ERROR_MORE_DATA) return ThrowWin32Error(env, err, "QueryInformationJobObject");
      if (ok && list->NumberOfProcessIdsInList >= list->NumberOfAssignedProcesses) {
        Napi::Array pids = Napi::Array::New(env, list->NumberOfProcessIdsInList);
        for (DWORD i = 0; i < list->NumberOfProcessIdsInList; i++) {
          pids.Set(i, Napi::Number::New(env, (double)list->ProcessIdList[i]));
        }
        return pids;
      }
      capacity = (size_t)list->NumberOfAssignedProcesses + 16 > capacity * 2
                     ? (size_t)list->NumberOfAssignedProcesses + 16
                     : capacity * 2;
    }
    return ThrowErrno(env, EAGAIN, "QueryInformationJobObject");
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Release();
    return info.Env().Undefined();
  }

  HANDLE job_ = nullptr;
};

// jobStop(pid): asks reapkit-job.exe (native/win/job_launcher.c) running as `pid` to end its job
// and exit once the job is empty, by setting its stop event. The caller holds a handle to `pid`
// (spawn() pins every child), so the pid, and with it the event's name, cannot have been reused.
// true: asked. false: no such event (the launcher has not created it yet, or is gone).
static Napi::Value JobStop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t pid;
  if (!ArgInt(info, 0, "pid", &pid)) return env.Undefined();
  if (pid <= 0) return ThrowErrno(env, EINVAL, "OpenEvent");
  wchar_t name[64];
  swprintf(name, sizeof name / sizeof name[0], L"Local\\reapkit-job-stop-%lu", (unsigned long)pid);
  HANDLE event = OpenEventW(EVENT_MODIFY_STATE, FALSE, name);
  if (event == nullptr) {
    DWORD err = GetLastError();
    if (err == ERROR_FILE_NOT_FOUND) return Napi::Boolean::New(env, false);
    return ThrowWin32Error(env, err, "OpenEvent");
  }
  BOOL ok = SetEvent(event);
  DWORD err = ok ? 0 : GetLastError();
  CloseHandle(event);
  if (!ok) return ThrowWin32Error(env, err, "SetEvent");
  return Napi::Boolean::New(env, true);
}

void InitJob(Napi::Env env, Napi::Object exports) {
  exports.Set("Job", JobWrap::Define(env));
  exports.Set("jobStop", Napi::Function::New(env, JobStop, "jobStop"));
}

}  // namespace win
}  // namespace reapkit
