// The exit watcher of one environment: one background thread for all watched processes, blocked in
// the backend's wait (epoll or kqueue) and costing no wake-ups while nothing exits. Exits reach JS
// through a thread-safe function that is unref'd unless JS asks otherwise, so an idle watcher never
// keeps the process alive by itself.
//
// Threading: the thread touches only the backend's wait/wake descriptors, the thread-safe function
// and the `stopping` flag. The watch table is read and written on the JS thread only, so it needs
// no lock. The env cleanup hook stops the thread (wake, join, release) before Node runs finalizers.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <unordered_map>
#include <vector>

#include "errors.h"
#include "exit_watch.h"
#include "reapkit.h"

namespace reapkit {

#if REAPKIT_EXIT_WATCH_PIDFD || REAPKIT_EXIT_WATCH_KQUEUE

struct ExitBatch {
  std::vector<ExitEvent> events;
};

static void DeliverBatch(Napi::Env env, Napi::Function dispatch, ExitWatcher* watcher, ExitBatch* batch);
using ExitTsfn = Napi::TypedThreadSafeFunction<ExitWatcher, ExitBatch, DeliverBatch>;

class ExitWatcher {
 public:
  napi_env env = nullptr;
  ExitBackend* backend = nullptr;
  ExitTsfn tsfn;
  pthread_t thread{};
  bool thread_started = false;
  bool hook_registered = false;
  bool reffed = false;
  std::atomic<bool> stopping{false};
  std::atomic<int> failed{0};  // errno of a backend failure that ended the thread, or 0
  uint64_t next_id = 1;
  std::unordered_map<uint64_t, WatchEntry> watches;

  void RunThread() {
    ExitEvent events[64];
    while (!stopping.load(std::memory_order_acquire)) {
      int n = BackendWait(backend, events, 64);
      if (stopping.load(std::memory_order_acquire)) break;
      if (n < 0) {  // the backend descriptor failed: nothing more can be watched; Watch() says so
        failed.store(-n, std::memory_order_release);
        break;
      }
      if (n == 0) continue;
      auto* batch = new ExitBatch();
      batch->events.assign(events, events + n);
      // Non-blocking with an unlimited queue: the thread never waits on the JS thread, so the
      // cleanup hook can always join it.
      if (tsfn.NonBlockingCall(batch) != napi_ok) delete batch;
    }
  }

  static void* ThreadMain(void* arg) {
#if defined(__APPLE__)
    pthread_setname_np("reapkit-exit");
#elif defined(__linux__)
    pthread_setname_np(pthread_self(), "reapkit-exit");
#endif
    static_cast<ExitWatcher*>(arg)->RunThread();
    return nullptr;
  }

  // Called from the env cleanup hook (or the instance-data finalizer if the hook never ran). Stops
  // and joins the thread and releases the thread-safe function; the function's finalizer, which
  // Node calls once no call can be delivered any more, frees this object.
  void Stop() {
    if (thread_started) {
      stopping.store(true, std::memory_order_release);
      BackendWake(backend);
      pthread_join(thread, nullptr);
      thread_started = false;
    }
    for (auto& it : watches) BackendRemove(backend, it.first, &it.second, false);
    watches.clear();
    BackendClose(backend);
    backend = nullptr;  // DeliverBatch drops whatever was still queued
    tsfn.Release();
  }

  static void Finalize(Napi::Env, void*, ExitWatcher* watcher) { delete watcher; }

  bool PidStillWatched(int pid, uint64_t except) const {
    for (const auto& it : watches) {
      if (it.first != except && it.second.pid == pid) return true;
    }
    return false;
  }

