// stdinWatchStart(onHangup) / stdinWatchStop(): tell JS when the writer side of this process's
// stdin is gone, without reading a byte of it (the keepalive's "stdin end" trigger, for servers that
// never read stdin themselves; lib/mechanisms/stdin-hangup.ts).
//
// A small thread per environment blocks in poll() on a dup of fd 0 and on a wake pipe. No events
// are asked for on fd 0 but the hang-up ones, so data waiting in the pipe never wakes it:
// - a pipe or FIFO reports POLLHUP once no writer is left (always reported, whatever is asked);
// - a socket (libuv's "pipes" are socketpairs) reports POLLRDHUP once the peer shut down its
//   writing side or closed (Linux; elsewhere sockets are not watched: poll() there has no such bit).
// A terminal, a regular file, /dev/null and the like are not watched: a terminal's end is a hang-up
// signal (SIGHUP), and a file is never "ended" by anyone. The dup keeps watching what fd 0 was, even
// if the application closes or replaces fd 0; libuv never sees it, so an application that reads
// process.stdin (before or after the watch starts) is not disturbed, and nothing is made
// non-blocking.
//
// The writer's hang-up is not yet the end of file when bytes are left unread: onHangup gets their
// count (FIONREAD at the hang-up; -1 if unknown), and JS decides (they are the application's).
//
// Lifecycle: the thread calls JS once, through a thread-safe function that is unref'd (the watch
// never keeps the event loop alive), then ends. stdinWatchStop() or the env cleanup hook wakes and
// joins it and releases the function; the cleanup hook runs before Node's finalizers, and a call
// that reaches a torn-down environment (env null, or an empty function) is dropped.
#include <napi.h>

#include <atomic>
#include <cerrno>

#include "errors.h"
#include "reapkit.h"
#include "threads.h"

