// The report pipe between spawn() and its exec helper (native/exec_helper.c), so that spawn()
// returns only once the child leads its group, has its death signal armed and has exec'd the target.
//
//   execReportPipe()              -> [readFd, writeFd], both close-on-exec
//   execReportWait(readFd, ms)    -> { ready, done, step, errno }
//   execReportWaitCode(readFd, ms) -> the same, packed in an int32 (spawn()'s own, see below)
//
// The write end goes to the child through one extra stdio entry (lib/mechanisms/spawn.ts); the
// parent closes its copy right after Node's spawn returns. Close-on-exec on both ends means a child
// that anything else in this process (a worker_thread, say) spawns at the same moment loses them at
// its exec: only our helper holds the write end past its exec (libuv dup2s it into place, which
// clears the flag; the helper sets it again before its own exec of the target).
//
// execReportWait reads until EOF or until `ms` has passed, in one bounded poll loop:
//   ready  the helper wrote 'R': the group exists and the death signal is armed
//   done   EOF: the helper is gone (exec'd, or exited); the read end is then closed here
//   step   null, or which step failed: 'cgroup' | 'setpgid' | 'prctl' | 'unshare' | 'fork' | 'exec'
//          (the errno is the helper's; unshare and fork: spawn({ pidNamespace }), native/exec_pidns.c)
// When `done` is false (the deadline passed first), the read end stays open and is the caller's.
//
//   execvpSearch(pathList, cwd, command) -> index | -1 | -2
//
// The PATH look-up that decides whether spawn() goes through the helper and which file it execs
// (lib/mechanisms/spawn-args.ts, resolveLikeExecvp, has the rule): in one call, where the same
// look-up in JavaScript cost a Stats object and an fs call per entry (about ten on a usual PATH).
#include <napi.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>

#include "errors.h"
#include "reapkit.h"

namespace reapkit {

// Both ends close-on-exec. pipe2 does it atomically (Linux, the BSDs); macOS has no pipe2, so there
// the flags are set right after, and a fork in another thread in between could inherit the ends
// until its own exec (a child that keeps the write end would only delay spawn() to its deadline).
int CloexecPipe(int fds[2]) {
#if defined(__APPLE__)
  if (pipe(fds) != 0) return errno;
  for (int i = 0; i < 2; i++) fcntl(fds[i], F_SETFD, FD_CLOEXEC);
  return 0;
#else
  return pipe2(fds, O_CLOEXEC) == 0 ? 0 : errno;
#endif
}

static Napi::Value ExecReportPipe(const Napi::CallbackInfo& info) {
  int fds[2];
  int err = CloexecPipe(fds);
  if (err != 0) return ThrowSystemError(info.Env(), err, "pipe");
  Napi::Array out = Napi::Array::New(info.Env(), 2);
  if (out.IsEmpty()) {  // the environment is being torn down: nobody will read the pipe
    close(fds[0]);
    close(fds[1]);
    return Napi::Value();
  }
  out.Set(0u, fds[0]);
  out.Set(1u, fds[1]);
  return out;
}

struct Report {
  bool ready = false;
  int own_proc = -1;  // the PID namespace's init: 1 'p' (it mounted the namespace's /proc), 0 'o', -1 unsaid
  bool done = false;
  char step = 0;
  int32_t err = 0;
  unsigned char buf[16];  // 'R', the init's 'p'/'o', then at most one failure record of 8 bytes
  size_t len = 0;
};

// Reads what is there; false on a read error other than EINTR/EAGAIN (errno kept).
static bool ReadSome(int fd, Report* r) {
  unsigned char chunk[16];
  ssize_t n = read(fd, chunk, sizeof chunk);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) {
    r->done = true;
    return true;
  }
  for (ssize_t i = 0; i < n && r->len < sizeof r->buf; i++) r->buf[r->len++] = chunk[i];
  return true;
}

