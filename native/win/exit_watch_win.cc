// The exit watcher on Windows: each watch is a duplicate of a process handle registered with the
// thread pool's wait (RegisterWaitForSingleObject, WT_EXECUTEONLYONCE), as libuv waits for its own
// children. The pool's wait threads block in WaitForMultipleObjects over up to 63 handles each:
// no polling, no wake-ups while nothing exits. The callback only posts the watch id to JS through
// a thread-safe function (non-blocking, unlimited queue); the exit code is read on the JS thread
// from the watch's own handle, which stays open until the watch is removed.
//
// Threading: the watch table is read and written on the JS thread only. A callback may run at any
// time until UnregisterWaitEx(..., INVALID_HANDLE_VALUE) returns, which waits for a running
// callback to finish; the callback never waits on the JS thread, so that cannot deadlock. The env
// cleanup hook unregisters every wait (so no callback runs after it) before releasing the function.
#include <cerrno>
#include <unordered_map>

#include "../errors.h"
#include "../js_deliver.h"
#include "win.h"

namespace reapkit {
namespace win {

struct Watch {
  ExitWatcher* watcher;
  uint64_t id;
  HANDLE process = nullptr;  // our duplicate: the watch holds the process object by itself
  HANDLE wait = nullptr;     // the thread pool's registration
};

struct ExitNote {
  uint64_t id;
};

// No context: Deliver finds the watcher through the live environment's instance data, and the
// finalizer gets it as its data (see Deliver).
static void Deliver(Napi::Env env, Napi::Function dispatch, void* context, ExitNote* note);
using ExitTsfn = Napi::TypedThreadSafeFunction<void, ExitNote, Deliver>;

class ExitWatcher {
 public:
  napi_env env = nullptr;
  ExitTsfn tsfn;
  bool stopped = false;
  bool hook_registered = false;
  bool reffed = false;
  uint64_t next_id = 1;
  std::unordered_map<uint64_t, Watch*> watches;

  static VOID CALLBACK OnExit(PVOID arg, BOOLEAN /*timed_out*/) {
    auto* watch = static_cast<Watch*>(arg);
    auto* note = new ExitNote{watch->id};
    if (watch->watcher->tsfn.NonBlockingCall(note) != napi_ok) delete note;
  }

  static void Unregister(Watch* watch) {
    // INVALID_HANDLE_VALUE: returns once no callback for this wait runs or can run.
    if (watch->wait != nullptr) UnregisterWaitEx(watch->wait, INVALID_HANDLE_VALUE);
    if (watch->process != nullptr) CloseHandle(watch->process);
    delete watch;
  }

  void Remove(uint64_t id) {
    auto it = watches.find(id);
    if (it == watches.end()) return;
    Watch* watch = it->second;
    watches.erase(it);
    Unregister(watch);
  }

  void Stop() {
    if (stopped) return;
    stopped = true;
    for (auto& it : watches) Unregister(it.second);
    watches.clear();
    tsfn.Release();  // its finalizer frees this object
  }

  // Node then empties the function's queue with a null env: Deliver frees those notes only.
  static void Finalize(Napi::Env, ExitWatcher* watcher, void*) { delete watcher; }
};

static void CleanupHook(void* arg) {
  auto* data = static_cast<Data*>(arg);
  if (data->exit_watcher != nullptr) data->exit_watcher->hook_registered = false;
  DestroyExitWatcher(data);
}

void DestroyExitWatcher(Data* data) {
  ExitWatcher* watcher = data->exit_watcher;
  if (watcher == nullptr) return;
  data->exit_watcher = nullptr;
  if (watcher->hook_registered) {
    napi_remove_env_cleanup_hook(watcher->env, CleanupHook, data);
    watcher->hook_registered = false;
  }
  watcher->Stop();
}

// Lifetime by construction, as the POSIX watcher's DeliverPending: the watcher is looked up through
// the live environment (none with a null env, none after DestroyExitWatcher), and a delivery while
// the environment is being torn down, when no value can be made, is dropped by DeliverFloat64Batch.
static void Deliver(Napi::Env env, Napi::Function dispatch, void*, ExitNote* note) {
  uint64_t id = note->id;
  delete note;
  if (env == nullptr) return;
  ExitWatcher* watcher = GetData(env)->exit_watcher;
  if (watcher == nullptr || watcher->stopped) return;
  auto it = watcher->watches.find(id);
  if (it == watcher->watches.end()) return;  // unwatched meanwhile
  DWORD code = 0;
  bool known = GetExitCodeProcess(it->second->process, &code) && code != STILL_ACTIVE;
  watcher->Remove(id);
  // The contract of the POSIX watcher: one Float64Array of (watch id, code, signal) triples, -1 for
  // unknown. Windows delivers one exit per call (each wait has its own callback).
  const double batch[3] = {(double)id, known ? (double)code : -1, -1};
  DeliverFloat64Batch(env, dispatch, batch, 3);
}

static Napi::Value WatcherStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) return ThrowTypeError(env, "dispatch must be a function");
  Data* data = GetData(env);
  if (data->exit_watcher != nullptr) return ThrowErrno(env, EBUSY, "exit_watch_start");
  auto* watcher = new ExitWatcher();
  watcher->env = env;
  watcher->tsfn = ExitTsfn::New(env, info[0].As<Napi::Function>(), "reapkit.exitWatch", 0, 1,
                                static_cast<void*>(nullptr), ExitWatcher::Finalize, watcher);
  if (env.IsExceptionPending()) {
    delete watcher;
    return env.Undefined();
  }
  watcher->tsfn.Unref(env);
  data->exit_watcher = watcher;
  napi_add_env_cleanup_hook(env, CleanupHook, data);
  watcher->hook_registered = true;
  return env.Undefined();
}

