// Module init: per-environment state and the exports of every part. Context-aware (Node-API), so
// each worker_thread gets its own ModuleData and its own exit watcher.
#include <napi.h>

#include "reapkit.h"

namespace reapkit {

// native/proc_darwin.cc: libproc's process table and stdio peers for `reapkit doctor` (macOS; a
// no-op elsewhere). Declared here rather than in reapkit.h: only the module init calls it.
void InitProcDarwin(Napi::Env env, Napi::Object exports);

static void FreeModuleData(Napi::Env, ModuleData* data) {
  DestroyExitWatcher(data);  // normally already done by the env cleanup hook
  delete data;
}

ModuleData* GetModuleData(Napi::Env env) { return env.GetInstanceData<ModuleData>(); }

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new ModuleData();
  data->pidfd = ProbePidfd();
  env.SetInstanceData<ModuleData, FreeModuleData>(data);

  InitGroup(env, exports);
  InitPdeathsig(env, exports);
  InitProcessHandle(env, exports);
  InitExitWatch(env, exports);
  InitPipeProbe(env, exports);
  InitPeerCred(env, exports);
  InitStdinWatch(env, exports);
  InitExecReport(env, exports);
  InitTerminal(env, exports);
  InitProcDarwin(env, exports);

  Napi::Object caps = Napi::Object::New(env);
  caps.Set("pidfd", Napi::Boolean::New(env, data->pidfd));
  caps.Set("prctl", Napi::Boolean::New(env, HavePrctl()));
  caps.Set("exitWatch", Napi::String::New(env, REAPKIT_EXIT_WATCH_NAME));
  exports.Set("capabilities", caps);
  return exports;
}

}  // namespace reapkit

// NODE_API_MODULE pastes the function's name into an identifier: it needs an unqualified one.
static Napi::Object InitReapkit(Napi::Env env, Napi::Object exports) { return reapkit::Init(env, exports); }

NODE_API_MODULE(reapkit, InitReapkit)
