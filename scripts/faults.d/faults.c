/*
 * Storage fault injection, preloaded into a process (LD_PRELOAD): makes chosen write and sync
 * calls fail the way the kernel reports a failing disk (EIO) or a full one (ENOSPC), without
 * performing them.
 *
 * REEL_FAULT (comma-separated rules):
 *   CALL:ERRNO:N     the N-th matching CALL fails with ERRNO, once
 *   CALL:ERRNO:N+    the N-th matching CALL and every later one fail
 *   CALL:ERRNO:@N[+] as above, counting only the calls made after another rule's failure
 *                    was injected (e.g. pwrite:EIO:4,fdatasync:EIO:@1+: a write fails, then
 *                    every sync after it — the salvage's own too)
 *   CALL is pwrite (pwrite and pwrite64), write, fdatasync, fsync, sync_file_range or
 *   fallocate (fallocate and fallocate64);
 *   ERRNO is EIO or ENOSPC, or SLOWms: the call is made, but only after ms milliseconds (a
 *   slow disk), e.g. pwrite:SLOW50:2+.
 * REEL_FAULT_PATH   only calls on files opened under this path prefix count (the library
 *                   follows open/openat/creat and close to know which descriptors those are);
 *                   without it every call counts.
 * REEL_FAULT_LOG    a file that gets one line per injected failure ("fdatasync #3 EIO PATH").
 * REEL_FAULT_TRACE  1: the log also gets a line per fdatasync or fsync that went ahead and
 *                   succeeded, with the file's length when it began ("fdatasync #2 ok 81920
 *                   PATH": at most those bytes are known to be on disk after it); those calls
 *                   are then counted even without a rule of theirs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum call { C_PWRITE, C_WRITE, C_FDATASYNC, C_FSYNC, C_SYNC_FILE_RANGE, C_FALLOCATE, C_COUNT };
static const char *call_names[C_COUNT] = { "pwrite", "write", "fdatasync", "fsync", "sync_file_range", "fallocate" };

#define MAX_RULES 16
struct rule { enum call call; int err; long delay_ms; long nth; int onward; int after_fault; long seen; };
static int fault_fired;
static struct rule rules[MAX_RULES];
static int nrules;
static long counters[C_COUNT];
static char prefix[PATH_MAX];
static size_t prefix_len;
static char log_path[PATH_MAX];
static int trace_syncs;

#define MAX_FDS 65536
static unsigned char tracked[MAX_FDS];
static char *paths[MAX_FDS];

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_fdatasync)(int);
static int (*real_fsync)(int);
static int (*real_sync_file_range)(int, off64_t, off64_t, unsigned int);
static int (*real_fallocate)(int, int, off_t, off_t);

static void parse(void) {
    const char *spec = getenv("REEL_FAULT");
    const char *p = getenv("REEL_FAULT_PATH");
    const char *l = getenv("REEL_FAULT_LOG");
    if (p && *p) {
        snprintf(prefix, sizeof prefix, "%s", p);
        prefix_len = strlen(prefix);
        while (prefix_len > 1 && prefix[prefix_len - 1] == '/') prefix[--prefix_len] = 0;
    }
    if (l && *l) snprintf(log_path, sizeof log_path, "%s", l);
    const char *t = getenv("REEL_FAULT_TRACE");
    trace_syncs = t && !strcmp(t, "1");
    if (!spec) return;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item && nrules < MAX_RULES; item = strtok_r(NULL, ",", &save)) {
        char name[32], err[16];
        long nth = 0;
        char plus = 0;
        int after = 1;
        int got = sscanf(item, "%31[a-z_0-9]:%15[A-Z0-9]:@%ld%c", name, err, &nth, &plus);
        if (got < 3) { after = 0; plus = 0; got = sscanf(item, "%31[a-z_0-9]:%15[A-Z0-9]:%ld%c", name, err, &nth, &plus); }
        if (got < 3 || nth < 1) { fprintf(stderr, "faults: bad rule '%s' (CALL:EIO|ENOSPC|SLOWms:[@]N[+])\n", item); _exit(64); }
        struct rule r = { .nth = nth, .onward = plus == '+', .after_fault = after };
        int found = 0;
        for (int c = 0; c < C_COUNT; c++) if (!strcmp(name, call_names[c])) { r.call = c; found = 1; }
        if (!strcmp(name, "pwrite64")) { r.call = C_PWRITE; found = 1; }
        if (!found) { fprintf(stderr, "faults: unknown call '%s'\n", name); _exit(64); }
        if (!strcmp(err, "EIO")) r.err = EIO;
        else if (!strcmp(err, "ENOSPC")) r.err = ENOSPC;
        else if (!strncmp(err, "SLOW", 4) && atol(err + 4) > 0) r.delay_ms = atol(err + 4);
        else { fprintf(stderr, "faults: unknown errno '%s' (EIO or ENOSPC)\n", err); _exit(64); }
        rules[nrules++] = r;
    }
}

__attribute__((constructor)) static void init(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_close = dlsym(RTLD_NEXT, "close");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_write = dlsym(RTLD_NEXT, "write");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_sync_file_range = dlsym(RTLD_NEXT, "sync_file_range");
    real_fallocate = dlsym(RTLD_NEXT, "fallocate");
    parse();
}

/* Absolute form of `path` as seen from `dirfd`, in `out`. */
static void absolute(int dirfd, const char *path, char *out, size_t size) {
    if (path[0] == '/') { snprintf(out, size, "%s", path); return; }
    char base[PATH_MAX] = "";
    if (dirfd == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) base[0] = 0;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        ssize_t n = readlink(link, base, sizeof base - 1);
        base[n > 0 ? n : 0] = 0;
    }
    snprintf(out, size, "%s/%s", base, path);
}

