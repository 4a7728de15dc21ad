/*
 * A userspace emulation of a V4L2 capture device, preloaded into a process (LD_PRELOAD) so
 * that /dev/videoN exists where no camera does. It answers the calls a V4L2 program makes —
 * open/openat, close, ioctl, mmap/munmap, read — with the kernel's structs (linux/videodev2.h)
 * and error codes; poll/select work natively because the device fd is an eventfd that becomes
 * readable when a buffer is done.
 *
 * Formats: YUYV and NV12 at 1280x720, 640x480 and 1080x1080, MJPEG at 1280x720 (encoded with
 * libavcodec). Each frame carries the same frame-index barcode as Reel's synthetic sensor:
 * 24-bit index + CRC-8 (poly 0x07, init 0xFF), 8x4 cells of 32 px, centred.
 *
 * FAKE_V4L2 (comma-separated):
 *   devices=N        how many /dev/videoN appear (default 1)
 *   fps=N            frame rate (default 30)
 *   unplug=N         after N frames the device is gone: DQBUF fails with ENODEV
 *   eio=N            after N frames DQBUF fails with EIO
 *   skip=K:N         every K-th frame, skip N sequence numbers (frames the "sensor" lost)
 *   slow=K:MS        every K-th frame arrives MS milliseconds late
 *   busy             open() fails with EBUSY
 *   card=TEXT        the card name
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/videodev2.h>
#include <libavcodec/avcodec.h>

#define MAX_DEVICES 4
#define MAX_BUFFERS 32

struct size { uint32_t w, h; };
static const struct size yuv_sizes[] = { {1280, 720}, {640, 480}, {1080, 1080} };
static const struct size mjpeg_sizes[] = { {1280, 720} };
static const uint32_t formats[] = { V4L2_PIX_FMT_YUYV, V4L2_PIX_FMT_NV12, V4L2_PIX_FMT_MJPEG };

struct buffer { void *mem; size_t length; int queued, done; struct v4l2_buffer info; };

struct device {
    int open, fd, index;
    uint32_t fourcc, width, height, fps;
    struct buffer bufs[MAX_BUFFERS];
    uint32_t nbufs;
    int streaming;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t frame;     /* frames produced by the "sensor" */
    uint32_t sequence;
    int gone;           /* errno DQBUF reports from now on */
    uint64_t done_order[MAX_BUFFERS]; int ndone;
    AVCodecContext *jpeg; AVFrame *jframe; AVPacket *jpkt;
};

static struct device devs[MAX_DEVICES];
static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER;
static int opt_devices = 1, opt_fps = 30, opt_busy = 0;
static long opt_unplug = -1, opt_eio = -1, opt_skip_every = 0, opt_skip_n = 0, opt_slow_every = 0, opt_slow_ms = 0;
static char opt_card[32] = "Reel fake camera";
static int configured = 0;

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static ssize_t (*real_read)(int, void *, size_t);

static void configure(void) {
    if (configured) return;
    configured = 1;
    real_open = dlsym(RTLD_NEXT, "open");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_close = dlsym(RTLD_NEXT, "close");
    real_ioctl = dlsym(RTLD_NEXT, "ioctl");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    real_read = dlsym(RTLD_NEXT, "read");
    const char *env = getenv("FAKE_V4L2");
    if (!env) return;
    char *copy = strdup(env), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (sscanf(t, "devices=%d", &opt_devices) == 1) continue;
        if (sscanf(t, "fps=%d", &opt_fps) == 1) continue;
        if (sscanf(t, "unplug=%ld", &opt_unplug) == 1) continue;
        if (sscanf(t, "eio=%ld", &opt_eio) == 1) continue;
        if (sscanf(t, "skip=%ld:%ld", &opt_skip_every, &opt_skip_n) == 2) continue;
        if (sscanf(t, "slow=%ld:%ld", &opt_slow_every, &opt_slow_ms) == 2) continue;
        if (strcmp(t, "busy") == 0) { opt_busy = 1; continue; }
        if (strncmp(t, "card=", 5) == 0) { snprintf(opt_card, sizeof opt_card, "%s", t + 5); continue; }
    }
    free(copy);
    if (opt_devices < 0) opt_devices = 0;
    if (opt_devices > MAX_DEVICES) opt_devices = MAX_DEVICES;
    if (opt_fps <= 0) opt_fps = 30;
}

