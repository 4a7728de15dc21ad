// Linux constants and calls Swift cannot import directly. Every symbol is prefixed `CLinux_`.
#ifndef REEL_CLINUX_H
#define REEL_CLINUX_H
#include <stdint.h>

extern const int CLinux_O_DIRECT;
extern const unsigned int CLinux_RENAME_NOREPLACE;

/// renameat2(2); returns -1 and sets errno on failure.
int CLinux_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
/// fallocate(2) with mode 0; returns -1 and sets errno on failure.
int CLinux_fallocate(int fd, int64_t offset, int64_t length);

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

#endif
