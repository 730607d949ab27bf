// macOS process table and stdio peers for `reapkit doctor` (lib/mechanisms/proctable-darwin.ts),
// through libproc. Compiled on every platform (binding.gyp, CMakeLists.txt) but empty except on
// macOS: elsewhere InitProcDarwin exports nothing, so the lib sees no darwin* functions. Defining
// REAPKIT_FORCE_DARWIN_PROC compiles it anyway, against the declaration-only headers of
// test/kqueue-stub/ (test/native-build.test.ts): a compile check, never run off macOS.
//
//   darwinProcesses()  every process: { pid, ppid, pgid, uid, status, startSec, startUsec, comm }
//   darwinProcess(pid) one process, plus { sid, rssBytes }; null when there is no such process
//   darwinStdio(pid)   [fd 0, fd 1], each { kind: 'closed' | 'other' } or
//                      { kind: 'pipe', id, read, write, peerGone } or
//                      { kind: 'socket', id, unixStream, peerGone }; throws ESRCH / EPERM
//
// What a closed peer looks like, from XNU (apple-oss-distributions/xnu, xnu-11417.101.15):
//
//  Pipes. pipe() makes two struct pipe, one per end, linked both ways (bsd/kern/sys_pipe.c,
//  pipe(): `rpipe->pipe_peer = wpipe; wpipe->pipe_peer = rpipe;`; rf->f_flag = FREAD, wf->f_flag =
//  FWRITE). When the last reference to an end's fileglob goes, fo_close (kern_descrip.c fg_drop ->
//  fo_close) runs pipe_close() -> pipeclose(cpipe), which does, under the pair's lock:
//      if ((ppipe = cpipe->pipe_peer) != NULL) {
//          ppipe->pipe_state &= ~(PIPE_DRAIN);
//          ppipe->pipe_state |= PIPE_EOF;
//          ...
//          ppipe->pipe_peer = NULL;
//      }
//  Nothing else ever clears pipe_peer or sets PIPE_EOF (0x080, bsd/sys/pipe.h) on a live end.
//  fill_pipeinfo() reports, under the same lock:
//      pinfo->pipe_handle = (uint64_t)VM_KERNEL_ADDRHASH((uintptr_t)cpipe);
//      pinfo->pipe_peerhandle = (uint64_t)VM_KERNEL_ADDRHASH((uintptr_t)(cpipe->pipe_peer));
//      pinfo->pipe_status = cpipe->pipe_state;
//  and vm_kernel_addrhash_internal() (osfmk/vm/vm_kern.c) returns 0 for address 0. So an end whose
//  peer end is closed by every holder has pipe_peerhandle == 0 and PIPE_EOF in pipe_status; while
//  any process (or an fd in flight) still holds the peer end, pipe_peer is set. Which end an fd
//  is: pid_pipeinfo() -> fill_fileinfo() sets pfi.fi_openflags = fg_flag (FREAD or FWRITE).
//  A read end with no peer has no writer left; a write end with no peer has no reader left.
//
//  Unix stream sockets (Node's stdio: 'pipe' is a socketpair). When one end is closed for good,
//  unp_detach() -> unp_disconnect() (bsd/kern/uipc_usrreq.c), for SOCK_STREAM:
//      unp2->unp_conn = NULL;
//      unp2->unp_socket->so_state |= (SS_CANTRCVMORE | SS_CANTSENDMORE | SS_ISDISCONNECTED);
//  and fill_socketinfo() (bsd/kern/socket_info.c) reports soi_state = so_state and, for PF_UNIX,
//  unsi_conn_pcb = VM_KERNEL_ADDRHASH(unp->unp_conn). A zero unsi_conn_pcb alone also describes a
//  socket that was never connected (a listener), so "peer gone" here is: connected once
//  (SOI_S_ISDISCONNECTED, 0x2000, the same bit as SS_ISDISCONNECTED) and no peer now
//  (unsi_conn_pcb == 0). An explicit disconnect also ends there: nothing can reach it either way.
#include <napi.h>

#include "errors.h"
#include "reapkit.h"

#if defined(__APPLE__) || defined(REAPKIT_FORCE_DARWIN_PROC)
#define REAPKIT_DARWIN_PROC 1
#include <libproc.h>
#include <sys/proc_info.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>
#endif