static int device_number(const char *path) {
    int n;
    char tail;
    if (path && sscanf(path, "/dev/video%d%c", &n, &tail) == 1 && n >= 0 && n < opt_devices) return n;
    return -1;
}

static struct device *device_for(int fd) {
    if (fd < 0) return NULL;
    for (int i = 0; i < MAX_DEVICES; i++) if (devs[i].open && devs[i].fd == fd) return &devs[i];
    return NULL;
}

/* ---- drawing: the barcode and a simple picture ---- */

static uint8_t crc8(uint32_t v) {
    uint8_t crc = 0xFF;
    for (int s = 16; s >= 0; s -= 8) {
        crc ^= (uint8_t)(v >> s);
        for (int b = 0; b < 8; b++) crc = (crc & 0x80) ? (uint8_t)((crc << 1) ^ 0x07) : (uint8_t)(crc << 1);
    }
    return crc;
}

/* Writes luma through `put(x, y, value)` for the picture and barcode of frame `index`. */
static void draw_luma(uint8_t *y, size_t ystride, size_t ystep, uint32_t w, uint32_t h, uint64_t index) {
    for (uint32_t r = 0; r < h; r++)
        for (uint32_t c = 0; c < w; c++)
            y[r * ystride + c * ystep] = (uint8_t)(60 + ((c + r + index * 4) % 256) * 100 / 256);
    uint32_t v = (uint32_t)(index & 0xFFFFFF);
    uint32_t word = (v << 8) | crc8(v);
    int x0 = (int)w / 2 - 128, y0 = (int)h / 2 - 64;
    for (int bit = 0; bit < 32; bit++) {
        uint8_t val = ((word >> (31 - bit)) & 1) ? 235 : 16;
        int cx = x0 + (bit % 8) * 32, cy = y0 + (bit / 8) * 32;
        for (int r = cy; r < cy + 32; r++)
            for (int c = cx; c < cx + 32; c++)
                if (r >= 0 && c >= 0 && (uint32_t)r < h && (uint32_t)c < w) y[r * ystride + c * ystep] = val;
    }
}

static size_t frame_bytes(uint32_t fourcc, uint32_t w, uint32_t h) {
    if (fourcc == V4L2_PIX_FMT_YUYV) return (size_t)w * h * 2;
    if (fourcc == V4L2_PIX_FMT_NV12) return (size_t)w * h * 3 / 2;
    return (size_t)w * h * 2;   /* MJPEG: room for the worst case */
}

static uint32_t draw(struct device *d, struct buffer *b, uint64_t index) {
    uint32_t w = d->width, h = d->height;
    uint8_t *m = b->mem;
    if (d->fourcc == V4L2_PIX_FMT_YUYV) {
        for (size_t i = 1; i < (size_t)w * h * 2; i += 2) m[i] = 128;
        draw_luma(m, (size_t)w * 2, 2, w, h, index);
        return w * h * 2;
    }
    if (d->fourcc == V4L2_PIX_FMT_NV12) {
        memset(m + (size_t)w * h, 128, (size_t)w * h / 2);
        draw_luma(m, w, 1, w, h, index);
        return w * h * 3 / 2;
    }
    /* MJPEG through libavcodec. */
    if (!d->jpeg) {
        const AVCodec *c = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
        d->jpeg = avcodec_alloc_context3(c);
        d->jpeg->width = (int)w; d->jpeg->height = (int)h;
        d->jpeg->pix_fmt = AV_PIX_FMT_YUVJ422P;
        d->jpeg->time_base = (AVRational){1, (int)d->fps};
        d->jpeg->flags |= AV_CODEC_FLAG_QSCALE;
        d->jpeg->global_quality = FF_QP2LAMBDA * 4;
        if (avcodec_open2(d->jpeg, c, NULL) < 0) return 0;
        d->jframe = av_frame_alloc();
        d->jframe->width = (int)w; d->jframe->height = (int)h; d->jframe->format = AV_PIX_FMT_YUVJ422P;
        av_frame_get_buffer(d->jframe, 32);
        d->jpkt = av_packet_alloc();
    }
    AVFrame *f = d->jframe;
    av_frame_make_writable(f);
    for (uint32_t r = 0; r < h; r++) { memset(f->data[1] + r * f->linesize[1], 128, w / 2); memset(f->data[2] + r * f->linesize[2], 128, w / 2); }
    draw_luma(f->data[0], (size_t)f->linesize[0], 1, w, h, index);
    f->pts = (int64_t)index;
    if (avcodec_send_frame(d->jpeg, f) < 0 || avcodec_receive_packet(d->jpeg, d->jpkt) < 0) return 0;
    uint32_t n = (uint32_t)d->jpkt->size;
    if (n > b->length) n = (uint32_t)b->length;
    memcpy(m, d->jpkt->data, n);
    av_packet_unref(d->jpkt);
    return n;
}

