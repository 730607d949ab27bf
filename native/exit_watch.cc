// The exit watcher of one environment: one background thread for all watched processes, blocked in
// the backend's wait (epoll or kqueue) and costing no wake-ups while nothing exits. Exits reach JS
// through a thread-safe function that is unref'd unless JS asks otherwise, so an idle watcher never
// keeps the process alive by itself.
//
// Cost per event is O(1): a registration (one per watched process, shared by all its watches) is
// found by id or pid in a hash map, and a watch leaves its registration by a swap-remove. Exits
// that arrive while JS is busy pile up in one pending list and reach JS as ONE call, however many.
//
// Threading: the thread touches only the backend's wait/wake descriptors, the pending list (under
// `mutex`), the thread-safe function and the `stopping` flag. The watch and registration tables are
// read and written on the JS thread only, so they need no lock. The env cleanup hook stops the
// thread (wake, join, release) before Node runs finalizers.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "errors.h"
#include "exit_watch.h"
#include "js_deliver.h"
#include "threads.h"
#include "reapkit.h"

namespace reapkit {

#if REAPKIT_EXIT_WATCH_PIDFD || REAPKIT_EXIT_WATCH_KQUEUE

struct Registration {
  int pid;
  int fd;                          // the backend's descriptor, or -1
  std::vector<uint64_t> watches;   // ids of the watches it settles
};

struct WatchEntry {
  uint32_t reg;   // its registration
  uint32_t slot;  // its index in that registration's `watches`
};

// The thread-safe function carries no context: its callback reaches the watcher only through the
// environment's instance data (see DeliverPending), and its finalizer gets the watcher as its data.
static void DeliverPending(Napi::Env env, Napi::Function dispatch, void* context, void* data);
using ExitTsfn = Napi::TypedThreadSafeFunction<void, void, DeliverPending>;

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

  // Thread -> JS hand-off: events not yet delivered, and whether a call to deliver them is queued.
  std::mutex mutex;
  std::vector<ExitEvent> pending;
  bool call_queued = false;

  // JS thread only.
  uint64_t next_watch = 1;
  uint32_t next_reg = 1;
  std::unordered_map<uint64_t, WatchEntry> watches;
  std::unordered_map<uint32_t, Registration> regs;
  std::unordered_map<int, uint32_t> reg_by_pid;  // the newest registration of each pid

  void RunThread() {
    std::vector<ExitEvent> events(512);
    while (!stopping.load(std::memory_order_acquire)) {
      int n = BackendWait(backend, events.data(), (int)events.size());
      if (stopping.load(std::memory_order_acquire)) break;
      if (n < 0) {  // the backend descriptor failed: nothing more can be watched; Watch() says so
        failed.store(-n, std::memory_order_release);
        break;
      }
      if (n == 0) continue;
      bool call;
      {
        std::lock_guard<std::mutex> lock(mutex);
        pending.insert(pending.end(), events.begin(), events.begin() + n);
        call = !call_queued;
        call_queued = true;
      }
      // One queued call at a time: exits that come while it waits join the same delivery. The call
      // is non-blocking with an unlimited queue, so the thread never waits on the JS thread and
      // the cleanup hook can always join it.
      if (call && tsfn.NonBlockingCall(nullptr) != napi_ok) {
        std::lock_guard<std::mutex> lock(mutex);
        call_queued = false;
      }
    }
  }

  static void* ThreadMain(void* arg) {
    NameThisThread("reapkit-exit");
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
    for (auto& it : regs) BackendRemove(backend, it.first, it.second.pid, it.second.fd);
    regs.clear();
    reg_by_pid.clear();
    watches.clear();
    BackendClose(backend);
    backend = nullptr;
    tsfn.Release();
  }

  // Node calls this once no call can be delivered any more; it then empties the function's queue
  // with a null env, which DeliverPending ignores without looking for a watcher.
  static void Finalize(Napi::Env, ExitWatcher* watcher, void*) { delete watcher; }

  void DropRegistration(uint32_t reg_id) {
    auto it = regs.find(reg_id);
    if (it == regs.end()) return;
    auto by_pid = reg_by_pid.find(it->second.pid);
    if (by_pid != reg_by_pid.end() && by_pid->second == reg_id) reg_by_pid.erase(by_pid);
    BackendRemove(backend, reg_id, it->second.pid, it->second.fd);
    regs.erase(it);
  }

  // Removes one watch; the registration goes with its last watch. O(1).
  void Remove(uint64_t id) {
    auto it = watches.find(id);
    if (it == watches.end()) return;
    WatchEntry entry = it->second;
    watches.erase(it);
    auto reg = regs.find(entry.reg);
    if (reg == regs.end()) return;
    std::vector<uint64_t>& list = reg->second.watches;
    uint64_t moved = list.back();
    list[entry.slot] = moved;
    list.pop_back();
    if (moved != id) watches[moved].slot = entry.slot;
    if (list.empty()) DropRegistration(entry.reg);
  }

  // Settles every watch of the registration an exit event names, appending their triples to
  // `out`, and drops the registration. An event for a registration removed meanwhile is ignored.
  void Settle(const ExitEvent& event, std::vector<double>* out) {
    uint32_t reg_id;
    if (BackendKeysAreIds()) {
      reg_id = (uint32_t)event.key;
    } else {
      auto by_pid = reg_by_pid.find((int)event.key);
      if (by_pid == reg_by_pid.end()) return;
      reg_id = by_pid->second;
    }
    auto reg = regs.find(reg_id);
    if (reg == regs.end()) return;  // unwatched meanwhile
    bool exited = event.status_known && event.signal == 0;
    bool signaled = event.status_known && event.signal != 0;
    for (uint64_t id : reg->second.watches) {
      watches.erase(id);
      out->push_back((double)id);
      out->push_back(exited ? event.code : -1);
      out->push_back(signaled ? event.signal : -1);
    }
    reg->second.watches.clear();
    DropRegistration(reg_id);
  }

