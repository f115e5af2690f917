/* Operating-system shims of the compiled reader: what Cython's posix.*
 * declarations do not cover, or spell differently per platform.
 *
 * Plain C, most of it run without the GIL: the open flags, openat2 with
 * RESOLVE_BENEATH where the kernel has it, readlinkat and O_NOFOLLOW,
 * nanosecond timestamps on Linux and macOS, and the lock of the state kept
 * between calls. */
#ifndef TOOLNEXUS_CAPREAD_OS_H
#define TOOLNEXUS_CAPREAD_OS_H

#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NOCTTY
#define O_NOCTTY 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif
/* O_PATH needs only search permission on the directory, as a path does. */
#ifdef O_PATH
#define TNX_DIR_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)
#else
#define TNX_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)
#endif
#define TNX_FILE_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* openat2 has one number on the Linux ABIs that lack the constant in
   older headers; the odd ones out keep the portable fallback. */
#if defined(__linux__) && !defined(SYS_openat2) && !defined(__alpha__) \
    && !defined(__mips__) && !defined(__ia64__)
#define SYS_openat2 437
#endif

static int tnx_openat2_beneath(int dirfd, const char *name, int extra) {
#if defined(__linux__) && defined(SYS_openat2)
    /* struct open_how; RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS */
    struct { unsigned long long flags, mode, resolve; } how;
    how.flags = TNX_FILE_FLAGS | extra;
    how.mode = 0;
    how.resolve = 0x08 | 0x02;
    return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
#else
    (void)dirfd; (void)name; (void)extra;
    errno = ENOSYS;
    return -1;
#endif
}

static void tnx_set_errno(int err) { errno = err; }

/* A change this recent may share its timestamps with the next one: the
 * kernel stamps files from a clock that ticks every 1-10 ms. */
#define RECENT_NS 100000000LL

static long long tnx_ns(struct timespec ts) {
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long tnx_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return tnx_ns(now);
}

/* st_mtim and st_ctim are st_mtimespec and st_ctimespec on macOS. */
#if defined(__APPLE__)
static long long tnx_mtime_ns(const struct stat *st) { return tnx_ns(st->st_mtimespec); }
static long long tnx_ctime_ns(const struct stat *st) { return tnx_ns(st->st_ctimespec); }
#else
static long long tnx_mtime_ns(const struct stat *st) { return tnx_ns(st->st_mtim); }
static long long tnx_ctime_ns(const struct stat *st) { return tnx_ns(st->st_ctim); }
#endif

/* The lock of the state the reader keeps between calls (a spare arena, the
 * last layout's heads). Every call takes and gives back that state with the
 * GIL held, so where there is a GIL it is the lock; a free-threaded build
 * has none, and takes this mutex instead. */
#ifdef Py_GIL_DISABLED
static PyMutex tnx_state_mutex = {0};
static void tnx_lock_state(void) { PyMutex_Lock(&tnx_state_mutex); }
static void tnx_unlock_state(void) { PyMutex_Unlock(&tnx_state_mutex); }
#else
static void tnx_lock_state(void) {}
static void tnx_unlock_state(void) {}
#endif

#endif /* TOOLNEXUS_CAPREAD_OS_H */