/* ---- the sensor thread ---- */

static void *sensor(void *arg) {
    struct device *d = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long interval = 1000000000L / (long)d->fps;
    pthread_mutex_lock(&d->lock);
    while (d->streaming) {
        pthread_mutex_unlock(&d->lock);
        next.tv_nsec += interval;
        while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
        struct timespec at = next;
        uint64_t k = d->frame + 1;
        if (opt_slow_every > 0 && k % (uint64_t)opt_slow_every == 0) {
            at.tv_nsec += opt_slow_ms * 1000000L;
            while (at.tv_nsec >= 1000000000L) { at.tv_nsec -= 1000000000L; at.tv_sec++; }
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        pthread_mutex_lock(&d->lock);
        if (!d->streaming) break;
        if (opt_skip_every > 0 && d->frame > 0 && d->frame % (uint64_t)opt_skip_every == 0) d->sequence += (uint32_t)opt_skip_n;
        uint64_t index = d->frame++;
        uint32_t seq = d->sequence++;
        if (opt_unplug >= 0 && (long)index >= opt_unplug) { d->gone = ENODEV; pthread_cond_broadcast(&d->cond); uint64_t one = 1; write(d->fd, &one, 8); continue; }
        if (opt_eio >= 0 && (long)index >= opt_eio) { d->gone = EIO; pthread_cond_broadcast(&d->cond); uint64_t one = 1; write(d->fd, &one, 8); continue; }
        struct buffer *b = NULL;
        for (uint32_t i = 0; i < d->nbufs; i++) if (d->bufs[i].queued) { b = &d->bufs[i]; break; }
        if (!b) continue;   /* no buffer queued: the frame is lost, as in the kernel */
        b->queued = 0;
        pthread_mutex_unlock(&d->lock);
        uint32_t used = draw(d, b, seq);   /* the barcode is the sequence number: lost frames never appear */
        pthread_mutex_lock(&d->lock);
        /* Stamped when the frame was due (start of frame, as drivers with SOF timestamps do);
           a slow frame is stamped when it finally came. */
        struct timespec now = at;
        b->info.bytesused = used;
        b->info.sequence = seq;
        b->info.timestamp.tv_sec = now.tv_sec;
        b->info.timestamp.tv_usec = now.tv_nsec / 1000;
        b->info.flags = (b->info.flags & ~(uint32_t)V4L2_BUF_FLAG_QUEUED) | V4L2_BUF_FLAG_DONE | V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC;
        b->done = 1;
        d->done_order[d->ndone++] = b->info.index;
        uint64_t one = 1;
        write(d->fd, &one, 8);
        pthread_cond_broadcast(&d->cond);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* ---- the calls ---- */

static int fake_open(const char *path, int flags) {
    int n = device_number(path);
    if (n < 0) return -2;
    if (opt_busy) { errno = EBUSY; return -1; }
    pthread_mutex_lock(&global);
    struct device *d = &devs[n];
    if (d->open) { pthread_mutex_unlock(&global); errno = EBUSY; return -1; }
    memset(d, 0, sizeof *d);
    d->fd = eventfd(0, EFD_CLOEXEC | ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
    if (d->fd < 0) { pthread_mutex_unlock(&global); return -1; }
    d->open = 1; d->index = n;
    d->fourcc = V4L2_PIX_FMT_YUYV; d->width = 1280; d->height = 720; d->fps = (uint32_t)opt_fps;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cond, NULL);
    pthread_mutex_unlock(&global);
    return d->fd;
}

int open(const char *path, int flags, ...) {
    configure();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    int r = fake_open(path, flags);
    if (r != -2) return r;
    return real_open(path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *path, int flags, ...) {
    configure();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, mode_t); va_end(ap); }
    int r = fake_open(path, flags);
    if (r != -2) return r;
    return real_openat(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

static void stop_streaming(struct device *d) {
    pthread_mutex_lock(&d->lock);
    int was = d->streaming;
    d->streaming = 0;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->lock);
    if (was) pthread_join(d->thread, NULL);
}

int close(int fd) {
    configure();
    struct device *d = device_for(fd);
    if (d) {
        stop_streaming(d);
        for (uint32_t i = 0; i < d->nbufs; i++) if (d->bufs[i].mem) real_munmap(d->bufs[i].mem, d->bufs[i].length);
        if (d->jpeg) { avcodec_free_context(&d->jpeg); av_frame_free(&d->jframe); av_packet_free(&d->jpkt); }
        d->open = 0;
    }
    return real_close(fd);
}

static int offered(uint32_t fourcc, uint32_t w, uint32_t h) {
    if (fourcc == V4L2_PIX_FMT_MJPEG) { for (size_t i = 0; i < sizeof mjpeg_sizes / sizeof *mjpeg_sizes; i++) if (mjpeg_sizes[i].w == w && mjpeg_sizes[i].h == h) return 1; return 0; }
    if (fourcc != V4L2_PIX_FMT_YUYV && fourcc != V4L2_PIX_FMT_NV12) return 0;
    for (size_t i = 0; i < sizeof yuv_sizes / sizeof *yuv_sizes; i++) if (yuv_sizes[i].w == w && yuv_sizes[i].h == h) return 1;
    return 0;
}

static void fill_pix(struct device *d, struct v4l2_pix_format *p) {
    p->width = d->width; p->height = d->height; p->pixelformat = d->fourcc;
    p->field = V4L2_FIELD_NONE;
    p->bytesperline = d->fourcc == V4L2_PIX_FMT_YUYV ? d->width * 2 : d->fourcc == V4L2_PIX_FMT_NV12 ? d->width : 0;
    p->sizeimage = (uint32_t)frame_bytes(d->fourcc, d->width, d->height);
    p->colorspace = d->fourcc == V4L2_PIX_FMT_MJPEG ? V4L2_COLORSPACE_JPEG : V4L2_COLORSPACE_REC709;
}

static int fake_ioctl(struct device *d, unsigned long req, void *arg) {
    switch (req) {
    case VIDIOC_QUERYCAP: {
        struct v4l2_capability *c = arg;
        memset(c, 0, sizeof *c);
        snprintf((char *)c->driver, sizeof c->driver, "fakev4l2");
        snprintf((char *)c->card, sizeof c->card, "%s", opt_card);
        snprintf((char *)c->bus_info, sizeof c->bus_info, "platform:fakev4l2-%d", d->index);
        c->version = 0x060100;
        c->device_caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
        c->capabilities = c->device_caps | V4L2_CAP_DEVICE_CAPS;
        return 0;
    }
    case VIDIOC_ENUM_FMT: {
        struct v4l2_fmtdesc *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || f->index >= sizeof formats / sizeof *formats) { errno = EINVAL; return -1; }
        uint32_t i = f->index;
        memset(f, 0, sizeof *f);
        f->index = i; f->type = V4L2_BUF_TYPE_VIDEO_CAPTURE; f->pixelformat = formats[i];
        if (formats[i] == V4L2_PIX_FMT_MJPEG) f->flags = V4L2_FMT_FLAG_COMPRESSED;
        snprintf((char *)f->description, sizeof f->description, "%s",
                 formats[i] == V4L2_PIX_FMT_YUYV ? "YUYV 4:2:2" : formats[i] == V4L2_PIX_FMT_NV12 ? "Y/UV 4:2:0" : "Motion-JPEG");
        return 0;
    }
    case VIDIOC_ENUM_FRAMESIZES: {
        struct v4l2_frmsizeenum *s = arg;
        const struct size *list = s->pixel_format == V4L2_PIX_FMT_MJPEG ? mjpeg_sizes : yuv_sizes;
        size_t n = s->pixel_format == V4L2_PIX_FMT_MJPEG ? 1 : sizeof yuv_sizes / sizeof *yuv_sizes;
        if ((s->pixel_format != V4L2_PIX_FMT_YUYV && s->pixel_format != V4L2_PIX_FMT_NV12 && s->pixel_format != V4L2_PIX_FMT_MJPEG) || s->index >= n) { errno = EINVAL; return -1; }
        s->type = V4L2_FRMSIZE_TYPE_DISCRETE;
        s->discrete.width = list[s->index].w; s->discrete.height = list[s->index].h;
        return 0;
    }
    case VIDIOC_ENUM_FRAMEINTERVALS: {
        struct v4l2_frmivalenum *v = arg;
        if (!offered(v->pixel_format, v->width, v->height) || v->index > 0) { errno = EINVAL; return -1; }
        v->type = V4L2_FRMIVAL_TYPE_DISCRETE;
        v->discrete.numerator = 1; v->discrete.denominator = (uint32_t)opt_fps;
        return 0;
    }
    case VIDIOC_G_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) { errno = EINVAL; return -1; }
        fill_pix(d, &f->fmt.pix);
        return 0;
    }
    case VIDIOC_TRY_FMT:
    case VIDIOC_S_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) { errno = EINVAL; return -1; }
        if (req == VIDIOC_S_FMT && d->nbufs > 0) { errno = EBUSY; return -1; }
        uint32_t fourcc = f->fmt.pix.pixelformat, w = f->fmt.pix.width, h = f->fmt.pix.height;
        /* Like a driver: an unknown format becomes the default, an unknown size the nearest offered. */
        if (fourcc != V4L2_PIX_FMT_YUYV && fourcc != V4L2_PIX_FMT_NV12 && fourcc != V4L2_PIX_FMT_MJPEG) fourcc = V4L2_PIX_FMT_YUYV;
        if (!offered(fourcc, w, h)) { w = 1280; h = 720; }
        struct device tmp = *d;
        tmp.fourcc = fourcc; tmp.width = w; tmp.height = h;
        if (req == VIDIOC_S_FMT) { d->fourcc = fourcc; d->width = w; d->height = h; }
        fill_pix(&tmp, &f->fmt.pix);
        return 0;
    }
    case VIDIOC_G_PARM:
    case VIDIOC_S_PARM: {
        struct v4l2_streamparm *p = arg;
        if (p->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) { errno = EINVAL; return -1; }
        memset(&p->parm, 0, sizeof p->parm);
        p->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
        p->parm.capture.timeperframe.numerator = 1;
        p->parm.capture.timeperframe.denominator = d->fps;
        return 0;
    }
    case VIDIOC_REQBUFS: {
        struct v4l2_requestbuffers *r = arg;
        if (r->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || r->memory != V4L2_MEMORY_MMAP) { errno = EINVAL; return -1; }
        if (d->streaming) { errno = EBUSY; return -1; }
        for (uint32_t i = 0; i < d->nbufs; i++) if (d->bufs[i].mem) real_munmap(d->bufs[i].mem, d->bufs[i].length);
        uint32_t n = r->count > MAX_BUFFERS ? MAX_BUFFERS : r->count;
        size_t len = (frame_bytes(d->fourcc, d->width, d->height) + 4095) & ~(size_t)4095;
        for (uint32_t i = 0; i < n; i++) {
            struct buffer *b = &d->bufs[i];
            memset(b, 0, sizeof *b);
            b->mem = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            b->length = len;
            b->info.index = i; b->info.type = V4L2_BUF_TYPE_VIDEO_CAPTURE; b->info.memory = V4L2_MEMORY_MMAP;
            b->info.length = (uint32_t)len; b->info.m.offset = i * (uint32_t)len;
        }
        d->nbufs = n;
        r->count = n;
        r->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP;
        return 0;
    }
    case VIDIOC_QUERYBUF: {
        struct v4l2_buffer *b = arg;
        if (b->index >= d->nbufs) { errno = EINVAL; return -1; }
        *b = d->bufs[b->index].info;
        return 0;
    }
    case VIDIOC_QBUF: {
        struct v4l2_buffer *b = arg;
        if (b->index >= d->nbufs || b->memory != V4L2_MEMORY_MMAP) { errno = EINVAL; return -1; }
        pthread_mutex_lock(&d->lock);
        struct buffer *x = &d->bufs[b->index];
        x->queued = 1; x->done = 0;
        x->info.flags = (x->info.flags & ~(uint32_t)V4L2_BUF_FLAG_DONE) | V4L2_BUF_FLAG_QUEUED;
        pthread_mutex_unlock(&d->lock);
        return 0;
    }
    case VIDIOC_DQBUF: {
        struct v4l2_buffer *b = arg;
        pthread_mutex_lock(&d->lock);
        while (d->ndone == 0 && !d->gone && d->streaming) {
            if (fcntl(d->fd, F_GETFL) & O_NONBLOCK) { pthread_mutex_unlock(&d->lock); errno = EAGAIN; return -1; }
            pthread_cond_wait(&d->cond, &d->lock);
        }
        if (d->ndone == 0) {
            int e = d->gone ? d->gone : EINVAL;
            pthread_mutex_unlock(&d->lock);
            errno = e;
            return -1;
        }
        uint32_t i = (uint32_t)d->done_order[0];
        memmove(d->done_order, d->done_order + 1, sizeof d->done_order[0] * (size_t)(--d->ndone));
        d->bufs[i].done = 0;
        *b = d->bufs[i].info;
        uint64_t v;
        if (d->ndone == 0) { int fl = fcntl(d->fd, F_GETFL); fcntl(d->fd, F_SETFL, fl | O_NONBLOCK); real_read(d->fd, &v, 8); fcntl(d->fd, F_SETFL, fl); }
        pthread_mutex_unlock(&d->lock);
        return 0;
    }
    case VIDIOC_STREAMON: {
        if (d->nbufs == 0) { errno = EINVAL; return -1; }
        pthread_mutex_lock(&d->lock);
        if (d->streaming) { pthread_mutex_unlock(&d->lock); return 0; }
        d->streaming = 1;
        pthread_mutex_unlock(&d->lock);
        pthread_create(&d->thread, NULL, sensor, d);
        return 0;
    }
    case VIDIOC_STREAMOFF:
        stop_streaming(d);
        for (uint32_t i = 0; i < d->nbufs; i++) { d->bufs[i].queued = 0; d->bufs[i].done = 0; }
        d->ndone = 0;
        return 0;
    default:
        errno = ENOTTY;
        return -1;
    }
}

int ioctl(int fd, unsigned long req, ...) {
    configure();
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    struct device *d = device_for(fd);
    if (d) return fake_ioctl(d, req, arg);
    return real_ioctl(fd, req, arg);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    configure();
    struct device *d = device_for(fd);
    if (d) {
        for (uint32_t i = 0; i < d->nbufs; i++)
            if ((off_t)d->bufs[i].info.m.offset == off) return d->bufs[i].mem;
        errno = EINVAL;
        return MAP_FAILED;
    }
    return real_mmap(addr, len, prot, flags, fd, off);
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

int munmap(void *addr, size_t len) {
    configure();
    for (int k = 0; k < MAX_DEVICES; k++)
        for (uint32_t i = 0; devs[k].open && i < devs[k].nbufs; i++)
            if (devs[k].bufs[i].mem == addr) return 0;   /* the device owns its buffers */
    return real_munmap(addr, len);
}

ssize_t read(int fd, void *buf, size_t n) {
    configure();
    if (device_for(fd)) { errno = EINVAL; return -1; }   /* no read() I/O: streaming only */
    return real_read(fd, buf, n);
}
