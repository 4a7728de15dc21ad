// What Swift cannot import from the libav headers: function-like macros and
// constants built from them. Every symbol here is prefixed `reel_`.
#ifndef REEL_CFFMPEG_SHIM_H
#define REEL_CFFMPEG_SHIM_H

#include <errno.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/error.h>
#include <libavutil/dict.h>
#include <libswscale/swscale.h>

static inline int reel_averror(int posixErrno) { return AVERROR(posixErrno); }
static inline int reel_averror_eof(void) { return AVERROR_EOF; }
static inline int reel_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int64_t reel_nopts(void) { return AV_NOPTS_VALUE; }
static inline int reel_avseek_size(void) { return AVSEEK_SIZE; }
static inline int reel_error_max_string_size(void) { return AV_ERROR_MAX_STRING_SIZE; }
static inline AVRational reel_time_base_q(void) { return AV_TIME_BASE_Q; }

#endif
