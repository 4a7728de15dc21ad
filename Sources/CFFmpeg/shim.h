// What Swift cannot import from the libav headers: function-like macros and
// constants built from them. Every symbol here is prefixed `reel_`.
#ifndef REEL_CFFMPEG_SHIM_H
#define REEL_CFFMPEG_SHIM_H

#include <errno.h>
#include <string.h>
#include <math.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/error.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libswscale/swscale.h>

static inline int reel_averror(int posixErrno) { return AVERROR(posixErrno); }
static inline int reel_averror_eof(void) { return AVERROR_EOF; }
static inline int reel_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int64_t reel_nopts(void) { return AV_NOPTS_VALUE; }
static inline int reel_avseek_size(void) { return AVSEEK_SIZE; }
static inline int reel_error_max_string_size(void) { return AV_ERROR_MAX_STRING_SIZE; }
static inline AVRational reel_time_base_q(void) { return AV_TIME_BASE_Q; }


// AVFrame.data and .linesize are C arrays, which Swift sees as tuples.
static inline uint8_t *reel_frame_data(const AVFrame *f, int plane) { return f->data[plane]; }
static inline int reel_frame_linesize(const AVFrame *f, int plane) { return f->linesize[plane]; }

/// The largest reference count of the frame's buffers: 1 when nobody but the owner holds it.
static inline int reel_frame_max_refcount(const AVFrame *f) {
    int most = 0;
    for (int i = 0; i < AV_NUM_DATA_POINTERS; i++) {
        if (f->buf[i]) { int c = av_buffer_get_ref_count(f->buf[i]); if (c > most) most = c; }
    }
    return most;
}

/// sws_scale over whole frames (the slice arrays are C arrays in AVFrame).
static inline int reel_sws_scale_frame(struct SwsContext *c, const AVFrame *src, AVFrame *dst) {
    return sws_scale(c, (const uint8_t *const *)src->data, src->linesize, 0, src->height, dst->data, dst->linesize);
}

static inline int reel_pix_fmt_depth(enum AVPixelFormat f) {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f);
    return d ? d->comp[0].depth : 0;
}

/// 1 when `f` is planar YUV with its chroma in planes 1 and 2 (yuv420p, yuv422p10le, …), with
/// the chroma planes' horizontal and vertical subsampling shifts; 0 otherwise (grey, RGB,
/// semi-planar, packed).
static inline int reel_pix_fmt_planar_yuv(enum AVPixelFormat f, int *shift_x, int *shift_y) {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f);
    if (!d || d->nb_components < 3 || (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL)) || !(d->flags & AV_PIX_FMT_FLAG_PLANAR)
        || d->comp[0].plane != 0 || d->comp[1].plane != 1 || d->comp[2].plane != 2 || d->comp[1].depth != d->comp[0].depth) return 0;
    *shift_x = d->log2_chroma_w; *shift_y = d->log2_chroma_h;
    return 1;
}

/// Copies a packed (YUYV) or semi-planar (NV12) camera image whose rows are `bytes_per_line`
/// apart into `dst` (same format and size).
static inline int reel_copy_camera_image(AVFrame *dst, const uint8_t *src, int bytes_per_line, size_t src_size) {
    const uint8_t *planes[4] = { src, NULL, NULL, NULL };
    int lines[4] = { bytes_per_line, 0, 0, 0 };
    if (dst->format == AV_PIX_FMT_NV12) {
        if (src_size < (size_t)bytes_per_line * dst->height * 3 / 2) return AVERROR(EINVAL);
        planes[1] = src + (size_t)bytes_per_line * dst->height; lines[1] = bytes_per_line;
    } else if (src_size < (size_t)bytes_per_line * dst->height) {
        return AVERROR(EINVAL);
    }
    av_image_copy(dst->data, dst->linesize, planes, lines, (enum AVPixelFormat)dst->format, dst->width, dst->height);
    return 0;
}

