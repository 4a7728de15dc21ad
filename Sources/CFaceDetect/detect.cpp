// OpenCV's cascade face detectors behind the C API of CFaceDetect.h.
#include "CFaceDetect.h"
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>
#include <cstdio>
#include <exception>
#include <vector>

struct reel_face_detector {
    cv::CascadeClassifier frontal;
    cv::CascadeClassifier profile;
    bool hasProfile = false;
};

static void say(char *error, size_t size, const char *what) {
    if (error && size) std::snprintf(error, size, "%s", what);
}

extern "C" reel_face_detector *reel_face_detector_open(const char *frontal, const char *profile, char *error, size_t error_size) {
    try {
        // One thread: detection runs beside capture and encoding, never across every core.
        cv::setNumThreads(1);
        auto *d = new reel_face_detector();
        if (!d->frontal.load(frontal)) {
            say(error, error_size, "cannot load the frontal face cascade");
            delete d;
            return nullptr;
        }
        if (profile) {
            if (!d->profile.load(profile)) {
                say(error, error_size, "cannot load the profile face cascade");
                delete d;
                return nullptr;
            }
            d->hasProfile = true;
        }
        return d;
    } catch (const std::exception &e) {
        say(error, error_size, e.what());
        return nullptr;
    }
}

extern "C" int reel_face_detect(reel_face_detector *d, const uint8_t *gray, int width, int height, int stride,
                                const reel_face_search *search, reel_face *out, int capacity, char *error, size_t error_size) {
    try {
        int shrink = search->shrink < 1 ? 1 : search->shrink;
        cv::Mat full(height, width, CV_8UC1, const_cast<uint8_t *>(gray), (size_t)stride);
        cv::Mat small;
        if (shrink > 1) cv::resize(full, small, cv::Size(width / shrink, height / shrink), 0, 0, cv::INTER_AREA);
        else small = full;
        cv::Mat eq;
        cv::equalizeHist(small, eq);
        int minSide = search->min_size / shrink;
        if (minSide < 20) minSide = 20;
        int maxSide = search->max_size / shrink;
        if (maxSide < minSide) maxSide = minSide;
        cv::Size lo(minSide, minSide), hi(maxSide, maxSide);
        std::vector<cv::Rect> frontal;
        std::vector<int> frontalEvidence;
        d->frontal.detectMultiScale(eq, frontal, frontalEvidence, search->scale_factor, search->min_neighbors, 0, lo, hi);
        std::vector<reel_face> found;
        for (size_t i = 0; i < frontal.size(); i++)
            found.push_back({frontal[i].x, frontal[i].y, frontal[i].width, frontal[i].height, 0, frontalEvidence[i]});
        if (d->hasProfile && search->profiles) {
            // The profile cascade, on a picture shrunk by its own factor (it costs several
            // times the frontal one), knows faces looking one way: run it on the mirror too.
            int pshrink = search->profile_shrink < 1 ? shrink : search->profile_shrink;
            cv::Mat peq;
            if (pshrink == shrink) peq = eq;
            else {
                cv::Mat psmall;
                cv::resize(full, psmall, cv::Size(width / pshrink, height / pshrink), 0, 0, cv::INTER_AREA);
                cv::equalizeHist(psmall, peq);
            }
            int pmin = (search->profile_min_size > 0 ? search->profile_min_size : search->min_size) / pshrink;
            if (pmin < 20) pmin = 20;
            int pmax = search->max_size / pshrink;
            if (pmax < pmin) pmax = pmin;
            // Boxes of the profile picture in the frontal picture's pixels.
            double back = (double)pshrink / shrink;
            for (int flip = 0; flip < 2; flip++) {
                cv::Mat pic;
                if (flip) cv::flip(peq, pic, 1); else pic = peq;
                std::vector<cv::Rect> side;
                std::vector<int> evidence;
                d->profile.detectMultiScale(pic, side, evidence, search->scale_factor, search->min_neighbors, 0,
                                            cv::Size(pmin, pmin), cv::Size(pmax, pmax));
                for (size_t i = 0; i < side.size(); i++) {
                    cv::Rect q = side[i];
                    if (flip) q.x = pic.cols - q.x - q.width;
                    cv::Rect r((int)(q.x * back), (int)(q.y * back), (int)(q.width * back), (int)(q.height * back));
                    // A face both cascades found is the frontal one.
                    bool seen = false;
                    for (auto &f : found) {
                        cv::Rect a(f.x, f.y, f.width, f.height);
                        double both = (a & r).area();
                        if (both > 0.3 * std::min(a.area(), r.area())) { seen = true; break; }
                    }
                    if (!seen) found.push_back({r.x, r.y, r.width, r.height, 1, evidence[i]});
                }
            }
        }
        int n = 0;
        for (auto &f : found) {
            if (n < capacity) {
                out[n] = {f.x * shrink, f.y * shrink, f.width * shrink, f.height * shrink, f.profile, f.evidence};
            }
            n++;
        }
        return n;
    } catch (const std::exception &e) {
        say(error, error_size, e.what());
        return -1;
    }
}

extern "C" void reel_face_detector_close(reel_face_detector *d) { delete d; }