  void Remove(uint64_t id) {
    auto it = watches.find(id);
    if (it == watches.end()) return;
    BackendRemove(backend, id, &it->second, PidStillWatched(it->second.pid, id));
    watches.erase(it);
  }
};

static void CleanupHook(void* arg) {
  auto* data = static_cast<ModuleData*>(arg);
  if (data->exit_watcher != nullptr) data->exit_watcher->hook_registered = false;
  DestroyExitWatcher(data);
}

void DestroyExitWatcher(ModuleData* data) {
  ExitWatcher* watcher = data->exit_watcher;
  if (watcher == nullptr) return;
  data->exit_watcher = nullptr;
  if (watcher->hook_registered) {
    // Not from inside the hook: removing there is a double free (see FACTS.md).
    napi_remove_env_cleanup_hook(watcher->env, CleanupHook, data);
    watcher->hook_registered = false;
  }
  watcher->Stop();
}

static void DeliverBatch(Napi::Env env, Napi::Function dispatch, ExitWatcher* watcher, ExitBatch* batch) {
  if (env == nullptr || watcher == nullptr || watcher->backend == nullptr) {
    delete batch;  // the watcher is stopped or the env is going away: nobody listens any more
    return;
  }
  // Expand pid keys (kqueue) into the watches of that pid; id keys (pidfd) stand for themselves.
  std::vector<ExitEvent> events;
  for (const ExitEvent& event : batch->events) {
    if (BackendKeysAreIds()) {
      events.push_back(event);
      continue;
    }
    for (const auto& it : watcher->watches) {
      if ((uint64_t)it.second.pid != event.key) continue;
      ExitEvent copy = event;
      copy.key = it.first;
      events.push_back(copy);
    }
  }
  delete batch;
  for (const ExitEvent& event : events) {
    if (watcher->watches.find(event.key) == watcher->watches.end()) continue;  // unwatched meanwhile
    watcher->Remove(event.key);
    bool exited = event.status_known && event.signal == 0;
    bool signaled = event.status_known && event.signal != 0;
    Napi::Value code = exited ? Napi::Number::New(env, event.code).As<Napi::Value>() : env.Null();
    Napi::Value sig = signaled ? Napi::Number::New(env, event.signal).As<Napi::Value>() : env.Null();
    dispatch.Call({Napi::Number::New(env, (double)event.key), code, sig});
    if (env.IsExceptionPending()) return;  // the dispatcher never throws; if it did, stop here
  }
}

static Napi::Value WatcherStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) return ThrowTypeError(env, "dispatch must be a function");
  ModuleData* data = GetModuleData(env);
  if (data->exit_watcher != nullptr) return ThrowSystemError(env, EBUSY, "exit_watch_start");

  auto* watcher = new ExitWatcher();
  watcher->env = env;
  int err = BackendOpen(&watcher->backend);
  if (err != 0) {
    delete watcher;
    return ThrowSystemError(env, err, REAPKIT_EXIT_WATCH_PIDFD ? "epoll_create1" : "kqueue");
  }
  watcher->tsfn = ExitTsfn::New(env, info[0].As<Napi::Function>(), "reapkit.exitWatch", 0, 1, watcher,
                                ExitWatcher::Finalize);
  if (env.IsExceptionPending()) {  // creation failed (no C++ exceptions: a pending JS one)
    BackendClose(watcher->backend);
    delete watcher;
    return env.Undefined();
  }
  watcher->tsfn.Unref(env);

  // The thread must not take signals meant for Node (SIGCHLD, SIGTERM handlers run on the loop);
  // it inherits the mask it is created with.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&watcher->thread, nullptr, ExitWatcher::ThreadMain, watcher);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    watcher->Stop();  // frees the watcher through the function's finalizer
    return ThrowSystemError(env, rc, "pthread_create");
  }
  watcher->thread_started = true;
  data->exit_watcher = watcher;
  // Registered after the thread-safe function, so it runs before the function's own teardown.
  napi_add_env_cleanup_hook(env, CleanupHook, data);
  watcher->hook_registered = true;
  return env.Undefined();
}

static ExitWatcher* RequireWatcher(Napi::Env env, const char* syscall) {
  ModuleData* data = GetModuleData(env);
  if (data->exit_watcher == nullptr) ThrowSystemError(env, EBADF, syscall);
  return data->exit_watcher;
}