namespace reapkit {

#if REAPKIT_DARWIN_PROC

// Kernel-visible open flags (bsd/sys/fcntl.h), reported in proc_fileinfo.fi_openflags.
#ifndef FREAD
#define FREAD 0x0001
#endif
#ifndef FWRITE
#define FWRITE 0x0002
#endif
// bsd/sys/pipe.h (not in the SDK): set on an end when its peer end is closed (see above).
static const int kPipeEof = 0x080;

static Napi::String Hex(Napi::Env env, uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%llx", (unsigned long long)v);
  return Napi::String::New(env, buf);
}

static std::string Comm(const char* comm, size_t size) { return std::string(comm, strnlen(comm, size)); }

// One row; false with errno set (ESRCH gone, EPERM not readable at all). Zombies are included:
// a non-zero `arg` asks for them (proc_pidinfo() in bsd/kern/proc_info.c: findzomb).
// Another user's process (EPERM for PROC_PIDTBSDINFO) gets the unprivileged short form: no start
// time (startSec -1), so it can be listed but never pinned by start time.
static bool Row(Napi::Env env, int pid, Napi::Object* out) {
  struct proc_bsdinfo bi;
  Napi::Object row = Napi::Object::New(env);
  int n = proc_pidinfo(pid, PROC_PIDTBSDINFO, 1, &bi, (int)sizeof bi);
  if (n == (int)sizeof bi) {
    row.Set("pid", Napi::Number::New(env, bi.pbi_pid));
    row.Set("ppid", Napi::Number::New(env, bi.pbi_ppid));
    row.Set("pgid", Napi::Number::New(env, bi.pbi_pgid));
    row.Set("uid", Napi::Number::New(env, bi.pbi_uid));
    row.Set("status", Napi::Number::New(env, bi.pbi_status));
    row.Set("startSec", Napi::Number::New(env, (double)bi.pbi_start_tvsec));
    row.Set("startUsec", Napi::Number::New(env, (double)bi.pbi_start_tvusec));
    row.Set("comm", Napi::String::New(env, bi.pbi_name[0] ? Comm(bi.pbi_name, sizeof bi.pbi_name)
                                                         : Comm(bi.pbi_comm, sizeof bi.pbi_comm)));
    *out = row;
    return true;
  }
  if (n > 0) errno = EIO;  // short copy: not the struct we know
  if (errno != EPERM) return false;
  struct proc_bsdshortinfo si;
  if (proc_pidinfo(pid, PROC_PIDT_SHORTBSDINFO, 1, &si, (int)sizeof si) != (int)sizeof si) return false;
  row.Set("pid", Napi::Number::New(env, si.pbsi_pid));
  row.Set("ppid", Napi::Number::New(env, si.pbsi_ppid));
  row.Set("pgid", Napi::Number::New(env, si.pbsi_pgid));
  row.Set("uid", Napi::Number::New(env, si.pbsi_uid));
  row.Set("status", Napi::Number::New(env, si.pbsi_status));
  row.Set("startSec", Napi::Number::New(env, -1));
  row.Set("startUsec", Napi::Number::New(env, 0));
  row.Set("comm", Napi::String::New(env, Comm(si.pbsi_comm, sizeof si.pbsi_comm)));
  *out = row;
  return true;
}

static Napi::Value DarwinProcesses(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<int> pids;
  int count = proc_listallpids(nullptr, 0);  // the number of pids now
  for (int attempt = 0; attempt < 4; attempt++) {
    if (count < 0) return ThrowSystemError(env, errno, "proc_listallpids");
    pids.resize((size_t)count + 64);
    count = proc_listallpids(pids.data(), (int)(pids.size() * sizeof(int)));
    if (count >= 0 && (size_t)count < pids.size()) break;  // a full buffer may have been cut short
  }
  if (count < 0 || (size_t)count >= pids.size()) return ThrowSystemError(env, count < 0 ? errno : EAGAIN, "proc_listallpids");
  Napi::Array rows = Napi::Array::New(env);
  uint32_t n = 0;
  for (int i = 0; i < count; i++) {
    if (pids[i] <= 0) continue;  // 0 is the kernel task: not a process one can signal
    Napi::Object row;
    if (Row(env, pids[i], &row)) rows.Set(n++, row);  // else it exited meanwhile
  }
  return rows;
}

static Napi::Value DarwinProcess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t pid;
  if (!ArgInt(info, 0, "pid", &pid)) return env.Undefined();
  Napi::Object row;
  if (pid <= 0 || !Row(env, pid, &row)) {
    if (pid > 0 && errno != ESRCH) return ThrowSystemError(env, errno, "proc_pidinfo");
    return env.Null();
  }
  pid_t sid = getsid(pid);  // any process's (bsd/kern/kern_prot.c getsid: no permission check)
  row.Set("sid", Napi::Number::New(env, sid < 0 ? 0 : sid));
  struct proc_taskinfo ti;
  bool task = proc_pidinfo(pid, PROC_PIDTASKINFO, 0, &ti, (int)sizeof ti) == (int)sizeof ti;
  row.Set("rssBytes", Napi::Number::New(env, task ? (double)ti.pti_resident_size : 0));
  return row;
}

