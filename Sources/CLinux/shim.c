#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CLinux.h"

const int CLinux_O_DIRECT = O_DIRECT;
const unsigned int CLinux_RENAME_NOREPLACE = 1; /* RENAME_NOREPLACE from linux/fs.h */

int CLinux_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

int CLinux_fallocate(int fd, int64_t offset, int64_t length) {
    return fallocate(fd, 0, (off_t)offset, (off_t)length);
}
