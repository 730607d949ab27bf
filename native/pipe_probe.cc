// pipePeerAlive(pid, fd): whether the pipe that process `pid` holds as `fd` still has a peer, asked
// of the kernel itself, so that holders /proc cannot show (another PID namespace, e.g. a container
// runtime holding a `docker exec`'s pipes) count too. Used by `reapkit doctor` (lib/policies/doctor/doctor.ts).
//
// It opens /proc/PID/fd/FD anew (an anonymous pipe opens like a FIFO, never blocking) on the same
// side the process holds (read for fd 0, write for fd 1) and polls it once, without waiting and
// without reading or writing a byte: a read end reports POLLHUP once no writer is left, a write end
// POLLERR once no reader is left (fs/pipe.c pipe_poll; the "suppress POLLHUP until a writer" rule of
// fifo_open applies to named FIFOs only). Our brief end never makes anyone see end-of-file: the
// process itself still holds its own end on that side.
//
// Returns true (a peer is left), false (none), or null when it cannot tell (not a pipe, gone, no
// permission, not Linux).
#include <napi.h>

#include "errors.h"
#include "reapkit.h"

#ifdef __linux__
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace reapkit {

static Napi::Value PipePeerAlive(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t pid, fd;
  if (!ArgInt(info, 0, "pid", &pid) || !ArgInt(info, 1, "fd", &fd)) return env.Undefined();
  bool readSide = info.Length() > 2 && info[2].ToBoolean().Value();
#ifdef __linux__
  if (pid <= 0 || fd < 0) return env.Null();
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
  int f = open(path, (readSide ? O_RDONLY : O_WRONLY) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f < 0) return env.Null();
  struct stat st;
  if (fstat(f, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    close(f);
    return env.Null();
  }
  struct pollfd p = {f, static_cast<short>(readSide ? POLLIN : POLLOUT), 0};
  int r;
  do r = poll(&p, 1, 0);
  while (r < 0 && errno == EINTR);
  close(f);
  if (r < 0) return env.Null();
  return Napi::Boolean::New(env, (p.revents & (readSide ? POLLHUP : POLLERR)) == 0);
#else
  (void)readSide;
  return env.Null();
#endif
}

void InitPipeProbe(Napi::Env env, Napi::Object exports) {
  exports.Set("pipePeerAlive", Napi::Function::New(env, PipePeerAlive, "pipePeerAlive"));
}

}  // namespace reapkit
