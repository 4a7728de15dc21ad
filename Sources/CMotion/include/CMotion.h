// A small C shim over OpenCV's global-motion estimate (phase correlation, `cv::phaseCorrelate`
// in Debian's libopencv-imgproc): how far the whole picture moved from one frame to the next.
// Swift cannot call OpenCV's C++ API, so this file is the whole of what Reel uses of it.
#ifndef REEL_CMOTION_H
#define REEL_CMOTION_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct reel_motion reel_motion;

/// An estimator for grey pictures of `width` x `height`, shrunk by `shrink` (1, 2, 4…; area
/// averaging) before they are compared. NULL when memory runs out.
reel_motion *reel_motion_open(int width, int height, int shrink);

/// The motion of the picture since the last one given (`width` x `height` 8-bit samples, rows
/// `stride` bytes apart): where its content moved, in the picture's own pixels (sub-pixel;
/// positive: right and down), and the correlation peak's strength (0…1; below about 0.05 the
/// estimate is noise). The first picture gives 0, 0 and 0. Returns 0, or -1 when OpenCV
/// failed (the reason in `error`, at most `error_size` bytes, NUL-terminated).
int reel_motion_next(reel_motion *m, const uint8_t *gray, int stride, double *dx, double *dy, double *response,
                     char *error, size_t error_size);

/// Frees the estimator.
void reel_motion_close(reel_motion *m);

#ifdef __cplusplus
}
#endif
#endif
