// mallocTrim(): glibc's malloc_trim(0), which gives the free pages inside every malloc arena back
// to the system (madvise), not only the top of the main one as the trim threshold does. V8's
// compilers and Node's sockets leave such pages in each thread's arena after a burst of load
// (docs/cli.md#memory). True when memory was released; false where the C library is not glibc.
#include <node_api.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static napi_value malloc_trim_call(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  napi_value out;
  napi_get_boolean(env, released != 0, &out);
  return out;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"mallocTrim", NULL, malloc_trim_call, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
