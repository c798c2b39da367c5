/*
 * LD_PRELOAD shim that shifts one process's wall clock (CLOCK_REALTIME, its coarse form,
 * gettimeofday and time) by an offset the test can change while the process runs.
 *
 * Raw syscalls only, no malloc and no dlsym: libfaketime hangs redis-server by recursing
 * through jemalloc. The offset lives in a file named by FAULT_CLOCK_FILE, mapped once at load
 * time: two little-endian int64 copies of the offset in microseconds, written one after the
 * other, so a reader that sees them differ (a write under way) reads again.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const volatile int64_t *shared_offset; /* [0] and [1]: the offset, twice */
static int64_t last_offset_us;

__attribute__((constructor)) static void map_offset_file(void) {
  const char *path = getenv("FAULT_CLOCK_FILE");
  if (!path) return;
  long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  void *mapped = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  syscall(SYS_close, fd);
  if (mapped != MAP_FAILED) shared_offset = mapped;
}

static int64_t offset_us(void) {
  if (!shared_offset) return 0;
  for (int tries = 0; tries < 1000; tries++) {
    int64_t first = __atomic_load_n(&shared_offset[0], __ATOMIC_ACQUIRE);
    int64_t second = __atomic_load_n(&shared_offset[1], __ATOMIC_ACQUIRE);
    if (first == second) {
      __atomic_store_n(&last_offset_us, first, __ATOMIC_RELAXED);
      return first;
    }
  }
  return __atomic_load_n(&last_offset_us, __ATOMIC_RELAXED);
}

static void shift(struct timespec *ts) {
  int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + offset_us() * 1000;
  ts->tv_sec = ns / 1000000000;
  ts->tv_nsec = ns % 1000000000;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  long result = syscall(SYS_clock_gettime, clock, ts);
  if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts);
  return (int)result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  struct timespec ts;
  long result = syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  if (result != 0) return (int)result;
  shift(&ts);
  tv->tv_sec = ts.tv_sec; /* glibc declares tv nonnull */
  tv->tv_usec = ts.tv_nsec / 1000;
  if (tz) {
    struct timezone *zone = tz;
    zone->tz_minuteswest = 0;
    zone->tz_dsttime = 0;
  }
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  shift(&ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
