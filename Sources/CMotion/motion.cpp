// See CMotion.h. Phase correlation (OpenCV's `phaseCorrelate`) on pictures shrunk by area
// averaging, with a Hann window so that the picture's edges do not dominate the spectrum.
#include "CMotion.h"
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

struct reel_motion {
    int width, height, shrink;
    cv::Mat window;    // Hann window at the shrunk size
    cv::Mat previous;  // the last picture given, shrunk, as 32-bit floats
    bool hasPrevious = false;
};

static void say(char *error, size_t size, const char *what) {
    if (error && size) { std::snprintf(error, size, "%s", what); }
}

static cv::Mat shrunk(const reel_motion *m, const uint8_t *gray, int stride) {
    cv::Mat in(m->height, m->width, CV_8UC1, const_cast<uint8_t *>(gray), (size_t)stride), small, out;
    if (m->shrink > 1) {
        cv::resize(in, small, cv::Size(m->width / m->shrink, m->height / m->shrink), 0, 0, cv::INTER_AREA);
    } else {
        small = in;
    }
    small.convertTo(out, CV_32F);
    return out;
}

extern "C" reel_motion *reel_motion_open(int width, int height, int shrink) {
    if (width <= 0 || height <= 0 || shrink < 1 || width / shrink < 8 || height / shrink < 8) return nullptr;
    try {
        std::unique_ptr<reel_motion> m(new reel_motion());
        m->width = width; m->height = height; m->shrink = shrink;
        cv::createHanningWindow(m->window, cv::Size(width / shrink, height / shrink), CV_32F);
        return m.release();
    } catch (...) {
        return nullptr;
    }
}

// Runs `body`, turning an OpenCV exception into -1 and its reason in `error`.
template <typename Body> static int guarded(char *error, size_t error_size, Body body) {
    try {
        body();
        return 0;
    } catch (const cv::Exception &e) {
        say(error, error_size, e.what());
    } catch (...) {
        say(error, error_size, "OpenCV failed");
    }
    return -1;
}

extern "C" int reel_motion_next(reel_motion *m, const uint8_t *gray, int stride, double *dx, double *dy, double *response,
                                char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        cv::Mat now = shrunk(m, gray, stride);
        *dx = 0; *dy = 0; *response = 0;
        if (m->hasPrevious) {
            double r = 0;
            cv::Point2d p = cv::phaseCorrelate(m->previous, now, m->window, &r);
            *dx = p.x * m->shrink; *dy = p.y * m->shrink; *response = r;
        }
        m->previous = now;
        m->hasPrevious = true;
    });
}

extern "C" void reel_motion_close(reel_motion *m) { delete m; }