  // Adds a watch of `pid` (pinned by `handle_fd`, or -1 for a bare pid). Returns 0 or an errno.
  int Add(int pid, int handle_fd, uint64_t* out_id) {
    uint32_t reg_id = 0;
    auto by_pid = reg_by_pid.find(pid);
    if (by_pid != reg_by_pid.end()) {
      const Registration& reg = regs[by_pid->second];
      if (BackendSameLiveProcess(pid, reg.fd, handle_fd)) reg_id = by_pid->second;
    }
    if (reg_id == 0) {
      // Ids are 32-bit (the pidfd backend packs them beside the fd); 0 is the wake-up key. After a
      // wrap-around, skip ids that a long-lived registration still holds.
      do {
        reg_id = next_reg;
        next_reg = next_reg == 0xFFFFFFFFU ? 1 : next_reg + 1;
      } while (regs.count(reg_id) != 0);
      int fd = -1;
      int err = BackendAdd(backend, reg_id, pid, handle_fd, &fd);
      if (err != 0) return err;
      regs.emplace(reg_id, Registration{pid, fd, {}});
      reg_by_pid[pid] = reg_id;
    }
    // Watch ids are JS numbers: exact up to 2^53, far beyond any run's count.
    uint64_t id = next_watch++;
    Registration& reg = regs[reg_id];
    watches.emplace(id, WatchEntry{reg_id, (uint32_t)reg.watches.size()});
    reg.watches.push_back(id);
    *out_id = id;
    return 0;
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

// JS thread: takes every pending exit, settles their watches' registrations and calls the
// dispatcher ONCE with a Float64Array of (watch id, code, signal) triples, -1 for "unknown".
//
// Lifetime, by construction rather than by the order of a test: the watcher is found through the
// live environment's instance data, never through a pointer the call carries. A call with no env
// (the queue emptied at the function's finalization, the watcher already freed) has nothing to
// dereference; one after DestroyExitWatcher finds no watcher; and one while the environment is
// being torn down (CleanupHandles at exit, a terminated worker's loop), when no value can be made,
// is dropped by DeliverFloat64Batch.
static void DeliverPending(Napi::Env env, Napi::Function dispatch, void*, void*) {
  if (env == nullptr) return;
  ModuleData* data = GetModuleData(env);
  ExitWatcher* watcher = data == nullptr ? nullptr : data->exit_watcher;
  if (watcher == nullptr || watcher->backend == nullptr) return;
  std::vector<ExitEvent> events;
  {
    std::lock_guard<std::mutex> lock(watcher->mutex);
    events.swap(watcher->pending);
    watcher->call_queued = false;
  }
  std::vector<double> out;
  out.reserve(events.size() * 3);
  for (const ExitEvent& event : events) watcher->Settle(event, &out);
  DeliverFloat64Batch(env, dispatch, out.data(), out.size());
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
  watcher->tsfn = ExitTsfn::New(env, info[0].As<Napi::Function>(), "reapkit.exitWatch", 0, 1,
                                static_cast<void*>(nullptr), ExitWatcher::Finalize, watcher);
  if (env.IsExceptionPending()) {  // creation failed (no C++ exceptions: a pending JS one)
    BackendClose(watcher->backend);
    delete watcher;
    return env.Undefined();
  }
  watcher->tsfn.Unref(env);

  int rc = CreateQuietThread(&watcher->thread, ExitWatcher::ThreadMain, watcher);
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

// watch(handle | pid) -> id. Watches of one running process share one kernel registration. Throws
// ESRCH when the process is already gone (kqueue reports it so, and a bare pid that no longer
// exists; with a handle's pidfd an exited process is reported through the normal event path).
static Napi::Value Watch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExitWatcher* watcher = RequireWatcher(env, "exit_watch_add");
  if (watcher == nullptr) return env.Undefined();
  int pid = 0, fd = -1;
  if (info.Length() >= 1 && info[0].IsNumber()) {
    pid = info[0].As<Napi::Number>().Int32Value();
    if (pid <= 0) return ThrowTypeError(env, "watch() takes a positive pid");
  } else if (info.Length() < 1 || !UnwrapProcessHandle(info[0], &pid, &fd)) {
    return ThrowTypeError(env, "watch() takes an open ProcessHandle or a pid");
  }
  int failed = watcher->failed.load(std::memory_order_acquire);
  if (failed != 0) return ThrowSystemError(env, failed, REAPKIT_EXIT_WATCH_PIDFD ? "epoll_wait" : "kevent");
  if (REAPKIT_EXIT_WATCH_PIDFD && fd < 0 && !info[0].IsNumber()) return ThrowSystemError(env, EBADF, "epoll_ctl");
  uint64_t id = 0;
  int err = watcher->Add(pid, fd, &id);
  if (err != 0) {
    const char* syscall = REAPKIT_EXIT_WATCH_PIDFD ? (fd < 0 ? "pidfd_open" : "epoll_ctl") : "kevent";
    return ThrowSystemError(env, err, syscall);
  }
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
  stats.Set("registrations", Napi::Number::New(env, watcher ? (double)watcher->regs.size() : 0));
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