// fd `fd` of `pid`: false with errno set when the process cannot be asked (ESRCH, EPERM).
// proc_pidfdinfo returns 0 with errno on failure (libsyscall/wrappers/libproc/libproc.c); the
// kernel answers EBADF for a closed fd, ENOTSOCK / EBADF for a socket / pipe flavor asked of
// another type (proc_pidfdinfo() in bsd/kern/proc_info.c: fp_get_ftype).
static bool Fd(Napi::Env env, int pid, int fd, Napi::Object* out) {
  Napi::Object o = Napi::Object::New(env);
  struct socket_fdinfo so;
  int n = proc_pidfdinfo(pid, fd, PROC_PIDFDSOCKETINFO, &so, (int)sizeof so);
  if (n == (int)sizeof so) {
    bool unixStream = so.psi.soi_family == AF_UNIX && so.psi.soi_type == SOCK_STREAM && so.psi.soi_kind == SOCKINFO_UN;
    o.Set("kind", Napi::String::New(env, "socket"));
    o.Set("id", Hex(env, so.psi.soi_so));
    o.Set("unixStream", Napi::Boolean::New(env, unixStream));
    o.Set("peerGone", Napi::Boolean::New(env, unixStream && so.psi.soi_proto.pri_un.unsi_conn_pcb == 0 &&
                                                  (so.psi.soi_state & SOI_S_ISDISCONNECTED) != 0));
    *out = o;
    return true;
  }
  if (n > 0) errno = EIO;
  if (errno == EBADF) {
    o.Set("kind", Napi::String::New(env, "closed"));
    *out = o;
    return true;
  }
  if (errno != ENOTSOCK) return false;
  struct pipe_fdinfo pi;
  n = proc_pidfdinfo(pid, fd, PROC_PIDFDPIPEINFO, &pi, (int)sizeof pi);
  if (n == (int)sizeof pi) {
    o.Set("kind", Napi::String::New(env, "pipe"));
    o.Set("id", Hex(env, pi.pipeinfo.pipe_handle));
    o.Set("read", Napi::Boolean::New(env, (pi.pfi.fi_openflags & FREAD) != 0));
    o.Set("write", Napi::Boolean::New(env, (pi.pfi.fi_openflags & FWRITE) != 0));
    o.Set("peerGone", Napi::Boolean::New(env, pi.pipeinfo.pipe_peerhandle == 0 || (pi.pipeinfo.pipe_status & kPipeEof) != 0));
    *out = o;
    return true;
  }
  if (n > 0) errno = EIO;
  if (errno != EBADF) return false;  // EBADF here: open, but neither a socket nor a pipe
  o.Set("kind", Napi::String::New(env, "other"));
  *out = o;
  return true;
}

static Napi::Value DarwinStdio(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t pid;
  if (!ArgInt(info, 0, "pid", &pid)) return env.Undefined();
  if (pid <= 0) return ThrowSystemError(env, EINVAL, "proc_pidfdinfo");
  Napi::Array out = Napi::Array::New(env, 2);
  for (int fd = 0; fd < 2; fd++) {
    Napi::Object o;
    if (!Fd(env, pid, fd, &o)) return ThrowSystemError(env, errno, "proc_pidfdinfo");
    out.Set((uint32_t)fd, o);
  }
  return out;
}

void InitProcDarwin(Napi::Env env, Napi::Object exports) {
  exports.Set("darwinProcesses", Napi::Function::New(env, DarwinProcesses, "darwinProcesses"));
  exports.Set("darwinProcess", Napi::Function::New(env, DarwinProcess, "darwinProcess"));
  exports.Set("darwinStdio", Napi::Function::New(env, DarwinStdio, "darwinStdio"));
}

#else

void InitProcDarwin(Napi::Env, Napi::Object) {}  // not macOS: the darwin* functions do not exist

#endif

}  // namespace reapkit
