// Hands a batch of numbers to a JavaScript function from a thread-safe function's callback.
//
// Node runs such callbacks while an environment is being torn down too: from CleanupHandles at
// process exit, and from the loop of a worker that is being terminated. The env pointer is still
// valid there, but the environment no longer allows calls into JavaScript: every Node-API call that
// would create a value or run JS fails, and node-addon-api's wrappers then return *empty* values
// with no exception pending. Each step below checks its status and drops the delivery at the first
// failure: nothing it returned is used. At that point nobody is left to receive the batch anyway.
#pragma once

#include <node_api.h>

#include <cstddef>
#include <cstring>

namespace reapkit {

// Calls `fn(new Float64Array(values))`. Returns true when the call was made and returned normally;
// false when it could not be made (the environment no longer allows calls into JavaScript) or `fn`
// threw. A throw is left pending for the thread-safe function's machinery to handle as Node does
// (with NAPI_VERSION 8 on Node 20 it is reported as warning DEP0168, not as an uncaught exception);
// lib/mechanisms/handle.ts's dispatcher never throws.
inline bool DeliverFloat64Batch(napi_env env, napi_value fn, const double* values, size_t count) {
  if (env == nullptr || fn == nullptr || count == 0) return false;
  void* bytes = nullptr;
  napi_value buffer = nullptr;
  if (napi_create_arraybuffer(env, count * sizeof(double), &bytes, &buffer) != napi_ok) return false;
  if (bytes == nullptr || buffer == nullptr) return false;
  std::memcpy(bytes, values, count * sizeof(double));
  napi_value array = nullptr;
  if (napi_create_typedarray(env, napi_float64_array, count, buffer, 0, &array) != napi_ok) return false;
  napi_value recv = nullptr;
  if (napi_get_undefined(env, &recv) != napi_ok) return false;
  return napi_call_function(env, recv, fn, 1, &array, nullptr) == napi_ok;
}

}  // namespace reapkit