static inline void reel_set_hvc1_tag(AVCodecParameters *p) { p->codec_tag = MKTAG('h', 'v', 'c', '1'); }

/* Appends a chapter to a muxer's (or demuxer's) list, as libavformat's own
 * avpriv_new_chapter does (av_mallocz, av_dynarray_add_nofree); avformat_free_context frees it.
 * Returns 0 or a negative AVERROR. */
static inline int reel_add_chapter(AVFormatContext *s, int64_t id, AVRational time_base, int64_t start, int64_t end, const char *title) {
    AVChapter *c = (AVChapter *)av_mallocz(sizeof *c);
    if (!c) return AVERROR(ENOMEM);
    c->id = id;
    c->time_base = time_base;
    c->start = start;
    c->end = end;
    int r = title ? av_dict_set(&c->metadata, "title", title, 0) : 0;
    if (r >= 0) r = av_dynarray_add_nofree(&s->chapters, (int *)&s->nb_chapters, c);
    if (r < 0) { av_dict_free(&c->metadata); av_free(c); }
    return r < 0 ? r : 0;
}


/// The encoder's first sample format (`AVCodec.sample_fmts[0]`; S16 when it lists none).
static inline enum AVSampleFormat reel_first_sample_format(const AVCodec *c) {
    return c->sample_fmts ? c->sample_fmts[0] : AV_SAMPLE_FMT_S16;
}

/// Fills an allocated audio frame from 16-bit interleaved samples, in the frame's format
/// (S16, S16P, FLT, FLTP: what the pcm, aac and libopus encoders take).
static inline void reel_fill_audio_frame(AVFrame *f, const int16_t *src, int frames, int channels) {
    switch (f->format) {
    case AV_SAMPLE_FMT_S16:
        memcpy(f->data[0], src, (size_t)frames * channels * sizeof(int16_t));
        break;
    case AV_SAMPLE_FMT_S16P:
        for (int c = 0; c < channels; c++)
            for (int i = 0; i < frames; i++) ((int16_t *)f->extended_data[c])[i] = src[i * channels + c];
        break;
    case AV_SAMPLE_FMT_FLT:
        for (int i = 0; i < frames * channels; i++) ((float *)f->data[0])[i] = src[i] / 32768.0f;
        break;
    case AV_SAMPLE_FMT_FLTP:
        for (int c = 0; c < channels; c++)
            for (int i = 0; i < frames; i++) ((float *)f->extended_data[c])[i] = src[i * channels + c] / 32768.0f;
        break;
    default:
        break;
    }
}

/// Copies a decoded audio frame into 16-bit interleaved samples (S16, S16P, S32, S32P, FLT,
/// FLTP, DBL, DBLP decoders' output); returns the samples written, 0 for another format.
static inline int reel_read_audio_frame(const AVFrame *f, int16_t *dst, int channels) {
    int n = f->nb_samples;
    enum AVSampleFormat fmt = (enum AVSampleFormat)f->format;
    int planar = av_sample_fmt_is_planar(fmt);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < channels; c++) {
            const uint8_t *base = planar ? f->extended_data[c] : f->extended_data[0];
            int at = planar ? i : i * channels + c;
            double v;
            switch (av_get_packed_sample_fmt(fmt)) {
            case AV_SAMPLE_FMT_S16: v = ((const int16_t *)base)[at] / 32768.0; break;
            case AV_SAMPLE_FMT_S32: v = ((const int32_t *)base)[at] / 2147483648.0; break;
            case AV_SAMPLE_FMT_FLT: v = ((const float *)base)[at]; break;
            case AV_SAMPLE_FMT_DBL: v = ((const double *)base)[at]; break;
            default: return 0;
            }
            double s = v * 32768.0;
            if (s > 32767) s = 32767;
            if (s < -32768) s = -32768;
            dst[i * channels + c] = (int16_t)lrint(s);
        }
    }
    return n * channels;
}
#endif
