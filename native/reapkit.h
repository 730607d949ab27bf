// Shared declarations of the addon's parts, and the choice of exit-watch backend.
#pragma once

#include <napi.h>

// Exit-watch backend, chosen at compile time. Linux has pidfds. Elsewhere the kqueue backend is used
// when the build found <sys/event.h> (REAPKIT_HAVE_SYS_EVENT_H, set by binding.gyp / CMakeLists.txt
// from a header probe, not from the OS name), so it also builds on Linux against a kqueue
// compatibility library when REAPKIT_FORCE_KQUEUE is defined.
// Both macros are always defined (0 or 1), so they can also be used in plain C++ expressions.
#if defined(__linux__) && !defined(REAPKIT_FORCE_KQUEUE)
#define REAPKIT_EXIT_WATCH_PIDFD 1
#define REAPKIT_EXIT_WATCH_KQUEUE 0
#define REAPKIT_EXIT_WATCH_NAME "pidfd"
#elif defined(REAPKIT_HAVE_SYS_EVENT_H)
#define REAPKIT_EXIT_WATCH_PIDFD 0
#define REAPKIT_EXIT_WATCH_KQUEUE 1
#define REAPKIT_EXIT_WATCH_NAME "kqueue"
#else
#define REAPKIT_EXIT_WATCH_PIDFD 0
#define REAPKIT_EXIT_WATCH_KQUEUE 0
#define REAPKIT_EXIT_WATCH_NAME "none"
#endif

namespace reapkit {

void InitGroup(Napi::Env env, Napi::Object exports);
void InitPdeathsig(Napi::Env env, Napi::Object exports);
void InitProcessHandle(Napi::Env env, Napi::Object exports);
void InitExitWatch(Napi::Env env, Napi::Object exports);
void InitPipeProbe(Napi::Env env, Napi::Object exports);
void InitPeerCred(Napi::Env env, Napi::Object exports);
void InitStdinWatch(Napi::Env env, Napi::Object exports);
void InitExecReport(Napi::Env env, Napi::Object exports);
void InitTerminal(Napi::Env env, Napi::Object exports);

bool HavePrctl();
// Whether pidfd_open works here at run time (kernel >= 5.3 and not blocked by seccomp).
bool ProbePidfd();

// Linux syscalls that older libc headers may not wrap. All return -1 and set errno on failure.
int PidfdOpen(int pid);
// pipe() with both ends close-on-exec (atomic where pipe2 exists); 0 or an errno. exec_report.cc.
int CloexecPipe(int fds[2]);
int PidfdSendSignal(int pidfd, int sig);

// The pidfd (or -1) and pid behind a ProcessHandle object; false if `value` is not one.
bool UnwrapProcessHandle(Napi::Value value, int* pid, int* fd);

}  // namespace reapkit

namespace reapkit {

class ExitWatcher;
struct StdinWatch;

// Per-environment state (main thread and each worker have their own); owned by the env's
// instance data, so no JS handle ever lives in a static.
struct ModuleData {
  ExitWatcher* exit_watcher = nullptr;
  StdinWatch* stdin_watch = nullptr;  // native/stdin_watch.cc; stopped by its own env cleanup hook
  bool pidfd = false;
};

ModuleData* GetModuleData(Napi::Env env);
// Stops the watcher's thread (if any) and frees it. Safe to call twice with the same data.
void DestroyExitWatcher(ModuleData* data);

}  // namespace reapkit