// Decodes 'R' and the failure record ('F', step, 2 bytes, int32 errno) from what was read.
static void Decode(Report* r) {
  size_t at = 0;
  if (at < r->len && r->buf[at] == 'R') {
    r->ready = true;
    at++;
  }
  if (at < r->len && r->buf[at] == 'u') at++;  // the user-namespace route: capabilities()' probe reads it
  if (at < r->len && (r->buf[at] == 'p' || r->buf[at] == 'o')) {
    r->own_proc = r->buf[at] == 'p' ? 1 : 0;
    at++;
  }
  if (at + 8 <= r->len && r->buf[at] == 'F') {
    r->step = static_cast<char>(r->buf[at + 1]);
    std::memcpy(&r->err, r->buf + at + 4, sizeof r->err);
  }
}

// Polls and reads until EOF or the deadline. Returns 0, or the errno of a failed poll/read.
static int WaitForReport(int fd, int32_t ms, Report* r) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (!r->done) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left < 0) left = 0;
#if defined(__linux__)
    // Linux reports POLLHUP on a pipe's read end once no writer is left, whatever the events asked
    // for (fs/pipe.c, pipe_poll). Asking for none, the wait sleeps through the helper's 'R' and
    // wakes once, at its exec (or exit), where a wait for POLLIN woke for 'R' and again for EOF
    // (two polls and two reads a spawn); what was written is read after, and no read can block
    // then. At the deadline, what is there is read without blocking, as the loop below would have.
    struct pollfd p = {fd, 0, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) {
      struct pollfd q = {fd, POLLIN, 0};
      while (!r->done && poll(&q, 1, 0) == 1) {
        if (!ReadSome(fd, r)) return errno;
      }
      break;  // the deadline passed
    }
    while (!r->done) {
      if (!ReadSome(fd, r)) return errno;
    }
#else
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) break;  // the deadline passed
    if (!ReadSome(fd, r)) return errno;
#endif
  }
  Decode(r);
  return 0;
}

static const char* StepName(char step) {
  switch (step) {
    case 'c': return "cgroup";
    case 'g': return "setpgid";
    case 'p': return "prctl";
    case 'n': return "unshare";
    case 'f': return "fork";
    case 'e': return "exec";
    default: return nullptr;
  }
}

// The wait both forms share, from their arguments (fd, timeoutMs); the read end closed at EOF.
// false: a JavaScript error is pending (a bad argument, a failed poll or read).
static bool WaitFromArgs(const Napi::CallbackInfo& info, Report* r) {
  Napi::Env env = info.Env();
  int32_t fd, ms;
  if (!ArgInt(info, 0, "fd", &fd) || !ArgInt(info, 1, "timeoutMs", &ms)) return false;
  int err = fd < 0 || ms < 0 ? EINVAL : WaitForReport(fd, ms, r);
  if (err != 0) {
    ThrowSystemError(env, err, "poll");
    return false;
  }
  if (r->done) close(fd);
  return true;
}

static Napi::Value ExecReportWait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Report r;
  if (!WaitFromArgs(info, &r)) return env.Undefined();
  Napi::Object out = Napi::Object::New(env);
  out.Set("ready", Napi::Boolean::New(env, r.ready));
  out.Set("done", Napi::Boolean::New(env, r.done));
  if (r.own_proc >= 0) out.Set("ownProc", Napi::Boolean::New(env, r.own_proc == 1));
  const char* step = StepName(r.step);
  out.Set("step", step ? Napi::Value(Napi::String::New(env, step)) : env.Null());
  out.Set("errno", Napi::Number::New(env, step ? r.err : 0));
  return out;
}

