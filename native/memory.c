// mallocTrim(): glibc's malloc_trim(0), which gives the free pages inside every malloc arena back
// to the system (madvise), not only the top of the main one as the trim threshold does. V8's
// compilers and Node's sockets leave such pages in each thread's arena after a burst of load
// (docs/cli.md#memory). True when memory was released; false where the C library is not glibc.
//
// mallocTrimInBackground(minIntervalMs): the same on a libuv thread-pool thread, so no event loop
// waits for it while it serves; at most one at a time in the whole process, and none within
// minIntervalMs of the last one's start (the addon is loaded once for every thread, so every
// data-plane thread asking shares these). True when a trim was started.
//
// releaseFilePages(address, length): madvise(MADV_DONTNEED) over the resident pages of
// [address, address + length) that are the file's own, skipping the ones written since they
// were mapped (private copies, which MADV_DONTNEED would throw away): /proc/self/pagemap's bit
// 61 tells them apart. For the read-only mappings of the node binary, whose pages start-up
// read once (the parser, the snapshot, ICU's collation data): a page the process reads again
// comes back from the page cache on its next access. Returns the bytes advised; 0 where
// pagemap cannot be read.
#include <fcntl.h>
#include <node_api.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static napi_value boolean(napi_env env, int value) {
  napi_value out;
  napi_get_boolean(env, value != 0, &out);
  return out;
}

static napi_value malloc_trim_call(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  return boolean(env, released);
}

#ifdef __GLIBC__
// Set while a background trim runs; cleared by the pool thread itself, so a thread that ends
// before its completion callback runs does not stop every later trim.
static atomic_flag trimming = ATOMIC_FLAG_INIT;
// When the last background trim started, in CLOCK_MONOTONIC milliseconds.
static _Atomic int64_t last_started_ms;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// The async work, kept by its own data so the completion can delete it.
typedef struct {
  napi_async_work work;
} trim_job;

static void trim_execute(napi_env env, void *data) {
  (void)env;
  (void)data;
  malloc_trim(0);
  atomic_flag_clear(&trimming);
}

static void trim_complete(napi_env env, napi_status status, void *data) {
  // Cancelled before a pool thread took it (its thread ending): the flag is still set.
  if (status == napi_cancelled) atomic_flag_clear(&trimming);
  trim_job *job = data;
  napi_delete_async_work(env, job->work);
  free(job);
}
#endif

static napi_value malloc_trim_background_call(napi_env env, napi_callback_info info) {
#ifdef __GLIBC__
  size_t argc = 1;
  napi_value arg;
  int64_t min_interval_ms = 0;
  napi_get_cb_info(env, info, &argc, &arg, NULL, NULL);
  if (argc < 1 || napi_get_value_int64(env, arg, &min_interval_ms) != napi_ok) min_interval_ms = 0;
  if (now_ms() - atomic_load(&last_started_ms) < min_interval_ms) return boolean(env, 0);
  if (atomic_flag_test_and_set(&trimming)) return boolean(env, 0);
  atomic_store(&last_started_ms, now_ms());
  napi_value name;
  napi_create_string_utf8(env, "mallocTrim", NAPI_AUTO_LENGTH, &name);
  trim_job *job = malloc(sizeof *job);
  if (job == NULL || napi_create_async_work(env, NULL, name, trim_execute, trim_complete, job, &job->work) != napi_ok) {
    free(job);
    atomic_flag_clear(&trimming);
    return boolean(env, 0);
  }
  if (napi_queue_async_work(env, job->work) != napi_ok) {
    napi_delete_async_work(env, job->work);
    free(job);
    atomic_flag_clear(&trimming);
    return boolean(env, 0);
  }
  return boolean(env, 1);
#else
  (void)info;
  return boolean(env, 0);
#endif
}

// Pages of pagemap read at once.
#define PAGEMAP_BATCH 512
// pagemap: the page is resident, and it is a file's page (or shared anonymous memory).
#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_FILE (1ULL << 61)

static napi_value release_file_pages_call(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  int64_t start = 0, length = 0;
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  napi_value out;
  if (argc < 2 || napi_get_value_int64(env, args[0], &start) != napi_ok ||
      napi_get_value_int64(env, args[1], &length) != napi_ok || start < 0 || length <= 0) {
    napi_create_double(env, 0, &out);
    return out;
  }
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint64_t first = (uint64_t)start / page, end = ((uint64_t)start + (uint64_t)length + page - 1) / page;
  double advised = 0;
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    uint64_t entries[PAGEMAP_BATCH];
    uint64_t run = 0, run_pages = 0;  // the pages to advise, not yet advised
    for (uint64_t at = first; at < end; at += PAGEMAP_BATCH) {
      uint64_t n = end - at < PAGEMAP_BATCH ? end - at : PAGEMAP_BATCH;
      ssize_t got = pread(fd, entries, n * sizeof entries[0], (off_t)(at * sizeof entries[0]));
      if (got != (ssize_t)(n * sizeof entries[0])) break;
      for (uint64_t i = 0; i < n; i++) {
        // Resident and the file's: a private copy has bit 61 clear. A page not resident adds
        // nothing to the resident set, and where pagemap hides its flags nothing is advised.
        int own = (entries[i] & PAGEMAP_PRESENT) && (entries[i] & PAGEMAP_FILE);
        if (own) {
          if (run_pages == 0) run = at + i;
          run_pages++;
          continue;
        }
        if (run_pages > 0 && madvise((void *)(uintptr_t)(run * page), run_pages * page, MADV_DONTNEED) == 0)
          advised += (double)(run_pages * page);
        run_pages = 0;
      }
    }
    if (run_pages > 0 && madvise((void *)(uintptr_t)(run * page), run_pages * page, MADV_DONTNEED) == 0)
      advised += (double)(run_pages * page);
    close(fd);
  }
  napi_create_double(env, advised, &out);
  return out;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"mallocTrim", NULL, malloc_trim_call, NULL, NULL, NULL, napi_enumerable, NULL},
      {"mallocTrimInBackground", NULL, malloc_trim_background_call, NULL, NULL, NULL, napi_enumerable, NULL},
      {"releaseFilePages", NULL, release_file_pages_call, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