#ifndef _WIN32
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace reapkit {

#ifndef _WIN32

struct StdinWatch;
static void CallOnHangup(Napi::Env env, Napi::Function fn, StdinWatch* watch, void*);
using HangupTsfn = Napi::TypedThreadSafeFunction<StdinWatch, void, CallOnHangup>;

struct StdinWatch {
  napi_env env = nullptr;
  ModuleData* data = nullptr;
  int fd = -1;                // our dup of fd 0
  short events = 0;           // what poll() asks for on it
  int wake[2] = {-1, -1};     // write a byte to wake[1] to end the thread
  pthread_t thread{};
  bool thread_started = false;
  std::atomic<bool> stopped{false};
  std::atomic<int> unread{-1};  // bytes left unread in fd 0 at the hang-up (FIONREAD), -1 unknown
  HangupTsfn tsfn;
};

// What fd 0 is; for the kinds that can be watched, sets *watchable and the poll() events that say
// its writer is gone.
static const char* ClassifyStdin(bool* watchable, short* events) {
  *watchable = false;
  *events = 0;
  struct stat st;
  if (fstat(0, &st) != 0) return "closed";
  if (isatty(0)) return "tty";
  if (S_ISFIFO(st.st_mode)) {
    *watchable = true;  // POLLHUP is reported whatever is asked for
    return "pipe";
  }
  if (S_ISSOCK(st.st_mode)) {
#ifdef POLLRDHUP
    *watchable = true;
    *events = POLLRDHUP;
    return "socket";
#else
    return "socket-unsupported";
#endif
  }
  return S_ISREG(st.st_mode) ? "file" : "other";
}

static void* ThreadMain(void* arg) {
  NameThisThread("reapkit-stdin");
  auto* watch = static_cast<StdinWatch*>(arg);
  struct pollfd fds[2] = {{watch->fd, watch->events, 0}, {watch->wake[0], POLLIN, 0}};
  for (;;) {
    int r = poll(fds, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || fds[1].revents != 0 || watch->stopped.load()) return nullptr;
    if (fds[0].revents & POLLNVAL) return nullptr;  // our dup was closed under us: no answer
    if (fds[0].revents & (POLLHUP | POLLERR | watch->events)) break;
  }
  int unread = -1;
  if (ioctl(watch->fd, FIONREAD, &unread) != 0) unread = -1;
  watch->unread.store(unread);
  // Non-blocking: the thread never waits on the JS thread, so the cleanup hook can always join it.
  watch->tsfn.NonBlockingCall(nullptr);
  return nullptr;
}

// JS thread. Node also runs this while an environment is torn down: with a null env after the
// function's finalizer (which freed `watch`: the env test comes first), or with a live env that no
// longer runs JS, where every Node-API call fails and node-addon-api would hand back empty values.
// Raw calls, each status checked: the delivery is dropped at the first failure.
static void CallOnHangup(Napi::Env env, Napi::Function fn, StdinWatch* watch, void*) {
  if (env == nullptr || fn.IsEmpty() || watch == nullptr || watch->stopped.load()) return;
  napi_value unread = nullptr;
  napi_value recv = nullptr;
  if (napi_create_int32(env, watch->unread.load(), &unread) != napi_ok || unread == nullptr) return;
  if (napi_get_undefined(env, &recv) != napi_ok || recv == nullptr) return;
  napi_call_function(env, recv, fn, 1, &unread, nullptr);  // a JS exception stays pending for Node
}

static void FinalizeWatch(Napi::Env, void*, StdinWatch* watch) { delete watch; }

static void CloseFds(StdinWatch* watch) {
  for (int* fd : {&watch->fd, &watch->wake[0], &watch->wake[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

// Wakes and joins the thread, closes the descriptors and releases the function (whose finalizer
// frees the watch). Runs on the JS thread, or in the env cleanup hook.
static void StopWatch(StdinWatch* watch) {
  watch->stopped.store(true);
  if (watch->thread_started) {
    char byte = 1;
    ssize_t ignored = write(watch->wake[1], &byte, 1);
    (void)ignored;
    pthread_join(watch->thread, nullptr);
    watch->thread_started = false;
  }
  CloseFds(watch);
  watch->tsfn.Release();
}

static void CleanupHook(void* arg) {
  auto* data = static_cast<ModuleData*>(arg);
  StdinWatch* watch = data->stdin_watch;
  data->stdin_watch = nullptr;  // never napi_remove_env_cleanup_hook from in here
  if (watch != nullptr) StopWatch(watch);
}

static Napi::Value StdinWatchStop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ModuleData* data = GetModuleData(env);
  StdinWatch* watch = data->stdin_watch;
  if (watch == nullptr) return env.Undefined();
  data->stdin_watch = nullptr;
  napi_remove_env_cleanup_hook(env, CleanupHook, data);
  StopWatch(watch);
  return env.Undefined();
}

// Opens the descriptors and creates the function. Returns 0, or an errno with `*syscall` set; -1
// when creating the function failed (a JS exception is then pending).
static int OpenWatch(Napi::Env env, StdinWatch* watch, Napi::Function onHangup, const char** syscall) {
  *syscall = "dup";
  watch->fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
  if (watch->fd < 0) return errno;
  *syscall = "pipe";
  if (CloexecPipe(watch->wake) != 0) return errno;
  watch->tsfn = HangupTsfn::New(env, onHangup, "reapkit.stdinWatch", 0, 1, watch, FinalizeWatch);
  if (env.IsExceptionPending()) return -1;
  watch->tsfn.Unref(env);
  return 0;
}

// stdinWatchStart(onHangup) -> what fd 0 is: 'pipe' or 'socket' (watched), or 'tty', 'file',
// 'closed', 'other', 'socket-unsupported' (not watched; onHangup is never called).
static Napi::Value StdinWatchStart(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) return ThrowTypeError(env, "onHangup must be a function");
  ModuleData* data = GetModuleData(env);
  if (data->stdin_watch != nullptr) return ThrowSystemError(env, EBUSY, "stdin_watch_start");
  bool watchable;
  short events;
  const char* kind = ClassifyStdin(&watchable, &events);
  if (!watchable) return Napi::String::New(env, kind);

  auto* watch = new StdinWatch();
  watch->env = env;
  watch->data = data;
  watch->events = events;
  const char* syscall = nullptr;
  int err = OpenWatch(env, watch, info[0].As<Napi::Function>(), &syscall);
  if (err != 0) {  // no function was created: nothing else owns the watch
    CloseFds(watch);
    delete watch;
    return err > 0 ? ThrowSystemError(env, err, syscall) : env.Undefined();
  }
  int rc = CreateQuietThread(&watch->thread, ThreadMain, watch);
  if (rc != 0) {
    StopWatch(watch);
    return ThrowSystemError(env, rc, "pthread_create");
  }
  watch->thread_started = true;
  data->stdin_watch = watch;
  // Registered after the function, so the hook runs before the function's own teardown.
  napi_add_env_cleanup_hook(env, CleanupHook, data);
  return Napi::String::New(env, kind);
}

#else  // Windows builds native/win/ instead; kept compilable anyway

static Napi::Value StdinWatchStart(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), "other"); }
static Napi::Value StdinWatchStop(const Napi::CallbackInfo& info) { return info.Env().Undefined(); }

#endif

void InitStdinWatch(Napi::Env env, Napi::Object exports) {
  exports.Set("stdinWatchStart", Napi::Function::New(env, StdinWatchStart, "stdinWatchStart"));
  exports.Set("stdinWatchStop", Napi::Function::New(env, StdinWatchStop, "stdinWatchStop"));
}

}  // namespace reapkit
