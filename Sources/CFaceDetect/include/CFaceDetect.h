// A small C face-detection shim over OpenCV's cascade classifiers (Debian's
// libopencv-objdetect-dev; the cascades come from opencv-data): Swift cannot call OpenCV's
// C++ API, so this file is the whole of what Reel uses of it.
#ifndef REEL_CFACEDETECT_H
#define REEL_CFACEDETECT_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/// One face found: its box in the input picture's pixels, and which cascade found it.
typedef struct {
    int x, y, width, height;
    /// 0: the frontal cascade; 1: the profile cascade (a face looking left or right).
    int profile;
    /// Neighbouring detections merged into this one (OpenCV's `minNeighbors` evidence).
    int evidence;
} reel_face;

typedef struct reel_face_detector reel_face_detector;

/// Loads `frontal` (a cascade file) and, when `profile` is not NULL, a profile cascade.
/// NULL on failure, with the reason in `error` (at most `error_size` bytes, NUL-terminated).
reel_face_detector *reel_face_detector_open(const char *frontal, const char *profile, char *error, size_t error_size);

/// How a search goes: OpenCV's `detectMultiScale` parameters.
typedef struct {
    /// The picture is shrunk by this first (1, 2, 3…; area averaging), then histogram-equalised.
    int shrink;
    /// Faces smaller or larger than these (in the picture's own pixels) are not looked for.
    int min_size, max_size;
    /// Step between the scales searched (1.1: 10 %).
    double scale_factor;
    /// Raw detections a face needs around it to be kept.
    int min_neighbors;
    /// Whether to run the profile cascade too (when loaded).
    int profiles;
    /// The profile cascade searches the picture shrunk by this (0: by `shrink`), for faces of
    /// `profile_min_size` (0: `min_size`) up to `max_size`.
    int profile_shrink, profile_min_size;
} reel_face_search;

/// Finds faces in an 8-bit grey picture (`width` x `height`, rows `stride` bytes apart) as
/// `search` says. Writes at most
/// `capacity` faces to `out` (in the picture's own pixels) and returns how many it found
/// (which may exceed `capacity`), or -1 when OpenCV failed (the reason in `error`).
int reel_face_detect(reel_face_detector *detector, const uint8_t *gray, int width, int height, int stride,
                     const reel_face_search *search, reel_face *out, int capacity, char *error, size_t error_size);

/// Frees the detector.
void reel_face_detector_close(reel_face_detector *detector);

#ifdef __cplusplus
}
#endif
#endif