static void track(int fd, int dirfd, const char *path) {
    if (fd < 0 || fd >= MAX_FDS || !prefix_len || !path) return;
    char abs[PATH_MAX];
    absolute(dirfd, path, abs, sizeof abs);
    int under = !strncmp(abs, prefix, prefix_len) && (abs[prefix_len] == '/' || abs[prefix_len] == 0);
    char *old = __atomic_exchange_n(&paths[fd], under ? strdup(abs) : NULL, __ATOMIC_ACQ_REL);
    free(old);
    __atomic_store_n(&tracked[fd], (unsigned char)under, __ATOMIC_RELEASE);
}

/* Appends `line` to the log (best effort). */
static void log_line(const char *line, int len) {
    if (!log_path[0] || len <= 0) return;
    int lfd = real_open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (lfd < 0) return;
    if (real_write(lfd, line, (size_t)len) < 0) { /* the log is best effort */ }
    real_close(lfd);
}

/* Whether this call on `fd` fails, and with what errno (0: it goes ahead); `number` gets the
   call's number among those counted (0: not counted). */
static int fault_n(enum call c, int fd, long *number) {
    *number = 0;
    int traced = trace_syncs && (c == C_FDATASYNC || c == C_FSYNC);
    if (!nrules && !traced) return 0;
    if (prefix_len && (fd < 0 || fd >= MAX_FDS || !__atomic_load_n(&tracked[fd], __ATOMIC_ACQUIRE))) return 0;
    int relevant = traced;
    for (int i = 0; i < nrules; i++) if (rules[i].call == c) relevant = 1;
    if (!relevant) return 0;
    long n = __atomic_add_fetch(&counters[c], 1, __ATOMIC_ACQ_REL);
    *number = n;
    for (int i = 0; i < nrules; i++) {
        struct rule *r = &rules[i];
        if (r->call != c) continue;
        long k = n;
        if (r->after_fault) {
            if (!__atomic_load_n(&fault_fired, __ATOMIC_ACQUIRE)) continue;
            k = __atomic_add_fetch(&r->seen, 1, __ATOMIC_ACQ_REL);
        }
        if (!(k == r->nth || (r->onward && k > r->nth))) continue;
        if (r->delay_ms) {
            struct timespec t = { r->delay_ms / 1000, (r->delay_ms % 1000) * 1000000L };
            while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
            return 0;
        }
        char line[PATH_MAX + 64];
        const char *p = (fd >= 0 && fd < MAX_FDS && paths[fd]) ? paths[fd] : "";
        log_line(line, snprintf(line, sizeof line, "%s #%ld %s %s\n", call_names[c], n, r->err == EIO ? "EIO" : "ENOSPC", p));
        __atomic_store_n(&fault_fired, 1, __ATOMIC_RELEASE);
        return r->err;
    }
    return 0;
}

