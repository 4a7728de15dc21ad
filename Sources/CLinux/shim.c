#define _GNU_SOURCE
#include <malloc.h>
#include <sys/mman.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/vfs.h>
#include <sys/ioctl.h>
#include <errno.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "CLinux.h"

const int CLinux_O_DIRECT = O_DIRECT;
const unsigned int CLinux_RENAME_NOREPLACE = 1; /* RENAME_NOREPLACE from linux/fs.h */

int CLinux_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

int CLinux_fallocate(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, 0, (off_t)offset, (off_t)length);
}

int CLinux_take_write_lease(int fd) {
    return fcntl(fd, F_SETLEASE, F_WRLCK);
}

int CLinux_zero_range(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, FALLOC_FL_ZERO_RANGE, (off_t)offset, (off_t)length);
}

int CLinux_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
}

int CLinux_drop_cache(int fd, int64_t offset, int64_t length) {
    int r = posix_fadvise(fd, (off_t)offset, (off_t)length, POSIX_FADV_DONTNEED);
    return r == 0 ? 0 : -1;
}

int CLinux_set_io_priority(int ioClass, int level) {
    /* IOPRIO_PRIO_VALUE(class, data) = class << 13 | data; IOPRIO_WHO_PROCESS = 1 */
    return (int)syscall(SYS_ioprio_set, 1, 0, (ioClass << 13) | level);
}

const char *CLinux_filesystem_name(int fd) {
    struct statfs s;
    if (fstatfs(fd, &s) != 0) return "unknown";
    switch ((unsigned long)s.f_type) {
    case EXT4_SUPER_MAGIC: return "ext4";  /* ext2/3/4 share the magic */
    case 0x58465342: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case TMPFS_MAGIC: return "tmpfs";
    case RAMFS_MAGIC: return "ramfs";
    case 0x794c7630: return "overlayfs";
    case 0x6969: return "nfs";
    case 0xf2f52010: return "f2fs";
    default: return "other";
    }
}

int64_t CLinux_copy_range(int in, int64_t inOffset, int out, int64_t outOffset, int64_t length) {
    off_t a = (off_t)inOffset, b = (off_t)outOffset;
    return (int64_t)copy_file_range(in, &a, out, &b, (size_t)length, 0);
}

int CLinux_ioctl(int fd, unsigned long request, void *arg) {
    int r;
    do { r = ioctl(fd, request, arg); } while (r == -1 && errno == EINTR);
    return r;
}

_Static_assert(sizeof(struct v4l2_buffer) == 88, "v4l2_buffer layout (64-bit) as Swift imports it");
const unsigned long CLinux_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long CLinux_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long CLinux_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long CLinux_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long CLinux_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long CLinux_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long CLinux_VIDIOC_G_PARM = VIDIOC_G_PARM;
const unsigned long CLinux_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long CLinux_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long CLinux_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long CLinux_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long CLinux_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long CLinux_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long CLinux_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
const uint32_t CLinux_V4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
const uint32_t CLinux_V4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
const uint32_t CLinux_V4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
const unsigned long CLinux_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
const unsigned long CLinux_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
const unsigned long CLinux_VIDIOC_S_CTRL = VIDIOC_S_CTRL;
const uint32_t CLinux_V4L2_CID_BRIGHTNESS = V4L2_CID_BRIGHTNESS;
const uint32_t CLinux_V4L2_CID_EXPOSURE_AUTO = V4L2_CID_EXPOSURE_AUTO;
const uint32_t CLinux_V4L2_CID_EXPOSURE_ABSOLUTE = V4L2_CID_EXPOSURE_ABSOLUTE;
const int32_t CLinux_V4L2_EXPOSURE_MANUAL = V4L2_EXPOSURE_MANUAL;

int CLinux_name_this_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

int CLinux_peer_uid(int fd, uint32_t *uid) {
    struct ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    *uid = cred.uid;
    return 0;
}

int CLinux_populate_write(void *start, size_t length) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    uintptr_t from = (uintptr_t)start & ~((uintptr_t)page - 1);
    uintptr_t to = ((uintptr_t)start + length + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (madvise((void *)from, to - from, MADV_POPULATE_WRITE) == 0) return 0;
    if (errno != EINVAL) return -1;
    /* Before Linux 5.14: write each page's first byte back, unchanged. */
    for (uintptr_t p = (uintptr_t)start; p < (uintptr_t)start + length; p = (p & ~((uintptr_t)page - 1)) + (uintptr_t)page) {
        volatile unsigned char *b = (volatile unsigned char *)p;
        *b = *b;
    }
    return 0;
}

int CLinux_trim_malloc(void) {
    return malloc_trim(0);
}

int CLinux_tune_malloc(int threshold, int arenas) {
    if (mallopt(M_MMAP_THRESHOLD, threshold) != 1) return 0;
    if (mallopt(M_ARENA_MAX, arenas) != 1) return -1;
    return 1;
}

/* Starts `path` with `argv` as a detached process: a child starts a new session, forks the
 * worker and exits at once, so the worker is re-parented (to init or a subreaper) and this
 * process keeps no child, no descriptor and no thread for it. Between fork and exec only
 * async-signal-safe calls are made (this process has threads). The worker's stdin, stdout
 * and stderr are /dev/null, and no other descriptor is inherited. Returns the worker's pid,
 * or -1 with errno set (fork, pipe or waitpid failed; ECHILD when the child failed before
 * the worker existed). An exec failure shows as a worker that exits at once with 127. */
pid_t CLinux_spawn_detached(const char *path, char *const argv[]) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    pid_t child = fork();
    if (child < 0) { int e = errno; close(report[0]); close(report[1]); errno = e; return -1; }
    if (child == 0) {
        close(report[0]);
        if (setsid() < 0) _exit(1);
        pid_t worker = fork();
        if (worker < 0) _exit(1);
        if (worker == 0) {
            int null = open("/dev/null", O_RDWR);
            if (null < 0) _exit(127);
            if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(127);
            /* Every other descriptor (the report pipe too) is closed. */
            if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
                for (int fd = 3; fd < 65536; fd++) close(fd);
            }
            execv(path, argv);
            _exit(127);
        }
        ssize_t n = write(report[1], &worker, sizeof worker);
        _exit(n == (ssize_t)sizeof worker ? 0 : 1);
    }
    close(report[1]);
    pid_t worker = -1;
    ssize_t n;
    do { n = read(report[0], &worker, sizeof worker); } while (n < 0 && errno == EINTR);
    int readErrno = errno;
    close(report[0]);
    int status = 0;
    pid_t waited;
    do { waited = waitpid(child, &status, 0); } while (waited < 0 && errno == EINTR);
    if (waited < 0) return -1;
    if (n != (ssize_t)sizeof worker) { errno = n < 0 ? readErrno : ECHILD; return -1; }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { errno = ECHILD; return -1; }
    return worker;
}