// execReportWaitCode(readFd, ms): the same wait, its answer packed in one int32 rather than an
// object, whose named properties cost spawn() more than the poll itself (a key string made and set
// per property, at every spawn): bit 0 ready, bit 1 done, bit 2 ownProc said, bit 3 its value,
// bits 8-15 the failed step's letter (0: none), bits 16-30 its errno. lib/mechanisms/exec-report.ts
// unpacks it.
static Napi::Value ExecReportWaitCode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Report r;
  if (!WaitFromArgs(info, &r)) return env.Undefined();
  const bool failed = StepName(r.step) != nullptr;
  int32_t code = (r.ready ? 1 : 0) | (r.done ? 2 : 0) | (r.own_proc >= 0 ? 4 : 0) | (r.own_proc == 1 ? 8 : 0);
  // An errno that does not fit (or is not one: <= 0) is sent as EIO, as the helper never sends 0:
  // truncated, it would name another error; a failure never reads as "no error".
  const int32_t helper_errno = r.err > 0 && r.err <= 0x7fff ? r.err : EIO;
  if (failed) code |= (static_cast<int32_t>(static_cast<unsigned char>(r.step)) << 8) | (helper_errno << 16);
  return Napi::Number::New(env, code);
}

// execReportClose(fd): closes a report descriptor natively. Node's fs.closeSync would do, but a
// worker_thread warns for every descriptor it did not open itself ("closed but not opened in
// unmanaged mode"), and these are the addon's.
static Napi::Value ExecReportClose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t fd;
  if (!ArgInt(info, 0, "fd", &fd)) return env.Undefined();
  if (fd < 0) return ThrowSystemError(env, EBADF, "close");
  close(fd);  // EINTR on Linux still closes it; nothing to retry
  return env.Undefined();
}

// stat errors on a PATH entry that glibc's execvp skips (its execve's errors: it goes on to the
// next entry); spawn-args.ts's EXECVP_SKIPS, the same list.
static bool ExecvpSkips(int err) {
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

// execvpSearch(pathList, cwd, command): the index of the first entry of pathList (split on ':',
// empty entries kept, as String.prototype.split keeps them) that holds `command` as a regular file
// we may execute (stat, then access X_OK); -1 when none does; -2 when an entry's stat fails with
// an error execvp does not skip (ELOOP, ENAMETOOLONG...): execvp would stop there. An entry not
// starting with '/' is under `cwd` (`${cwd}/${entry || '.'}/${command}`, joined as strings). An
// entry that appeared earlier in the list is not looked at again (PATHs often repeat one).
static Napi::Value ExecvpSearch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsString() || !info[2].IsString()) {
    return ThrowTypeError(env, "execvpSearch(pathList, cwd, command) takes three strings");
  }
  const std::string list = info[0].As<Napi::String>().Utf8Value();
  const std::string cwd = info[1].As<Napi::String>().Utf8Value();
  const std::string command = info[2].As<Napi::String>().Utf8Value();
  std::string file;
  // An entry met again is skipped: its stat was its answer a moment ago. A set, not a walk over the
  // entries seen: a PATH of thousands of entries costs the walk of it, not its square.
  std::unordered_set<std::string> seen;
  int32_t index = 0;
  for (size_t start = 0;; index++) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    std::string dir = list.substr(start, end - start);
    if (!seen.insert(dir).second) {
      if (end == list.size()) break;
      start = end + 1;
      continue;
    }
    if (!dir.empty() && dir[0] == '/') file = dir + "/" + command;
    else file = cwd + "/" + (dir.empty() ? std::string(".") : dir) + "/" + command;
    struct stat st;
    if (stat(file.c_str(), &st) != 0) {
      if (!ExecvpSkips(errno)) return Napi::Number::New(env, -2);
    } else if (S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) {
      return Napi::Number::New(env, index);
    }
    if (end == list.size()) break;
    start = end + 1;
  }
  return Napi::Number::New(env, -1);
}

void InitExecReport(Napi::Env env, Napi::Object exports) {
  exports.Set("execReportClose", Napi::Function::New(env, ExecReportClose, "execReportClose"));
  exports.Set("execReportPipe", Napi::Function::New(env, ExecReportPipe, "execReportPipe"));
  exports.Set("execReportWait", Napi::Function::New(env, ExecReportWait, "execReportWait"));
  exports.Set("execReportWaitCode", Napi::Function::New(env, ExecReportWaitCode, "execReportWaitCode"));
  exports.Set("execvpSearch", Napi::Function::New(env, ExecvpSearch, "execvpSearch"));
}

}  // namespace reapkit