static ExitWatcher* RequireWatcher(Napi::Env env, const char* syscall) {
  ExitWatcher* watcher = GetData(env)->exit_watcher;
  if (watcher == nullptr) ThrowErrno(env, EINVAL, syscall);
  return watcher;
}

// watch(handle | pid): registers a wait on a duplicate of the handle (or on the process opened by
// pid); returns the watch id. A process that has already exited is reported like any other (the
// callback runs at once).
static Napi::Value WatchProcess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExitWatcher* watcher = RequireWatcher(env, "RegisterWaitForSingleObject");
  if (watcher == nullptr) return env.Undefined();
  DWORD pid = 0;
  auto* watch = new Watch{watcher, watcher->next_id++};
  if (info.Length() > 0 && info[0].IsNumber()) {
    // watch(pid): opened here and held by the watch alone (a pid that is gone: ESRCH).
    double n = info[0].As<Napi::Number>().DoubleValue();
    if (!(n > 0 && n <= 4294967295.0) || n != (double)(DWORD)n) {
      delete watch;
      return ThrowTypeError(env, "pid must be a positive integer");
    }
    watch->process = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)n);
    if (watch->process == nullptr) {
      DWORD err = GetLastError();
      delete watch;
      if (err == ERROR_INVALID_PARAMETER) return ThrowErrno(env, ESRCH, "OpenProcess");
      return ThrowWin32Error(env, err, "OpenProcess");
    }
  } else {
    HANDLE source = info.Length() > 0 ? UnwrapProcessHandle(env, info[0], &pid) : nullptr;
    if (env.IsExceptionPending() || source == nullptr) {
      delete watch;
      if (env.IsExceptionPending()) return env.Undefined();
      return ThrowErrno(env, EBADF, "RegisterWaitForSingleObject");
    }
    if (!DuplicateHandle(GetCurrentProcess(), source, GetCurrentProcess(), &watch->process, SYNCHRONIZE |
                         PROCESS_QUERY_LIMITED_INFORMATION, FALSE, 0)) {
      DWORD err = GetLastError();
      delete watch;
      return ThrowWin32Error(env, err, "DuplicateHandle");
    }
  }
  // Registered in the table first: the callback may run before RegisterWait returns, and its note
  // is delivered on this thread later, when the table has the watch.
  watcher->watches.emplace(watch->id, watch);
  if (!RegisterWaitForSingleObject(&watch->wait, watch->process, ExitWatcher::OnExit, watch, INFINITE,
                                   WT_EXECUTEONLYONCE | WT_EXECUTEINWAITTHREAD)) {
    DWORD err = GetLastError();
    watch->wait = nullptr;
    watcher->Remove(watch->id);
    return ThrowWin32Error(env, err, "RegisterWaitForSingleObject");
  }
  return Napi::Number::New(env, (double)watch->id);
}

static Napi::Value Unwatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) return ThrowTypeError(env, "id must be a number");
  ExitWatcher* watcher = GetData(env)->exit_watcher;
  if (watcher != nullptr) watcher->Remove((uint64_t)info[0].As<Napi::Number>().Int64Value());
  return env.Undefined();
}

static Napi::Value WatcherRef(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExitWatcher* watcher = GetData(env)->exit_watcher;
  if (watcher == nullptr) return env.Undefined();
  bool ref = info.Length() > 0 && info[0].ToBoolean().Value();
  if (ref != watcher->reffed) {
    if (ref) watcher->tsfn.Ref(env);
    else watcher->tsfn.Unref(env);
    watcher->reffed = ref;
  }
  return env.Undefined();
}

static Napi::Value WatcherStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExitWatcher* watcher = GetData(env)->exit_watcher;
  Napi::Object stats = Napi::Object::New(env);
  stats.Set("running", Napi::Boolean::New(env, watcher != nullptr));
  stats.Set("watches", Napi::Number::New(env, watcher ? (double)watcher->watches.size() : 0));
  // One wait (and one duplicated handle) per watch here: registrations equal watches.
  stats.Set("registrations", Napi::Number::New(env, watcher ? (double)watcher->watches.size() : 0));
  stats.Set("reffed", Napi::Boolean::New(env, watcher != nullptr && watcher->reffed));
  return stats;
}

void InitExitWatch(Napi::Env env, Napi::Object exports, Data*) {
  exports.Set("watcherStart", Napi::Function::New(env, WatcherStart, "watcherStart"));
  exports.Set("watch", Napi::Function::New(env, WatchProcess, "watch"));
  exports.Set("unwatch", Napi::Function::New(env, Unwatch, "unwatch"));
  exports.Set("watcherRef", Napi::Function::New(env, WatcherRef, "watcherRef"));
  exports.Set("watcherStats", Napi::Function::New(env, WatcherStats, "watcherStats"));
}

}  // namespace win
}  // namespace reapkit
