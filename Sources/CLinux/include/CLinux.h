// Linux constants and calls Swift cannot import directly. Every symbol is prefixed `CLinux_`.
#ifndef REEL_CLINUX_H
#define REEL_CLINUX_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/videodev2.h>

extern const int CLinux_O_DIRECT;
extern const unsigned int CLinux_RENAME_NOREPLACE;

/// renameat2(2); returns -1 and sets errno on failure.
int CLinux_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
/// fallocate(2) with mode 0; returns -1 and sets errno on failure.
int CLinux_fallocate(int fd, int64_t offset, int64_t length);
/// fcntl(F_SETLEASE, F_WRLCK): granted only when no other descriptor has the file open; an
/// open by anyone else then waits until the lease is given up (close). 0, or -1 and errno.
int CLinux_take_write_lease(int fd);
/// fallocate(2) with FALLOC_FL_ZERO_RANGE: the range reads as zeros and stays allocated
/// (unwritten extents), without writing it; -1 and errno (EOPNOTSUPP) where unsupported.
int CLinux_zero_range(int fd, int64_t offset, int64_t length);

/// sync_file_range(2) with SYNC_FILE_RANGE_WRITE: start writeback of a range, do not wait.
int CLinux_start_writeback(int fd, int64_t offset, int64_t length);
/// posix_fadvise(POSIX_FADV_DONTNEED): drop a written range from the page cache.
int CLinux_drop_cache(int fd, int64_t offset, int64_t length);
/// ioprio_set(IOPRIO_WHO_PROCESS, 0, class/level) for the calling thread.
int CLinux_set_io_priority(int ioClass, int level);
/// The filesystem type name of the filesystem holding `fd` ("ext4", "xfs", "tmpfs", …).
const char *CLinux_filesystem_name(int fd);

/// copy_file_range(2) of `length` bytes from `in` at `inOffset` to `out` at `outOffset`;
/// returns bytes copied or -1 with errno.
int64_t CLinux_copy_range(int in, int64_t inOffset, int out, int64_t outOffset, int64_t length);

/// ioctl(2) with a pointer argument, retried on EINTR (ioctl is variadic: Swift cannot call it).
int CLinux_ioctl(int fd, unsigned long request, void *arg);

/// V4L2 request codes (function-like macros in videodev2.h).
extern const unsigned long CLinux_VIDIOC_QUERYCAP;
extern const unsigned long CLinux_VIDIOC_ENUM_FMT;
extern const unsigned long CLinux_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long CLinux_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long CLinux_VIDIOC_G_FMT;
extern const unsigned long CLinux_VIDIOC_S_FMT;
extern const unsigned long CLinux_VIDIOC_G_PARM;
extern const unsigned long CLinux_VIDIOC_S_PARM;
extern const unsigned long CLinux_VIDIOC_REQBUFS;
extern const unsigned long CLinux_VIDIOC_QUERYBUF;
extern const unsigned long CLinux_VIDIOC_QBUF;
extern const unsigned long CLinux_VIDIOC_DQBUF;
extern const unsigned long CLinux_VIDIOC_STREAMON;
extern const unsigned long CLinux_VIDIOC_STREAMOFF;
extern const uint32_t CLinux_V4L2_PIX_FMT_YUYV;
extern const uint32_t CLinux_V4L2_PIX_FMT_NV12;
extern const uint32_t CLinux_V4L2_PIX_FMT_MJPEG;
/// Controls (exposure bias on a camera): VIDIOC_QUERYCTRL, VIDIOC_G_CTRL, VIDIOC_S_CTRL and the
/// control ids Reel looks for.
extern const unsigned long CLinux_VIDIOC_QUERYCTRL;
extern const unsigned long CLinux_VIDIOC_G_CTRL;
extern const unsigned long CLinux_VIDIOC_S_CTRL;
extern const uint32_t CLinux_V4L2_CID_BRIGHTNESS;
extern const uint32_t CLinux_V4L2_CID_EXPOSURE_AUTO;
extern const uint32_t CLinux_V4L2_CID_EXPOSURE_ABSOLUTE;
extern const int32_t CLinux_V4L2_EXPOSURE_MANUAL;

/// Names the calling thread (pthread_setname_np; at most 15 bytes, as /proc/PID/task/*/comm
/// shows it). Returns 0 or an errno value.
int CLinux_name_this_thread(const char *name);
/// Starts `path` with `argv` (NULL-terminated) as a detached process in a session of its own,
/// its stdin, stdout and stderr /dev/null and no other descriptor inherited; this process keeps
/// no child for it (an intermediate child forks it and exits). Returns its pid, or -1 and errno.
pid_t CLinux_spawn_detached(const char *path, char *const argv[]);

/// The uid of the process at the other end of the UNIX socket `fd` (getsockopt SO_PEERCRED:
/// `struct ucred` needs _GNU_SOURCE, which Swift's Glibc lacks). Returns 0, or -1 with errno.
int CLinux_peer_uid(int fd, uint32_t *uid);

/// glibc's allocator: mallopt(M_MMAP_THRESHOLD, threshold) then mallopt(M_ARENA_MAX, arenas)
/// (<malloc.h>, which Swift's Glibc lacks). Returns 1 when both were set, 0 when the first
/// failed, -1 when the second failed.
int CLinux_tune_malloc(int threshold, int arenas);
/// Faults in `length` bytes from `start` writable, their bytes unchanged
/// (madvise(MADV_POPULATE_WRITE), or a write of each page's first byte back before Linux
/// 5.14); 0, or -1 and errno.
int CLinux_populate_write(void *start, size_t length);
/// malloc_trim(0): gives the free pages inside every arena back to the kernel; 1 when some were.
int CLinux_trim_malloc(void);

#endif
