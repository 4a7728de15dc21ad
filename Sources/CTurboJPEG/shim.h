// libjpeg-turbo's TurboJPEG API (Debian's libturbojpeg0-dev) for the preview's JPEG frames.
#ifndef REEL_CTURBOJPEG_H
#define REEL_CTURBOJPEG_H
#include <turbojpeg.h>
#endif