static int fault(enum call c, int fd) {
    long n;
    return fault_n(c, fd, &n);
}

/* The file's length now, for a traced sync numbered `n` (-1: not traced). */
static long long traced_length(int fd, long n) {
    if (!trace_syncs || n == 0) return -1;
    struct stat st;
    return fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
}

/* Logs a traced sync that succeeded. */
static void trace_ok(enum call c, int fd, long n, long long length, int result) {
    if (length < 0 || result != 0) return;
    char line[PATH_MAX + 64];
    const char *p = (fd >= 0 && fd < MAX_FDS && paths[fd]) ? paths[fd] : "";
    log_line(line, snprintf(line, sizeof line, "%s #%ld ok %lld %s\n", call_names[c], n, length, p));
}

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    int fd = real_open(path, flags, mode);
    track(fd, AT_FDCWD, path);
    return fd;
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    int fd = real_openat(dirfd, path, flags, mode);
    track(fd, dirfd, path);
    return fd;
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) { return open(path, flags); }
int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }
int __openat64_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }
int creat(const char *path, mode_t mode) { return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }
int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

int close(int fd) {
    if (fd >= 0 && fd < MAX_FDS && __atomic_load_n(&tracked[fd], __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&tracked[fd], 0, __ATOMIC_RELEASE);
        free(__atomic_exchange_n(&paths[fd], NULL, __ATOMIC_ACQ_REL));
    }
    return real_close(fd);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    int e = fault(C_PWRITE, fd);
    if (e) { errno = e; return -1; }
    return real_pwrite(fd, buf, count, offset);
}
ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) __attribute__((alias("pwrite")));

ssize_t write(int fd, const void *buf, size_t count) {
    int e = fault(C_WRITE, fd);
    if (e) { errno = e; return -1; }
    return real_write(fd, buf, count);
}

int fdatasync(int fd) {
    long n;
    int e = fault_n(C_FDATASYNC, fd, &n);
    if (e) { errno = e; return -1; }
    long long length = traced_length(fd, n);
    int r = real_fdatasync(fd);
    int saved = errno;
    trace_ok(C_FDATASYNC, fd, n, length, r);
    errno = saved;
    return r;
}

int fsync(int fd) {
    long n;
    int e = fault_n(C_FSYNC, fd, &n);
    if (e) { errno = e; return -1; }
    long long length = traced_length(fd, n);
    int r = real_fsync(fd);
    int saved = errno;
    trace_ok(C_FSYNC, fd, n, length, r);
    errno = saved;
    return r;
}

int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
    int e = fault(C_SYNC_FILE_RANGE, fd);
    if (e) { errno = e; return -1; }
    return real_sync_file_range(fd, offset, nbytes, flags);
}

int fallocate(int fd, int mode, off_t offset, off_t len) {
    int e = fault(C_FALLOCATE, fd);
    if (e) { errno = e; return -1; }
    return real_fallocate(fd, mode, offset, len);
}
int fallocate64(int fd, int mode, off_t offset, off_t len) __attribute__((alias("fallocate")));
