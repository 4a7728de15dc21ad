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

#endif
