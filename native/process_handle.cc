// ProcessHandle: a handle pinned to one process. On Linux it holds a pidfd from the moment it is
// opened and signals through pidfd_send_signal, so it can never signal a recycled pid. Without
// pidfds (kqueue platforms) it holds the pid; the TS layer refuses to signal once the exit watcher
// has seen the process go.
#include <fcntl.h>
#include <napi.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "errors.h"
#include "reapkit.h"

#if defined(__linux__)
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // from the unified table of new syscalls (x86-64, arm64, ...; not alpha)
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#endif

namespace reapkit {

// Tags our wrapped objects so that UnwrapProcessHandle never casts another addon's object.
static const napi_type_tag kProcessHandleTag = {0x7265617070696466ULL, 0x68616e646c650001ULL};

int PidfdOpen(int pid) {
#if defined(__linux__)
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

int PidfdSendSignal(int pidfd, int sig) {
#if defined(__linux__)
  return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0);
#else
  (void)pidfd;
  (void)sig;
  errno = ENOSYS;
  return -1;
#endif
}

bool ProbePidfd() {
#if REAPKIT_EXIT_WATCH_PIDFD
  int fd = PidfdOpen(getpid());
  if (fd < 0) return false;  // ENOSYS (old kernel) or EPERM/ENOSYS from a seccomp policy
  close(fd);
  return true;
#else
  return false;
#endif
}

class ProcessHandle : public Napi::ObjectWrap<ProcessHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "ProcessHandle",
                       {
                           InstanceAccessor<&ProcessHandle::Pid>("pid"),
                           InstanceAccessor<&ProcessHandle::Closed>("closed"),
                           InstanceMethod<&ProcessHandle::Signal>("signal"),
                           InstanceMethod<&ProcessHandle::Close>("close"),
                       });
  }

  explicit ProcessHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ProcessHandle>(info) {
    int32_t pid;
    if (!ArgInt(info, 0, "pid", &pid)) return;
    if (pid <= 0) {
      ThrowSystemError(info.Env(), EINVAL, "pidfd_open");
      return;
    }
#if REAPKIT_EXIT_WATCH_PIDFD
    fd_ = PidfdOpen(pid);
    if (fd_ < 0) {
      int err = errno;
      // A kernel race can report EINVAL for a pid that exists but has no tasks left (psutil#2715):
      // it is gone for our purposes, as systemd also treats it. But EINVAL also means "a thread
      // id, not a process" (kernels before 6.9 say so; later ones say ENOENT): if kill() still
      // finds it, it exists and EINVAL stands.
      if (err == EINVAL && kill(pid, 0) < 0 && errno == ESRCH) err = ESRCH;
      ThrowSystemError(info.Env(), err, "pidfd_open");
      return;
    }
#else
    if (kill(pid, 0) < 0 && errno == ESRCH) {
      ThrowSystemError(info.Env(), ESRCH, "kill");
      return;
    }
#endif
    pid_ = pid;
    open_ = true;
    napi_type_tag_object(info.Env(), info.This(), &kProcessHandleTag);
  }

  ~ProcessHandle() override { CloseFd(); }

  int pid() const { return pid_; }
  int fd() const { return fd_; }
  bool open() const { return open_; }

 private:
  Napi::Value Pid(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), pid_); }
  Napi::Value Closed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), !open_); }

  Napi::Value Signal(const Napi::CallbackInfo& info) {
    int32_t sig;
    if (!ArgInt(info, 0, "signal", &sig)) return info.Env().Undefined();
    if (!open_) return ThrowSystemError(info.Env(), EBADF, "pidfd_send_signal");
#if REAPKIT_EXIT_WATCH_PIDFD
    // A pidfd polls readable once its process has exited. The kernel would still accept a signal
    // for a zombie (and drop it); we report the process as gone instead, before and after reaping.
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN)) {
      return ThrowSystemError(info.Env(), ESRCH, "pidfd_send_signal");
    }
    if (PidfdSendSignal(fd_, sig) < 0) return ThrowSystemError(info.Env(), errno, "pidfd_send_signal");
#else
    if (kill(pid_, sig) < 0) return ThrowSystemError(info.Env(), errno, "kill");
#endif
    return info.Env().Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    CloseFd();
    return info.Env().Undefined();
  }

  void CloseFd() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    open_ = false;
  }

  int pid_ = 0;
  int fd_ = -1;
  bool open_ = false;
};

bool UnwrapProcessHandle(Napi::Value value, int* pid, int* fd) {
  if (!value.IsObject()) return false;
  Napi::Object obj = value.As<Napi::Object>();
  bool ours = false;
  if (napi_check_object_type_tag(value.Env(), obj, &kProcessHandleTag, &ours) != napi_ok || !ours) {
    return false;
  }
  void* raw = nullptr;
  if (napi_unwrap(value.Env(), obj, &raw) != napi_ok || raw == nullptr) return false;
  auto* handle = static_cast<ProcessHandle*>(raw);
  if (!handle->open()) return false;
  *pid = handle->pid();
  *fd = handle->fd();
  return true;
}

void InitProcessHandle(Napi::Env env, Napi::Object exports) {
  exports.Set("ProcessHandle", ProcessHandle::Define(env));
}

}  // namespace reapkit