// watch(handle) -> id. Throws ESRCH when the process is already gone (kqueue reports it so; with
// pidfds an exited process is reported through the normal event path instead).
static Napi::Value Watch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExitWatcher* watcher = RequireWatcher(env, "exit_watch_add");
  if (watcher == nullptr) return env.Undefined();
  int pid = 0, fd = -1;
  if (info.Length() < 1 || !UnwrapProcessHandle(info[0], &pid, &fd)) {
    return ThrowTypeError(env, "watch() takes an open ProcessHandle");
  }
  int failed = watcher->failed.load(std::memory_order_acquire);
  if (failed != 0) return ThrowSystemError(env, failed, REAPKIT_EXIT_WATCH_PIDFD ? "epoll_wait" : "kevent");
  // Ids are 32-bit (the pidfd backend packs them beside the fd); 0 is the wake-up key. After a
  // wrap-around, skip ids that a long-lived watch still holds.
  uint64_t id;
  do {
    id = watcher->next_id;
    watcher->next_id = (watcher->next_id % 0xFFFFFFFFULL) + 1;
  } while (watcher->watches.count(id) != 0);
  WatchEntry entry{pid, -1};
  int err = BackendAdd(watcher->backend, id, fd, &entry);
  if (err != 0) return ThrowSystemError(env, err, REAPKIT_EXIT_WATCH_PIDFD ? "epoll_ctl" : "kevent");
  watcher->watches.emplace(id, entry);
  return Napi::Number::New(env, (double)id);
}

static Napi::Value Unwatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModuleData* data = GetModuleData(env);
  if (data->exit_watcher == nullptr || info.Length() < 1 || !info[0].IsNumber()) return env.Undefined();
  data->exit_watcher->Remove((uint64_t)info[0].As<Napi::Number>().Int64Value());
  return env.Undefined();
}

// watcherRef(true) keeps the event loop alive while watches exist; false (the default) does not.
static Napi::Value WatcherRef(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModuleData* data = GetModuleData(env);
  ExitWatcher* watcher = data->exit_watcher;
  if (watcher == nullptr || info.Length() < 1 || !info[0].IsBoolean()) return env.Undefined();
  bool want = info[0].As<Napi::Boolean>().Value();
  if (want != watcher->reffed) {
    if (want) {
      watcher->tsfn.Ref(env);
    } else {
      watcher->tsfn.Unref(env);
    }
    watcher->reffed = want;
  }
  return env.Undefined();
}

static Napi::Value WatcherStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModuleData* data = GetModuleData(env);
  Napi::Object stats = Napi::Object::New(env);
  ExitWatcher* watcher = data->exit_watcher;
  stats.Set("running", Napi::Boolean::New(env, watcher != nullptr && watcher->thread_started));
  stats.Set("watches", Napi::Number::New(env, watcher ? (double)watcher->watches.size() : 0));
  stats.Set("reffed", Napi::Boolean::New(env, watcher != nullptr && watcher->reffed));
  return stats;
}

#else  // no exit-watch backend on this platform

void DestroyExitWatcher(ModuleData*) {}

static Napi::Value NotSupported(const Napi::CallbackInfo& info) {
#ifndef ENOTSUP
#define ENOTSUP EOPNOTSUPP
#endif
  return ThrowSystemError(info.Env(), ENOTSUP, "exit_watch");
}
#define WatcherStart NotSupported
#define Watch NotSupported
#define Unwatch NotSupported
#define WatcherRef NotSupported
#define WatcherStats NotSupported

#endif

void InitExitWatch(Napi::Env env, Napi::Object exports) {
  exports.Set("watcherStart", Napi::Function::New(env, WatcherStart, "watcherStart"));
  exports.Set("watch", Napi::Function::New(env, Watch, "watch"));
  exports.Set("unwatch", Napi::Function::New(env, Unwatch, "unwatch"));
  exports.Set("watcherRef", Napi::Function::New(env, WatcherRef, "watcherRef"));
  exports.Set("watcherStats", Napi::Function::New(env, WatcherStats, "watcherStats"));
}

}  // namespace reapkit
