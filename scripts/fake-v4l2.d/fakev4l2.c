/*
 * A userspace emulation of a V4L2 capture device, preloaded into a process (LD_PRELOAD) so
 * that /dev/videoN exists where no camera does. It answers the calls V4L2 programs make
 * (Reel, v4l2-ctl, v4l2-compliance, ffmpeg's and GStreamer's v4l2 sources) the way the
 * uvcvideo driver does, with the kernel's structs (linux/videodev2.h) and error codes:
 *
 *   stat/lstat/fstat/fstatat/statx (and the old __xstat family): a character device, major
 *     81 (V4L), minor N, mode 0660, group video; access/faccessat: present
 *   open/openat (and the _2 fortify variants), close, dup/dup2/dup3, fcntl(F_DUPFD*):
 *     any number of opens; a dup shares its open file (ownership, priority) as in the kernel
 *   mmap of a buffer (each buffer is a memfd: mappings are real, munmap is the kernel's;
 *     a mapping outlives REQBUFS(0), as with V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS)
 *   read(): EINVAL (streaming only: read I/O is not advertised in the capabilities)
 *   ioctls: QUERYCAP, ENUM_FMT, G/S/TRY_FMT, ENUM_FRAMESIZES, ENUM_FRAMEINTERVALS,
 *     G/S_PARM, ENUMINPUT, G/S_INPUT, G/S_PRIORITY, QUERYCTRL, QUERY_EXT_CTRL, QUERYMENU,
 *     G/S_CTRL, G/S/TRY_EXT_CTRLS (brightness, contrast, exposure_auto, exposure_absolute,
 *     focus_automatic_continuous and their class controls; the picture's background follows brightness and, in manual
 *     exposure, the exposure time; none with noctrls, no brightness with nobrightness), REQBUFS, CREATE_BUFS, QUERYBUF, QBUF, DQBUF, STREAMON,
 *     STREAMOFF; the queue belongs to the open file that allocated buffers (others: EBUSY).
 *     SUBSCRIBE_EVENT/UNSUBSCRIBE_EVENT/DQEVENT (control events).
 *     Everything else fails with ENOTTY, as on uvcvideo: ENUMSTD/G_STD/S_STD/QUERYSTD
 *     (a camera input has no TV standard), LOG_STATUS, EXPBUF (no DMABUF in userspace).
 *   poll/select/epoll work natively: the fd is an eventfd, readable while a buffer is done
 *     (or the device is gone); a pending control event is POLLPRI for poll/ppoll/select/
 *     pselect/epoll
 *   syscall(2) with the numbers above: libv4l2 and libv4lconvert call the kernel that way
 *
 * Formats: YUYV and NV12 at 1280x720, 640x480, 1080x1080 and 1920x1080, MJPEG at 1280x720 (encoded with
 * libavcodec), at fps and fps/2 (when whole). Each frame carries the same frame-index barcode
 * as Reel's synthetic sensor: 24-bit index + CRC-8 (poly 0x07, init 0xFF), 8x4 cells of 32 px,
 * centred; the index is the frame's V4L2 sequence number.
 *
 * FAKE_V4L2 (comma-separated):
 *   devices=N        how many /dev/videoN appear (default 1)
 *   fps=N            the default frame rate (default 30)
 *   unplug=N         after N frames the device is gone: DQBUF fails with ENODEV
 *   eio=N            after N frames DQBUF fails with EIO
 *   skip=K:N         every K-th frame, skip N sequence numbers (frames the "sensor" lost)
 *   slow=K:MS        every K-th frame arrives MS milliseconds late
 *   corrupt=K        the frame with sequence number K arrives damaged: MJPEG data that does
 *                    not decode; YUYV/NV12 flagged V4L2_BUF_FLAG_ERROR
 *   noparm           no frame-rate control: G_PARM and S_PARM fail with ENOTTY (the camera
 *                    streams at fps whatever is asked)
 *   parm-live        S_PARM is accepted while streaming: the sensor takes the new frame
 *                    interval from the frame after the one it is exposing (by default S_PARM
 *                    while streaming fails with EBUSY, as on uvcvideo)
 *   busy             open() fails with EBUSY
 *   card=TEXT        the card name
 *   streamoff-eio    VIDIOC_STREAMOFF fails with EIO (streaming stops anyway)
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
#include <poll.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/videodev2.h>
#include <libavcodec/avcodec.h>

#define MAX_DEVICES 4
#define MAX_BUFFERS 32
#define MAX_FILES 256
#define MAX_FDS 65536
#define VIDEO_MAJOR 81
#define VIDEO_GID 44

struct size { uint32_t w, h; };
static const struct size yuv_sizes[] = { {1280, 720}, {640, 480}, {1080, 1080}, {1920, 1080} };
static const struct size mjpeg_sizes[] = { {1280, 720} };
static const uint32_t formats[] = { V4L2_PIX_FMT_YUYV, V4L2_PIX_FMT_NV12, V4L2_PIX_FMT_MJPEG };

struct buffer { int memfd; void *mem; size_t length; int queued, done; struct v4l2_buffer info; };

/* An open file (what open() creates and dup() shares). */
struct file {
    int used, refs;
    struct device *dev;
    int efd;            /* our own reference to the eventfd, for signalling */
    int signaled;       /* the eventfd's counter is non-zero */
    int prio;
    /* Control events: what this file subscribed to, and the events waiting (one per control,
       merged as the kernel merges them). `pfd` is readable while one waits: the poll, ppoll,
       select, pselect and epoll below report that as POLLPRI on the device fd. */
    int pfd, pri_signaled;
    int subscribed[16];
    uint32_t sub_flags[16];
    uint32_t pending[16];
    int order[16], npending;
    uint32_t ev_sequence;
};

enum { CTRL_USER_CLASS, CTRL_BRIGHTNESS, CTRL_CONTRAST, CTRL_CAMERA_CLASS, CTRL_EXPOSURE_AUTO, CTRL_EXPOSURE_ABSOLUTE, CTRL_FOCUS_AUTO, NCTRLS };
struct control { uint32_t id, type; const char *name; int32_t min, max, step, def; uint32_t flags; uint64_t skip_mask; };
static const struct control controls[NCTRLS] = {
    { V4L2_CID_USER_CLASS, V4L2_CTRL_TYPE_CTRL_CLASS, "User Controls", 0, 0, 0, 0, V4L2_CTRL_FLAG_READ_ONLY | V4L2_CTRL_FLAG_WRITE_ONLY, 0 },
    { V4L2_CID_BRIGHTNESS, V4L2_CTRL_TYPE_INTEGER, "Brightness", -64, 64, 1, 0, V4L2_CTRL_FLAG_SLIDER, 0 },
    { V4L2_CID_CONTRAST, V4L2_CTRL_TYPE_INTEGER, "Contrast", 0, 64, 1, 32, V4L2_CTRL_FLAG_SLIDER, 0 },
    { V4L2_CID_CAMERA_CLASS, V4L2_CTRL_TYPE_CTRL_CLASS, "Camera Controls", 0, 0, 0, 0, V4L2_CTRL_FLAG_READ_ONLY | V4L2_CTRL_FLAG_WRITE_ONLY, 0 },
    /* As uvcvideo maps it: only Manual (1) and Aperture Priority (3) offered. */
    { V4L2_CID_EXPOSURE_AUTO, V4L2_CTRL_TYPE_MENU, "Auto Exposure", 0, 3, 1, V4L2_EXPOSURE_APERTURE_PRIORITY, 0, (1u << 0) | (1u << 2) },
    { V4L2_CID_EXPOSURE_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, "Exposure Time, Absolute", 3, 2047, 1, 250, 0, 0 },
    /* Continuous autofocus, on (the kernel's name since 5.x; v4l2-ctl: focus_automatic_continuous). */
    { V4L2_CID_FOCUS_AUTO, V4L2_CTRL_TYPE_BOOLEAN, "Focus, Automatic Continuous", 0, 1, 1, 1, 0, 0 },
};
static const char *exposure_menu[] = { "Auto Mode", "Manual Mode", "Shutter Priority Mode", "Aperture Priority Mode" };

struct device {
    int index;
    uint32_t fourcc, width, height, fps;
    uint32_t fps_before;        /* the rate before the last S_PARM while streaming (parm-live) */
    struct timespec fps_at;     /* when it was made: frames due before it keep fps_before's spacing */
    int32_t ctrl[NCTRLS];
    int prio_count[4];
    struct file *owner;     /* the open file the queue belongs to (it allocated buffers) */
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
static struct file files[MAX_FILES];
static struct file *fdmap[MAX_FDS];
static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER;
static int opt_parm_live = 0;
static int opt_devices = 1, opt_fps = 30, opt_busy = 0, opt_noparm = 0, opt_streamoff_eio = 0, opt_noctrls = 0, opt_nobrightness = 0;
static long opt_unplug = -1, opt_eio = -1, opt_skip_every = 0, opt_skip_n = 0, opt_slow_every = 0, opt_slow_ms = 0, opt_corrupt = -1;
static char opt_card[32] = "Reel fake camera";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_stat)(const char *, struct stat *);
static int (*real_lstat)(const char *, struct stat *);
static int (*real_fstat)(int, struct stat *);
static int (*real_fstatat)(int, const char *, struct stat *, int);
static int (*real_statx)(int, const char *, int, unsigned, struct statx *);
static int (*real_access)(const char *, int);
static int (*real_faccessat)(int, const char *, int, int);
static FILE *(*real_fopen)(const char *, const char *);
static long (*real_syscall)(long, ...);
static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);

static void configure_once(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_close = dlsym(RTLD_NEXT, "close");
    real_ioctl = dlsym(RTLD_NEXT, "ioctl");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_read = dlsym(RTLD_NEXT, "read");
    real_poll = dlsym(RTLD_NEXT, "poll");
    real_ppoll = dlsym(RTLD_NEXT, "ppoll");
    real_select = dlsym(RTLD_NEXT, "select");
    real_pselect = dlsym(RTLD_NEXT, "pselect");
    real_dup = dlsym(RTLD_NEXT, "dup");
    real_dup2 = dlsym(RTLD_NEXT, "dup2");
    real_dup3 = dlsym(RTLD_NEXT, "dup3");
    real_fcntl = dlsym(RTLD_NEXT, "fcntl");
    real_stat = dlsym(RTLD_NEXT, "stat");
    real_lstat = dlsym(RTLD_NEXT, "lstat");
    real_fstat = dlsym(RTLD_NEXT, "fstat");
    real_fstatat = dlsym(RTLD_NEXT, "fstatat");
    real_statx = dlsym(RTLD_NEXT, "statx");
    real_access = dlsym(RTLD_NEXT, "access");
    real_faccessat = dlsym(RTLD_NEXT, "faccessat");
    real_fopen = dlsym(RTLD_NEXT, "fopen");
    real_syscall = dlsym(RTLD_NEXT, "syscall");
    real_epoll_ctl = dlsym(RTLD_NEXT, "epoll_ctl");
    real_epoll_pwait = dlsym(RTLD_NEXT, "epoll_pwait");
    const char *env = getenv("FAKE_V4L2");
    if (env) {
        char *copy = strdup(env), *save = NULL;
        for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
            if (sscanf(t, "devices=%d", &opt_devices) == 1) continue;
            if (sscanf(t, "fps=%d", &opt_fps) == 1) continue;
            if (sscanf(t, "unplug=%ld", &opt_unplug) == 1) continue;
            if (sscanf(t, "eio=%ld", &opt_eio) == 1) continue;
            if (sscanf(t, "skip=%ld:%ld", &opt_skip_every, &opt_skip_n) == 2) continue;
            if (sscanf(t, "slow=%ld:%ld", &opt_slow_every, &opt_slow_ms) == 2) continue;
            if (sscanf(t, "corrupt=%ld", &opt_corrupt) == 1) continue;
            if (strcmp(t, "busy") == 0) { opt_busy = 1; continue; }
            if (strcmp(t, "noparm") == 0) { opt_noparm = 1; continue; }
            if (strcmp(t, "parm-live") == 0) { opt_parm_live = 1; continue; }
            if (strcmp(t, "streamoff-eio") == 0) { opt_streamoff_eio = 1; continue; }
            if (strcmp(t, "noctrls") == 0) { opt_noctrls = 1; continue; }
            if (strcmp(t, "nobrightness") == 0) { opt_nobrightness = 1; continue; }
            if (strncmp(t, "card=", 5) == 0) { snprintf(opt_card, sizeof opt_card, "%s", t + 5); continue; }
        }
        free(copy);
    }
    if (opt_devices < 0) opt_devices = 0;
    if (opt_devices > MAX_DEVICES) opt_devices = MAX_DEVICES;
    if (opt_fps <= 0) opt_fps = 30;
    for (int i = 0; i < MAX_DEVICES; i++) {
        struct device *d = &devs[i];
        d->index = i;
        d->fourcc = V4L2_PIX_FMT_YUYV; d->width = 1280; d->height = 720; d->fps = (uint32_t)opt_fps;
        for (int c = 0; c < NCTRLS; c++) d->ctrl[c] = controls[c].def;
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->cond, NULL);
    }
}
static void configure(void) { pthread_once(&once, configure_once); }

/* The device a path names (/dev/videoN, N < devices), or -1. */
static int device_number(const char *path) {
    int n;
    char tail;
    if (path && sscanf(path, "/dev/video%d%c", &n, &tail) == 1 && n >= 0 && n < opt_devices) return n;
    return -1;
}

static struct file *file_for(int fd) {
    if (fd < 0 || fd >= MAX_FDS) return NULL;
    pthread_mutex_lock(&global);
    struct file *f = fdmap[fd];
    pthread_mutex_unlock(&global);
    return f;
}

/* Moves a descriptor of ours out of the range programs use (>= 512), close-on-exec. */
static int hide_fd(int fd) {
    if (fd < 0) return fd;
    int high = real_fcntl(fd, F_DUPFD_CLOEXEC, 512);
    if (high < 0) return fd;
    real_close(fd);
    return high;
}

/* The eventfd is readable exactly while `want` (called with d->lock held). */
static void signal_file(struct file *f, int want) {
    if (!f) return;
    if (want && !f->signaled) {
        uint64_t one = 1;
        if (write(f->efd, &one, 8) == 8) f->signaled = 1;
    } else if (!want && f->signaled) {
        uint64_t v;
        if (real_read(f->efd, &v, 8) == 8) f->signaled = 0;
    }
}

static void signal_pri(struct file *f, int want) {
    if (want && !f->pri_signaled) {
        uint64_t one = 1;
        if (write(f->pfd, &one, 8) == 8) f->pri_signaled = 1;
    } else if (!want && f->pri_signaled) {
        uint64_t v;
        if (real_read(f->pfd, &v, 8) == 8) f->pri_signaled = 0;
    }
}

static void device_changed(struct device *d) {
    signal_file(d->owner, d->ndone > 0 || d->gone);
    pthread_cond_broadcast(&d->cond);
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
/* The background follows the exposure time (in manual exposure: proportional to it, 1 at the
   default) and the brightness control, as a camera's picture does; the barcode does not.
   60 + ((c + r + index * 4) % 256) * 100 / 256 before exposure and brightness, from a table
   made once per picture (several 1080p cameras at once must not spend their CPU here). */
static void draw_luma(uint8_t *y, size_t ystride, size_t ystep, uint32_t w, uint32_t h, uint64_t index, int32_t brightness, int32_t exposure) {
    uint8_t ramp[256];
    for (int k = 0; k < 256; k++) {
        int v = (60 + k * 100 / 256) * exposure / controls[CTRL_EXPOSURE_ABSOLUTE].def + brightness;
        ramp[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    for (uint32_t r = 0; r < h; r++) {
        uint8_t *row = y + r * ystride;
        uint32_t k = (uint32_t)((r + index * 4) & 255);
        for (uint32_t c = 0; c < w; c++, k = (k + 1) & 255) row[c * ystep] = ramp[k];
    }
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

static uint32_t draw(struct device *d, struct buffer *b, uint64_t index, int32_t brightness, int32_t exposure) {
    uint32_t w = d->width, h = d->height;
    uint8_t *m = b->mem;
    if (d->fourcc == V4L2_PIX_FMT_YUYV) {
        for (size_t i = 1; i < (size_t)w * h * 2; i += 2) m[i] = 128;
        draw_luma(m, (size_t)w * 2, 2, w, h, index, brightness, exposure);
        return w * h * 2;
    }
    if (d->fourcc == V4L2_PIX_FMT_NV12) {
        memset(m + (size_t)w * h, 128, (size_t)w * h / 2);
        draw_luma(m, w, 1, w, h, index, brightness, exposure);
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
    draw_luma(f->data[0], (size_t)f->linesize[0], 1, w, h, index, brightness, exposure);
    f->pts = (int64_t)index;
    if (avcodec_send_frame(d->jpeg, f) < 0 || avcodec_receive_packet(d->jpeg, d->jpkt) < 0) return 0;
    uint32_t n = (uint32_t)d->jpkt->size;
    if (n > b->length) n = (uint32_t)b->length;
    memcpy(m, d->jpkt->data, n);
    av_packet_unref(d->jpkt);
    return n;
}

/* ---- the sensor thread ---- */

static void add_ns(struct timespec *t, long ns) {
    t->tv_nsec += ns;
    while (t->tv_nsec >= 1000000000L) { t->tv_nsec -= 1000000000L; t->tv_sec++; }
}

static void *sensor(void *arg) {
    struct device *d = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&d->lock);
    d->fps_before = d->fps;
    while (d->streaming) {
        /* The interval after the frame due at `next`: of the rate in force when it was due (an
           S_PARM while streaming, with parm-live, applies from the first frame due after it:
           that frame is one old interval after the one before, one new interval before the next). */
        int changed_before = next.tv_sec > d->fps_at.tv_sec || (next.tv_sec == d->fps_at.tv_sec && next.tv_nsec >= d->fps_at.tv_nsec);
        long interval = 1000000000L / (long)(changed_before ? d->fps : d->fps_before);
        pthread_mutex_unlock(&d->lock);
        add_ns(&next, interval);
        struct timespec at = next;
        uint64_t k = d->frame + 1;
        if (opt_slow_every > 0 && k % (uint64_t)opt_slow_every == 0) add_ns(&at, opt_slow_ms * 1000000L);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {}
        pthread_mutex_lock(&d->lock);
        if (!d->streaming) break;
        if (opt_skip_every > 0 && d->frame > 0 && d->frame % (uint64_t)opt_skip_every == 0) d->sequence += (uint32_t)opt_skip_n;
        uint64_t index = d->frame++;
        uint32_t seq = d->sequence++;
        if (opt_unplug >= 0 && (long)index >= opt_unplug) { d->gone = ENODEV; device_changed(d); continue; }
        if (opt_eio >= 0 && (long)index >= opt_eio) { d->gone = EIO; device_changed(d); continue; }
        struct buffer *b = NULL;
        for (uint32_t i = 0; i < d->nbufs; i++) if (d->bufs[i].queued) { b = &d->bufs[i]; break; }
        if (!b) continue;   /* no buffer queued: the frame is lost, as in the kernel */
        b->queued = 0;
        int32_t brightness = d->ctrl[CTRL_BRIGHTNESS];
        int32_t exposure = d->ctrl[CTRL_EXPOSURE_AUTO] == V4L2_EXPOSURE_MANUAL ? d->ctrl[CTRL_EXPOSURE_ABSOLUTE] : controls[CTRL_EXPOSURE_ABSOLUTE].def;
        pthread_mutex_unlock(&d->lock);
        uint32_t used = draw(d, b, seq, brightness, exposure);   /* the barcode is the sequence number: lost frames never appear */
        uint32_t flags = 0;
        if (opt_corrupt >= 0 && (long)seq == opt_corrupt) {
            if (d->fourcc == V4L2_PIX_FMT_MJPEG) memset(b->mem, 0, used);   /* no JPEG marker left */
            else flags = V4L2_BUF_FLAG_ERROR;
        }
        pthread_mutex_lock(&d->lock);
        /* Stamped when the frame was due (start of exposure, as uvcvideo does); a slow frame
           is stamped when it finally came. */
        b->info.bytesused = used;
        b->info.sequence = seq;
        b->info.field = V4L2_FIELD_NONE;
        b->info.timestamp.tv_sec = at.tv_sec;
        b->info.timestamp.tv_usec = at.tv_nsec / 1000;
        b->info.flags = (b->info.flags & ~(uint32_t)(V4L2_BUF_FLAG_QUEUED | V4L2_BUF_FLAG_ERROR)) | V4L2_BUF_FLAG_DONE | flags;
        b->done = 1;
        d->done_order[d->ndone++] = b->info.index;
        device_changed(d);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* ---- opening, duplicating, closing ---- */

static int fake_open(const char *path, int flags) {
    int n = device_number(path);
    if (n < 0) return -2;
    if (opt_busy) { errno = EBUSY; return -1; }
    if ((flags & O_ACCMODE) == O_WRONLY) { errno = EINVAL; return -1; }
    int fd = eventfd(0, ((flags & O_CLOEXEC) ? EFD_CLOEXEC : 0) | ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
    if (fd < 0) return -1;
    if (fd >= MAX_FDS) { real_close(fd); errno = EMFILE; return -1; }
    int efd = hide_fd(real_fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (efd < 0) { int e = errno; real_close(fd); errno = e; return -1; }
    int pfd = hide_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (pfd < 0) { int e = errno; real_close(fd); real_close(efd); errno = e; return -1; }
    pthread_mutex_lock(&global);
    struct file *f = NULL;
    for (int i = 0; i < MAX_FILES; i++) if (!files[i].used) { f = &files[i]; break; }
    if (!f) { pthread_mutex_unlock(&global); real_close(fd); real_close(efd); real_close(pfd); errno = EMFILE; return -1; }
    memset(f, 0, sizeof *f);
    f->used = 1; f->refs = 1; f->dev = &devs[n]; f->efd = efd; f->pfd = pfd; f->prio = V4L2_PRIORITY_DEFAULT;
    fdmap[fd] = f;
    pthread_mutex_unlock(&global);
    pthread_mutex_lock(&devs[n].lock);
    devs[n].prio_count[f->prio]++;
    pthread_mutex_unlock(&devs[n].lock);
    return fd;
}

static void stop_streaming(struct device *d) {
    pthread_mutex_lock(&d->lock);
    int was = d->streaming;
    d->streaming = 0;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->lock);
    if (was) pthread_join(d->thread, NULL);
    pthread_mutex_lock(&d->lock);
    for (uint32_t i = 0; i < d->nbufs; i++) {
        d->bufs[i].queued = 0; d->bufs[i].done = 0;
        d->bufs[i].info.flags &= ~(uint32_t)(V4L2_BUF_FLAG_QUEUED | V4L2_BUF_FLAG_DONE | V4L2_BUF_FLAG_ERROR);
    }
    d->ndone = 0;
    device_changed(d);
    pthread_mutex_unlock(&d->lock);
}

/* Frees the buffers (mappings a program still holds stay valid: they are memfd pages). */
static void free_buffers(struct device *d) {
    for (uint32_t i = 0; i < d->nbufs; i++) {
        struct buffer *b = &d->bufs[i];
        if (b->mem) munmap(b->mem, b->length);
        if (b->memfd > 0) real_close(b->memfd);   /* -1: never made */
        memset(b, 0, sizeof *b);
    }
    d->nbufs = 0;
}

/* The last descriptor of an open file went away: release what it held, as the kernel does. */
static void release_file(struct file *f) {
    struct device *d = f->dev;
    if (d->owner == f) {
        stop_streaming(d);
        pthread_mutex_lock(&d->lock);
        free_buffers(d);
        d->owner = NULL;
        d->gone = 0;
        if (d->jpeg) { avcodec_free_context(&d->jpeg); av_frame_free(&d->jframe); av_packet_free(&d->jpkt); }
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_lock(&d->lock);
    d->prio_count[f->prio]--;
    pthread_mutex_unlock(&d->lock);
    real_close(f->efd);
    real_close(f->pfd);
    pthread_mutex_lock(&global);
    f->used = 0;
    pthread_mutex_unlock(&global);
}

/* `fd` no longer names its open file (closed, or replaced by dup2). */
static void forget_fd(int fd) {
    if (fd < 0 || fd >= MAX_FDS) return;
    pthread_mutex_lock(&global);
    struct file *f = fdmap[fd];
    fdmap[fd] = NULL;
    int last = f && --f->refs == 0;
    pthread_mutex_unlock(&global);
    if (last) release_file(f);
}

/* `newfd` now names the same open file as `oldfd`. */
static int remember_dup(int oldfd, int newfd) {
    if (newfd < 0) return newfd;
    struct file *f = file_for(oldfd);
    if (!f) return newfd;
    if (newfd >= MAX_FDS) { real_close(newfd); errno = EMFILE; return -1; }
    pthread_mutex_lock(&global);
    fdmap[newfd] = f;
    f->refs++;
    pthread_mutex_unlock(&global);
    return newfd;
}

static mode_t open_mode(int flags, va_list ap) {
    return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...) {
    configure();
    va_list ap; va_start(ap, flags); mode_t mode = open_mode(flags, ap); va_end(ap);
    int r = fake_open(path, flags);
    return r != -2 ? r : real_open(path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));

int openat(int dirfd, const char *path, int flags, ...) {
    configure();
    va_list ap; va_start(ap, flags); mode_t mode = open_mode(flags, ap); va_end(ap);
    int r = fake_open(path, flags);
    return r != -2 ? r : real_openat(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }
int __openat64_2(int dirfd, const char *path, int flags) __attribute__((alias("__openat_2")));

int close(int fd) {
    configure();
    forget_fd(fd);
    return real_close(fd);
}

int dup(int fd) {
    configure();
    return remember_dup(fd, real_dup(fd));
}

int dup2(int fd, int newfd) {
    configure();
    if (fd == newfd) return real_dup2(fd, newfd);
    int r = real_dup2(fd, newfd);
    if (r < 0) return r;
    forget_fd(newfd);
    return remember_dup(fd, r);
}

int dup3(int fd, int newfd, int flags) {
    configure();
    int r = real_dup3(fd, newfd, flags);
    if (r < 0) return r;
    forget_fd(newfd);
    return remember_dup(fd, r);
}

int fcntl(int fd, int cmd, ...) {
    configure();
    va_list ap; va_start(ap, cmd); void *arg = va_arg(ap, void *); va_end(ap);
    int r = real_fcntl(fd, cmd, arg);
    if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) return remember_dup(fd, r);
    return r;
}
int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* ---- the node: a character device, major 81 ---- */

static void fill_stat(struct stat *st, int n) {
    memset(st, 0, sizeof *st);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    st->st_dev = makedev(0, 5);     /* devtmpfs */
    st->st_ino = 1000 + (ino_t)n;
    st->st_mode = S_IFCHR | 0660;
    st->st_nlink = 1;
    st->st_uid = 0;
    st->st_gid = VIDEO_GID;
    st->st_rdev = makedev(VIDEO_MAJOR, (unsigned)n);
    st->st_blksize = 4096;
    st->st_atim = st->st_mtim = st->st_ctim = now;
}

static void fill_statx(struct statx *sx, int n) {
    struct stat st;
    fill_stat(&st, n);
    memset(sx, 0, sizeof *sx);
    sx->stx_mask = STATX_BASIC_STATS;
    sx->stx_blksize = (uint32_t)st.st_blksize;
    sx->stx_nlink = 1;
    sx->stx_uid = 0; sx->stx_gid = VIDEO_GID;
    sx->stx_mode = (uint16_t)st.st_mode;
    sx->stx_ino = st.st_ino;
    sx->stx_rdev_major = VIDEO_MAJOR; sx->stx_rdev_minor = (uint32_t)n;
    sx->stx_dev_major = 0; sx->stx_dev_minor = 5;
    sx->stx_atime.tv_sec = sx->stx_mtime.tv_sec = sx->stx_ctime.tv_sec = st.st_mtim.tv_sec;
}

__attribute__((noinline)) static int empty_path(const char *p) { return !p || !*p; }

static int fd_device(int fd) { struct file *f = file_for(fd); return f ? f->dev->index : -1; }

int stat(const char *path, struct stat *st) {
    configure();
    int n = device_number(path);
    if (n >= 0) { fill_stat(st, n); return 0; }
    return real_stat(path, st);
}
int stat64(const char *path, struct stat64 *st) __attribute__((alias("stat")));
int lstat(const char *path, struct stat *st) {
    configure();
    int n = device_number(path);
    if (n >= 0) { fill_stat(st, n); return 0; }
    return real_lstat(path, st);
}
int lstat64(const char *path, struct stat64 *st) __attribute__((alias("lstat")));
int fstat(int fd, struct stat *st) {
    configure();
    int n = fd_device(fd);
    if (n >= 0) { fill_stat(st, n); return 0; }
    return real_fstat(fd, st);
}
int fstat64(int fd, struct stat64 *st) __attribute__((alias("fstat")));
int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    configure();
    int n = (flags & AT_EMPTY_PATH) && empty_path(path) ? fd_device(dirfd) : device_number(path);
    if (n >= 0) { fill_stat(st, n); return 0; }
    return real_fstatat(dirfd, path, st, flags);
}
int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) __attribute__((alias("fstatat")));
int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx) {
    configure();
    int n = (flags & AT_EMPTY_PATH) && empty_path(path) ? fd_device(dirfd) : device_number(path);
    if (n >= 0) { fill_statx(sx, n); return 0; }
    return real_statx(dirfd, path, flags, mask, sx);
}
/* The pre-2.33 glibc entry points, for programs built against an older glibc. */
int __xstat(int ver, const char *path, struct stat *st) { return stat(path, st); }
int __xstat64(int ver, const char *path, struct stat64 *st) __attribute__((alias("__xstat")));
int __lxstat(int ver, const char *path, struct stat *st) { return lstat(path, st); }
int __lxstat64(int ver, const char *path, struct stat64 *st) __attribute__((alias("__lxstat")));
int __fxstat(int ver, int fd, struct stat *st) { return fstat(fd, st); }
int __fxstat64(int ver, int fd, struct stat64 *st) __attribute__((alias("__fxstat")));
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags) { return fstatat(dirfd, path, st, flags); }
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags) __attribute__((alias("__fxstatat")));

int access(const char *path, int mode) {
    configure();
    if (device_number(path) >= 0) return (mode & X_OK) ? (errno = EACCES, -1) : 0;
    return real_access(path, mode);
}
/* sysfs: what v4l-utils reads to learn what kind of node it has (/sys/dev/char/81:N/uevent). */
FILE *fopen(const char *path, const char *mode) {
    configure();
    int n, len = 0;
    if (path && sscanf(path, "/sys/dev/char/%d:%d/uevent%n", &(int){0}, &n, &len) == 2 && len > 0 && path[len] == 0
        && strncmp(path, "/sys/dev/char/81:", 17) == 0 && n >= 0 && n < opt_devices && mode[0] == 'r') {
        char *text = NULL;
        if (asprintf(&text, "MAJOR=%d\nMINOR=%d\nDEVNAME=video%d\n", VIDEO_MAJOR, n, n) < 0) { errno = ENOMEM; return NULL; }
        /* A real descriptor: libstdc++'s ifstream reads the fd underneath the FILE. */
        int fd = memfd_create("fakev4l2-uevent", MFD_CLOEXEC);
        size_t size = strlen(text);
        FILE *f = NULL;
        if (fd >= 0 && write(fd, text, size) == (ssize_t)size && lseek(fd, 0, SEEK_SET) == 0) f = fdopen(fd, "r");
        int e = errno;
        if (!f && fd >= 0) real_close(fd);
        free(text);
        errno = e;
        return f;
    }
    return real_fopen(path, mode);
}
FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));

int faccessat(int dirfd, const char *path, int mode, int flags) {
    configure();
    if (device_number(path) >= 0) return (mode & X_OK) ? (errno = EACCES, -1) : 0;
    return real_faccessat(dirfd, path, mode, flags);
}

/* ---- formats ---- */

static int known_format(uint32_t fourcc) {
    return fourcc == V4L2_PIX_FMT_YUYV || fourcc == V4L2_PIX_FMT_NV12 || fourcc == V4L2_PIX_FMT_MJPEG;
}

static int offered(uint32_t fourcc, uint32_t w, uint32_t h) {
    if (fourcc == V4L2_PIX_FMT_MJPEG) { for (size_t i = 0; i < sizeof mjpeg_sizes / sizeof *mjpeg_sizes; i++) if (mjpeg_sizes[i].w == w && mjpeg_sizes[i].h == h) return 1; return 0; }
    if (fourcc != V4L2_PIX_FMT_YUYV && fourcc != V4L2_PIX_FMT_NV12) return 0;
    for (size_t i = 0; i < sizeof yuv_sizes / sizeof *yuv_sizes; i++) if (yuv_sizes[i].w == w && yuv_sizes[i].h == h) return 1;
    return 0;
}

/* The frame rates offered (every format and size): fps, and fps/2 when whole. */
static int rates(uint32_t out[2]) {
    out[0] = (uint32_t)opt_fps;
    if (opt_fps % 2 == 0 && opt_fps >= 2) { out[1] = (uint32_t)opt_fps / 2; return 2; }
    return 1;
}

static void fill_pix(uint32_t fourcc, uint32_t w, uint32_t h, struct v4l2_pix_format *p) {
    memset(p, 0, sizeof *p);
    p->width = w; p->height = h; p->pixelformat = fourcc;
    p->field = V4L2_FIELD_NONE;
    p->bytesperline = fourcc == V4L2_PIX_FMT_YUYV ? w * 2 : fourcc == V4L2_PIX_FMT_NV12 ? w : 0;
    p->sizeimage = (uint32_t)frame_bytes(fourcc, w, h);
    p->colorspace = V4L2_COLORSPACE_SRGB;   /* uvcvideo's default */
    p->priv = V4L2_PIX_FMT_PRIV_MAGIC;     /* the core sets it on every capture format */
}

/* ---- priorities: the v4l2 core's rules ---- */

static int max_prio(struct device *d) {
    if (d->prio_count[V4L2_PRIORITY_RECORD]) return V4L2_PRIORITY_RECORD;
    if (d->prio_count[V4L2_PRIORITY_INTERACTIVE]) return V4L2_PRIORITY_INTERACTIVE;
    if (d->prio_count[V4L2_PRIORITY_BACKGROUND]) return V4L2_PRIORITY_BACKGROUND;
    return V4L2_PRIORITY_UNSET;
}

/* ioctls that change the device's state: refused while another open file has a higher priority. */
static int needs_priority(unsigned long req) {
    switch (req) {
    case VIDIOC_S_FMT: case VIDIOC_REQBUFS: case VIDIOC_STREAMON: case VIDIOC_STREAMOFF: case VIDIOC_S_PARM:
    case VIDIOC_S_CTRL: case VIDIOC_S_EXT_CTRLS: case VIDIOC_S_INPUT: case VIDIOC_S_PRIORITY: case VIDIOC_CREATE_BUFS:
        return 1;
    }
    return 0;
}

static int handled(unsigned long req) {
    switch (req) {
    case VIDIOC_QUERYCAP: case VIDIOC_ENUM_FMT: case VIDIOC_ENUM_FRAMESIZES: case VIDIOC_ENUM_FRAMEINTERVALS:
    case VIDIOC_G_FMT: case VIDIOC_S_FMT: case VIDIOC_TRY_FMT: case VIDIOC_G_PARM: case VIDIOC_S_PARM:
    case VIDIOC_ENUMINPUT: case VIDIOC_G_INPUT: case VIDIOC_S_INPUT: case VIDIOC_G_PRIORITY: case VIDIOC_S_PRIORITY:
    case VIDIOC_QUERYCTRL: case VIDIOC_QUERY_EXT_CTRL: case VIDIOC_QUERYMENU: case VIDIOC_G_CTRL: case VIDIOC_S_CTRL:
    case VIDIOC_G_EXT_CTRLS: case VIDIOC_S_EXT_CTRLS: case VIDIOC_TRY_EXT_CTRLS:
    case VIDIOC_REQBUFS: case VIDIOC_CREATE_BUFS: case VIDIOC_QUERYBUF: case VIDIOC_QBUF: case VIDIOC_DQBUF:
    case VIDIOC_STREAMON: case VIDIOC_STREAMOFF:
    case VIDIOC_SUBSCRIBE_EVENT: case VIDIOC_UNSUBSCRIBE_EVENT: case VIDIOC_DQEVENT:
        return 1;
    }
    return 0;
}

/* ioctls on the buffer queue: only the open file it belongs to may use it. */
static int uses_queue(unsigned long req) {
    switch (req) {
    case VIDIOC_REQBUFS: case VIDIOC_CREATE_BUFS: case VIDIOC_QBUF: case VIDIOC_DQBUF: case VIDIOC_STREAMON: case VIDIOC_STREAMOFF:
        return 1;
    }
    return 0;
}

/* ---- controls: the v4l2 control framework's rules ---- */

static const struct control *control_at(uint32_t id, int *index) {
    for (int i = 0; i < NCTRLS; i++) if (controls[i].id == id) { if (index) *index = i; return &controls[i]; }
    return NULL;
}

static uint32_t control_flags(struct device *d, int i) {
    uint32_t f = controls[i].flags;
    /* Exposure time is inactive while the camera chooses it (uvcvideo does the same). */
    if (i == CTRL_EXPOSURE_ABSOLUTE && d->ctrl[CTRL_EXPOSURE_AUTO] != V4L2_EXPOSURE_MANUAL) f |= V4L2_CTRL_FLAG_INACTIVE;
    return f;
}

/* The control QUERYCTRL/QUERY_EXT_CTRL describe for `id`: exact, or the next with NEXT_CTRL. */
static int query_control(uint32_t id, int *index) {
    uint32_t next = id & (V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);
    uint32_t base = id & ~(uint32_t)(V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);
    if (!next) return control_at(base, index) ? 0 : EINVAL;
    if (!(next & V4L2_CTRL_FLAG_NEXT_CTRL)) return EINVAL;   /* NEXT_COMPOUND alone: there are no compound controls */
    for (int i = 0; i < NCTRLS; i++) if (controls[i].id > base) { *index = i; return 0; }
    return EINVAL;
}

/* Checks (and for integers clamps to the range and step) a new value; 0 or an errno. */
static int validate(int i, int32_t *v) {
    const struct control *c = &controls[i];
    if (c->flags & V4L2_CTRL_FLAG_READ_ONLY) return EACCES;
    if (c->type == V4L2_CTRL_TYPE_MENU) {
        if (*v < c->min || *v > c->max) return ERANGE;
        if (c->skip_mask & (1ull << *v)) return EINVAL;
        return 0;
    }
    int64_t x = *v < c->min ? c->min : *v > c->max ? c->max : *v;
    int64_t off = x - c->min;
    off = c->step * ((off + c->step / 2) / c->step);
    x = c->min + off;
    if (x > c->max) x -= c->step;
    *v = (int32_t)x;
    return 0;
}

/* ---- control events (d->lock held) ---- */

_Static_assert(NCTRLS <= 16, "struct file holds 16 controls' events");

static void queue_event(struct file *f, int i, uint32_t changes) {
    if (!f->subscribed[i]) return;
    if (!f->pending[i]) f->order[f->npending++] = i;
    f->pending[i] |= changes;
    signal_pri(f, 1);
}

/* After `setter` changed controls: an event for every subscriber (the setter itself only
   with V4L2_EVENT_SUB_FL_ALLOW_FEEDBACK), as the control framework sends them. */
static void controls_changed(struct device *d, struct file *setter, const int32_t *before, uint32_t flags_before) {
    uint32_t flags_after = control_flags(d, CTRL_EXPOSURE_ABSOLUTE);
    pthread_mutex_lock(&global);
    pthread_mutex_lock(&d->lock);
    for (int k = 0; k < MAX_FILES; k++) {
        struct file *f = &files[k];
        if (!f->used || f->dev != d) continue;
        for (int i = 0; i < NCTRLS; i++) {
            if (f == setter && !(f->sub_flags[i] & V4L2_EVENT_SUB_FL_ALLOW_FEEDBACK)) continue;
            uint32_t changes = 0;
            if (before[i] != d->ctrl[i]) changes |= V4L2_EVENT_CTRL_CH_VALUE;
            if (i == CTRL_EXPOSURE_ABSOLUTE && flags_before != flags_after) changes |= V4L2_EVENT_CTRL_CH_FLAGS;
            if (changes) queue_event(f, i, changes);
        }
    }
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_unlock(&global);
}

static int subscribe(struct file *f, struct v4l2_event_subscription *sub, int on) {
    struct device *d = f->dev;
    if (!on && sub->type == V4L2_EVENT_ALL) {
        pthread_mutex_lock(&d->lock);
        memset(f->subscribed, 0, sizeof f->subscribed);
        memset(f->pending, 0, sizeof f->pending);
        f->npending = 0;
        signal_pri(f, 0);
        pthread_mutex_unlock(&d->lock);
        return 0;
    }
    if (sub->type != V4L2_EVENT_CTRL) return on ? EINVAL : 0;   /* uvcvideo has control events only */
    int i;
    if (!control_at(sub->id, &i)) return on ? EINVAL : 0;
    pthread_mutex_lock(&d->lock);
    if (on) {
        if (!f->subscribed[i]) {
            f->subscribed[i] = 1;
            f->sub_flags[i] = sub->flags;
            if ((sub->flags & V4L2_EVENT_SUB_FL_SEND_INITIAL) && controls[i].type != V4L2_CTRL_TYPE_CTRL_CLASS)
                queue_event(f, i, V4L2_EVENT_CTRL_CH_VALUE | V4L2_EVENT_CTRL_CH_FLAGS);
        }
    } else if (f->subscribed[i]) {
        f->subscribed[i] = 0;
        if (f->pending[i]) {
            f->pending[i] = 0;
            int n = 0;
            for (int k = 0; k < f->npending; k++) if (f->order[k] != i) f->order[n++] = f->order[k];
            f->npending = n;
        }
        signal_pri(f, f->npending > 0);
    }
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static int dequeue_event(struct file *f, struct v4l2_event *ev) {
    struct device *d = f->dev;
    pthread_mutex_lock(&d->lock);
    if (f->npending == 0) { pthread_mutex_unlock(&d->lock); return ENOENT; }
    int i = f->order[0];
    memmove(f->order, f->order + 1, sizeof f->order[0] * (size_t)(--f->npending));
    uint32_t changes = f->pending[i];
    f->pending[i] = 0;
    const struct control *c = &controls[i];
    memset(ev, 0, sizeof *ev);
    ev->type = V4L2_EVENT_CTRL;
    ev->id = c->id;
    ev->u.ctrl.changes = changes;
    ev->u.ctrl.type = c->type;
    ev->u.ctrl.value = d->ctrl[i];
    ev->u.ctrl.flags = control_flags(d, i);
    ev->u.ctrl.minimum = c->min; ev->u.ctrl.maximum = c->max; ev->u.ctrl.step = c->step; ev->u.ctrl.default_value = c->def;
    ev->pending = (uint32_t)f->npending;
    ev->sequence = f->ev_sequence++;
    clock_gettime(CLOCK_MONOTONIC, &ev->timestamp);
    signal_pri(f, f->npending > 0);
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static int class_has_controls(uint32_t which) {
    for (int i = 0; i < NCTRLS; i++) if (V4L2_CTRL_ID2WHICH(controls[i].id) == which) return 1;
    return 0;
}

static int ext_controls(struct file *fh, unsigned long req, struct v4l2_ext_controls *cs) {
    struct device *d = fh->dev;
    int get = req == VIDIOC_G_EXT_CTRLS, set = req == VIDIOC_S_EXT_CTRLS;
    uint32_t which = cs->which;
    cs->error_idx = cs->count;
    if (which == V4L2_CTRL_WHICH_DEF_VAL) { if (!get) return EINVAL; }
    else if (which != V4L2_CTRL_WHICH_CUR_VAL && !(V4L2_CTRL_ID2WHICH(which) == which && class_has_controls(which))) return EINVAL;
    if (cs->count == 0) return 0;
    if (cs->count > 1024) return EINVAL;
    if (!cs->controls) return EFAULT;
    int idx[1024];
    int32_t vals[1024];
    /* Validation: nothing is changed unless every control is valid. */
    for (uint32_t k = 0; k < cs->count; k++) {
        uint32_t id = cs->controls[k].id;
        int bad = 0;
        if (which && which != V4L2_CTRL_WHICH_DEF_VAL && V4L2_CTRL_ID2WHICH(id) != which) bad = EINVAL;
        else if (!control_at(id, &idx[k])) bad = EINVAL;
        if (!bad && !get) { vals[k] = cs->controls[k].value; bad = validate(idx[k], &vals[k]); }
        if (bad) { cs->error_idx = req == VIDIOC_TRY_EXT_CTRLS ? k : cs->count; return bad; }
    }
    if (get) {
        for (uint32_t k = 0; k < cs->count; k++)
            if (controls[idx[k]].flags & V4L2_CTRL_FLAG_WRITE_ONLY) { cs->error_idx = cs->count; return EACCES; }
        for (uint32_t k = 0; k < cs->count; k++)
            cs->controls[k].value = which == V4L2_CTRL_WHICH_DEF_VAL ? controls[idx[k]].def : d->ctrl[idx[k]];
        return 0;
    }
    int32_t before[NCTRLS];
    memcpy(before, d->ctrl, sizeof before);
    uint32_t flags_before = control_flags(d, CTRL_EXPOSURE_ABSOLUTE);
    for (uint32_t k = 0; k < cs->count; k++) {
        cs->controls[k].value = vals[k];
        if (set) d->ctrl[idx[k]] = vals[k];
    }
    if (set) controls_changed(d, fh, before, flags_before);
    return 0;
}

/* ---- buffers ---- */

/* Adds n buffers; on failure the ones made so far stay counted (free_buffers frees them). */
static int allocate(struct device *d, uint32_t n, size_t len) {
    for (uint32_t end = d->nbufs + n; d->nbufs < end; d->nbufs++) {
        uint32_t i = d->nbufs;
        struct buffer *b = &d->bufs[i];
        memset(b, 0, sizeof *b);
        b->memfd = hide_fd(memfd_create("fakev4l2-buffer", MFD_CLOEXEC));
        if (b->memfd < 0 || ftruncate(b->memfd, (off_t)len) < 0) { d->nbufs++; return errno ? errno : ENOMEM; }
        b->mem = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, b->memfd, 0);
        if (b->mem == MAP_FAILED) { b->mem = NULL; d->nbufs++; return ENOMEM; }
        b->length = len;
        b->info.index = i; b->info.type = V4L2_BUF_TYPE_VIDEO_CAPTURE; b->info.memory = V4L2_MEMORY_MMAP;
        b->info.length = (uint32_t)len; b->info.m.offset = i * (uint32_t)len;   /* the cookie mmap takes */
        b->info.field = V4L2_FIELD_NONE;
        b->info.flags = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_SOE;
    }
    return 0;
}

static size_t buffer_length(struct device *d) {
    return (frame_bytes(d->fourcc, d->width, d->height) + 4095) & ~(size_t)4095;
}

static int check_buffer(struct device *d, struct v4l2_buffer *b) {
    if (b->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
    if (b->index >= d->nbufs) return EINVAL;
    return 0;
}

/* ---- the ioctls ---- */

static int fake_ioctl(struct file *fh, unsigned long req, void *arg) {
    struct device *d = fh->dev;
    if (!handled(req)) return ENOTTY;   /* before looking at the argument, as the core does */
    if (opt_noparm && (req == VIDIOC_G_PARM || req == VIDIOC_S_PARM)) return ENOTTY;
    /* A camera without controls: the core answers every control id with EINVAL. */
    if (opt_noctrls && (req == VIDIOC_QUERYCTRL || req == VIDIOC_QUERY_EXT_CTRL || req == VIDIOC_QUERYMENU ||
                        req == VIDIOC_G_CTRL || req == VIDIOC_S_CTRL || req == VIDIOC_G_EXT_CTRLS ||
                        req == VIDIOC_S_EXT_CTRLS || req == VIDIOC_TRY_EXT_CTRLS)) return EINVAL;
    if (!arg) return EFAULT;
    /* A camera without brightness (asked for by id: v4l2_queryctrl and v4l2_control start with it). */
    if (opt_nobrightness && (req == VIDIOC_QUERYCTRL || req == VIDIOC_G_CTRL || req == VIDIOC_S_CTRL) &&
        *(const uint32_t *)arg == V4L2_CID_BRIGHTNESS) return EINVAL;
    if (needs_priority(req) && fh->prio < max_prio(d)) return EBUSY;
    if (uses_queue(req) && d->owner && d->owner != fh) return EBUSY;
    switch (req) {
    case VIDIOC_QUERYCAP: {
        struct v4l2_capability *c = arg;
        memset(c, 0, sizeof *c);
        snprintf((char *)c->driver, sizeof c->driver, "fakev4l2");
        snprintf((char *)c->card, sizeof c->card, "%s", opt_card);
        snprintf((char *)c->bus_info, sizeof c->bus_info, "platform:fakev4l2-%d", d->index);
        struct utsname u;
        unsigned a = 6, b = 1, k = 0;
        if (uname(&u) == 0) sscanf(u.release, "%u.%u.%u", &a, &b, &k);
        c->version = (a << 16) | (b << 8) | (k > 255 ? 255 : k);   /* as the core: the kernel's version */
        c->device_caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING | V4L2_CAP_EXT_PIX_FORMAT;
        c->capabilities = c->device_caps | V4L2_CAP_DEVICE_CAPS;
        return 0;
    }
    case VIDIOC_ENUM_FMT: {
        struct v4l2_fmtdesc *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || f->index >= sizeof formats / sizeof *formats) return EINVAL;
        uint32_t i = f->index;
        memset(f, 0, sizeof *f);
        f->index = i; f->type = V4L2_BUF_TYPE_VIDEO_CAPTURE; f->pixelformat = formats[i];
        if (formats[i] == V4L2_PIX_FMT_MJPEG) f->flags = V4L2_FMT_FLAG_COMPRESSED;
        snprintf((char *)f->description, sizeof f->description, "%s",
                 formats[i] == V4L2_PIX_FMT_YUYV ? "YUYV 4:2:2" : formats[i] == V4L2_PIX_FMT_NV12 ? "Y/CbCr 4:2:0" : "Motion-JPEG");
        return 0;
    }
    case VIDIOC_ENUM_FRAMESIZES: {
        struct v4l2_frmsizeenum *s = arg;
        const struct size *list = s->pixel_format == V4L2_PIX_FMT_MJPEG ? mjpeg_sizes : yuv_sizes;
        size_t n = s->pixel_format == V4L2_PIX_FMT_MJPEG ? 1 : sizeof yuv_sizes / sizeof *yuv_sizes;
        if (!known_format(s->pixel_format) || s->index >= n) return EINVAL;
        uint32_t i = s->index, pf = s->pixel_format;
        memset(s, 0, sizeof *s);
        s->index = i; s->pixel_format = pf;
        s->type = V4L2_FRMSIZE_TYPE_DISCRETE;
        s->discrete.width = list[i].w; s->discrete.height = list[i].h;
        return 0;
    }
    case VIDIOC_ENUM_FRAMEINTERVALS: {
        struct v4l2_frmivalenum *v = arg;
        uint32_t r[2];
        int n = rates(r);
        if (!offered(v->pixel_format, v->width, v->height) || v->index >= (uint32_t)n) return EINVAL;
        uint32_t i = v->index, pf = v->pixel_format, w = v->width, h = v->height;
        memset(v, 0, sizeof *v);
        v->index = i; v->pixel_format = pf; v->width = w; v->height = h;
        v->type = V4L2_FRMIVAL_TYPE_DISCRETE;
        v->discrete.numerator = 1; v->discrete.denominator = r[i];
        return 0;
    }
    case VIDIOC_G_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
        fill_pix(d->fourcc, d->width, d->height, &f->fmt.pix);
        return 0;
    }
    case VIDIOC_TRY_FMT:
    case VIDIOC_S_FMT: {
        struct v4l2_format *f = arg;
        if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
        uint32_t fourcc = f->fmt.pix.pixelformat, w = f->fmt.pix.width, h = f->fmt.pix.height;
        /* Like uvcvideo: an unknown format becomes the default, an unknown size the nearest offered. */
        if (!known_format(fourcc)) fourcc = V4L2_PIX_FMT_YUYV;
        if (!offered(fourcc, w, h)) {
            const struct size *list = fourcc == V4L2_PIX_FMT_MJPEG ? mjpeg_sizes : yuv_sizes;
            size_t n = fourcc == V4L2_PIX_FMT_MJPEG ? 1 : sizeof yuv_sizes / sizeof *yuv_sizes;
            uint64_t best = UINT64_MAX;
            for (size_t i = 0; i < n; i++) {
                int64_t dw = (int64_t)list[i].w - w, dh = (int64_t)list[i].h - h;
                uint64_t dist = (uint64_t)(dw * dw + dh * dh);
                if (dist < best) { best = dist; w = list[i].w; h = list[i].h; }
            }
        }
        if (req == VIDIOC_S_FMT) {
            pthread_mutex_lock(&d->lock);
            int busy = d->nbufs > 0 || d->streaming;
            if (!busy) { d->fourcc = fourcc; d->width = w; d->height = h; }
            pthread_mutex_unlock(&d->lock);
            if (busy) return EBUSY;
        }
        fill_pix(fourcc, w, h, &f->fmt.pix);
        return 0;
    }
    case VIDIOC_G_PARM:
    case VIDIOC_S_PARM: {
        struct v4l2_streamparm *p = arg;
        if (p->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
        if (req == VIDIOC_S_PARM) {
            /* uvcvideo refuses a new rate while streaming; parm-live emulates a driver that takes it. */
            if (d->streaming && !opt_parm_live) return EBUSY;
            /* The offered rate nearest to the one asked for (uvcvideo's rule). */
            struct v4l2_fract t = p->parm.capture.timeperframe;
            uint32_t r[2] = {0, 0};
            int n = rates(r);
            double want = t.numerator && t.denominator ? (double)t.denominator / t.numerator : (double)r[0];
            uint32_t best = r[0];
            for (int i = 1; i < n; i++) if (abs((int)(want * 1000) - (int)r[i] * 1000) < abs((int)(want * 1000) - (int)best * 1000)) best = r[i];
            pthread_mutex_lock(&d->lock);
            if (d->streaming) { d->fps_before = d->fps; clock_gettime(CLOCK_MONOTONIC, &d->fps_at); }
            d->fps = best;
            pthread_mutex_unlock(&d->lock);
        }
        memset(&p->parm, 0, sizeof p->parm);
        p->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
        p->parm.capture.timeperframe.numerator = 1;
        p->parm.capture.timeperframe.denominator = d->fps;
        return 0;
    }
    case VIDIOC_ENUMINPUT: {
        struct v4l2_input *in = arg;
        if (in->index != 0) return EINVAL;
        memset(in, 0, sizeof *in);
        snprintf((char *)in->name, sizeof in->name, "Camera 1");
        in->type = V4L2_INPUT_TYPE_CAMERA;
        return 0;
    }
    case VIDIOC_G_INPUT:
        *(int *)arg = 0;
        return 0;
    case VIDIOC_S_INPUT:
        return *(int *)arg == 0 ? 0 : EINVAL;
    case VIDIOC_G_PRIORITY:
        pthread_mutex_lock(&d->lock);
        *(uint32_t *)arg = (uint32_t)max_prio(d);
        pthread_mutex_unlock(&d->lock);
        return 0;
    case VIDIOC_S_PRIORITY: {
        uint32_t p = *(uint32_t *)arg;
        if (p != V4L2_PRIORITY_BACKGROUND && p != V4L2_PRIORITY_INTERACTIVE && p != V4L2_PRIORITY_RECORD) return EINVAL;
        pthread_mutex_lock(&d->lock);
        d->prio_count[fh->prio]--;
        fh->prio = (int)p;
        d->prio_count[fh->prio]++;
        pthread_mutex_unlock(&d->lock);
        return 0;
    }
    case VIDIOC_QUERYCTRL: {
        struct v4l2_queryctrl *q = arg;
        int i = 0, e = query_control(q->id, &i);
        if (e) return e;
        const struct control *c = &controls[i];
        memset(q, 0, sizeof *q);
        q->id = c->id; q->type = c->type;
        snprintf((char *)q->name, sizeof q->name, "%s", c->name);
        q->minimum = c->min; q->maximum = c->max; q->step = c->step; q->default_value = c->def;
        q->flags = control_flags(d, i);
        return 0;
    }
    case VIDIOC_QUERY_EXT_CTRL: {
        struct v4l2_query_ext_ctrl *q = arg;
        int i = 0, e = query_control(q->id, &i);
        if (e) return e;
        const struct control *c = &controls[i];
        memset(q, 0, sizeof *q);
        q->id = c->id; q->type = c->type;
        snprintf(q->name, sizeof q->name, "%s", c->name);
        q->minimum = c->min; q->maximum = c->max; q->step = (uint64_t)c->step; q->default_value = c->def;
        q->flags = control_flags(d, i);
        q->elem_size = c->type == V4L2_CTRL_TYPE_CTRL_CLASS ? 0 : 4;
        q->elems = 1;
        return 0;
    }
    case VIDIOC_QUERYMENU: {
        struct v4l2_querymenu *m = arg;
        int i;
        const struct control *c = control_at(m->id, &i);
        if (!c || c->type != V4L2_CTRL_TYPE_MENU) return EINVAL;
        if ((int64_t)m->index < c->min || (int64_t)m->index > c->max || (c->skip_mask & (1ull << m->index))) return EINVAL;
        uint32_t id = m->id, index = m->index;
        memset(m, 0, sizeof *m);
        m->id = id; m->index = index;
        snprintf((char *)m->name, sizeof m->name, "%s", exposure_menu[index]);
        return 0;
    }
    case VIDIOC_G_CTRL: {
        struct v4l2_control *c = arg;
        int i;
        if (!control_at(c->id, &i)) return EINVAL;
        if (controls[i].flags & V4L2_CTRL_FLAG_WRITE_ONLY) return EACCES;
        c->value = d->ctrl[i];
        return 0;
    }
    case VIDIOC_S_CTRL: {
        struct v4l2_control *c = arg;
        int i;
        if (!control_at(c->id, &i)) return EINVAL;
        int32_t v = c->value;
        int e = validate(i, &v);
        if (e) return e;
        int32_t before[NCTRLS];
        memcpy(before, d->ctrl, sizeof before);
        uint32_t flags_before = control_flags(d, CTRL_EXPOSURE_ABSOLUTE);
        d->ctrl[i] = v; c->value = v;
        controls_changed(d, fh, before, flags_before);
        return 0;
    }
    case VIDIOC_G_EXT_CTRLS:
    case VIDIOC_S_EXT_CTRLS:
    case VIDIOC_TRY_EXT_CTRLS:
        return ext_controls(fh, req, arg);
    case VIDIOC_SUBSCRIBE_EVENT:
    case VIDIOC_UNSUBSCRIBE_EVENT:
        return subscribe(fh, arg, req == VIDIOC_SUBSCRIBE_EVENT);
    case VIDIOC_DQEVENT:
        return dequeue_event(fh, arg);
    case VIDIOC_REQBUFS: {
        struct v4l2_requestbuffers *r = arg;
        if (r->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || r->memory != V4L2_MEMORY_MMAP) return EINVAL;
        if (d->streaming) return EBUSY;
        r->flags = 0;   /* no cache hints: V4L2_MEMORY_FLAG_NON_COHERENT is not kept */
        memset(r->reserved, 0, sizeof r->reserved);
        r->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP | V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS;
        pthread_mutex_lock(&d->lock);
        free_buffers(d);
        d->owner = NULL;
        int e = 0;
        uint32_t n = r->count > MAX_BUFFERS ? MAX_BUFFERS : r->count;
        if (n > 0) { e = allocate(d, n, buffer_length(d)); if (e) free_buffers(d); else d->owner = fh; }
        r->count = d->nbufs;
        pthread_mutex_unlock(&d->lock);
        return e;
    }
    case VIDIOC_CREATE_BUFS: {
        struct v4l2_create_buffers *c = arg;
        if (c->format.type != V4L2_BUF_TYPE_VIDEO_CAPTURE || c->memory != V4L2_MEMORY_MMAP) return EINVAL;
        c->flags = 0;
        memset(c->reserved, 0, sizeof c->reserved);
        c->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP | V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS;
        pthread_mutex_lock(&d->lock);
        c->index = d->nbufs;
        size_t need = frame_bytes(d->fourcc, d->width, d->height);
        int e = 0;
        if (c->count == 0) { }
        else if (c->format.fmt.pix.sizeimage < need && c->format.fmt.pix.sizeimage != 0) e = EINVAL;
        else {
            size_t len = c->format.fmt.pix.sizeimage > need ? c->format.fmt.pix.sizeimage : need;
            len = (len + 4095) & ~(size_t)4095;
            uint32_t n = c->count;
            if (n > MAX_BUFFERS - d->nbufs) n = MAX_BUFFERS - d->nbufs;
            if (n == 0) e = ENOBUFS;
            else { e = allocate(d, n, len); c->count = n; if (!e) d->owner = fh; }
        }
        pthread_mutex_unlock(&d->lock);
        return e;
    }
    case VIDIOC_QUERYBUF: {
        struct v4l2_buffer *b = arg;
        pthread_mutex_lock(&d->lock);
        int e = check_buffer(d, b);
        if (!e) *b = d->bufs[b->index].info;
        pthread_mutex_unlock(&d->lock);
        return e;
    }
    case VIDIOC_QBUF: {
        struct v4l2_buffer *b = arg;
        pthread_mutex_lock(&d->lock);
        int e = check_buffer(d, b);
        if (!e && b->memory != V4L2_MEMORY_MMAP) e = EINVAL;
        struct buffer *x = e ? NULL : &d->bufs[b->index];
        if (x && (x->queued || x->done)) e = EINVAL;   /* already queued */
        if (!e) {
            x->queued = 1;
            x->info.flags = (x->info.flags & ~(uint32_t)(V4L2_BUF_FLAG_DONE | V4L2_BUF_FLAG_ERROR)) | V4L2_BUF_FLAG_QUEUED;
            x->info.bytesused = 0;
            *b = x->info;
        }
        pthread_mutex_unlock(&d->lock);
        return e;
    }
    case VIDIOC_DQBUF: {
        struct v4l2_buffer *b = arg;
        if (b->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || b->memory != V4L2_MEMORY_MMAP) return EINVAL;
        pthread_mutex_lock(&d->lock);
        for (;;) {
            if (!d->streaming) { pthread_mutex_unlock(&d->lock); return EINVAL; }
            if (d->ndone > 0 || d->gone) break;
            if (real_fcntl(fh->efd, F_GETFL) & O_NONBLOCK) { pthread_mutex_unlock(&d->lock); return EAGAIN; }
            pthread_cond_wait(&d->cond, &d->lock);
        }
        if (d->ndone == 0) { int e = d->gone; pthread_mutex_unlock(&d->lock); return e; }
        uint32_t i = (uint32_t)d->done_order[0];
        memmove(d->done_order, d->done_order + 1, sizeof d->done_order[0] * (size_t)(--d->ndone));
        d->bufs[i].done = 0;
        d->bufs[i].info.flags &= ~(uint32_t)V4L2_BUF_FLAG_DONE;
        *b = d->bufs[i].info;
        device_changed(d);
        pthread_mutex_unlock(&d->lock);
        return 0;
    }
    case VIDIOC_STREAMON: {
        if (*(int *)arg != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
        pthread_mutex_lock(&d->lock);
        if (d->nbufs == 0) { pthread_mutex_unlock(&d->lock); return EINVAL; }
        if (d->streaming) { pthread_mutex_unlock(&d->lock); return 0; }
        d->streaming = 1;
        d->sequence = 0;
        d->owner = fh;
        pthread_mutex_unlock(&d->lock);
        if (pthread_create(&d->thread, NULL, sensor, d) != 0) {
            pthread_mutex_lock(&d->lock); d->streaming = 0; pthread_mutex_unlock(&d->lock);
            return ENOMEM;
        }
        return 0;
    }
    case VIDIOC_STREAMOFF:
        if (*(int *)arg != V4L2_BUF_TYPE_VIDEO_CAPTURE) return EINVAL;
        stop_streaming(d);
        return opt_streamoff_eio ? EIO : 0;
    default:
        /* Not implemented by uvcvideo either: standards, DV timings, tuners, audio, overlay,
           selection, JPEG compression, LOG_STATUS, EXPBUF (no DMABUF). */
        return ENOTTY;
    }
}

int ioctl(int fd, unsigned long req, ...) {
    configure();
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    struct file *f = file_for(fd);
    if (!f) return real_ioctl(fd, req, arg);
    int e = fake_ioctl(f, req, arg);
    if (e) { errno = e; return -1; }
    return 0;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    configure();
    struct file *f = file_for(fd);
    if (!f) return real_mmap(addr, len, prot, flags, fd, off);
    struct device *d = f->dev;
    /* vb2's checks: a shared mapping of one whole buffer, named by its offset cookie. */
    if (!(flags & MAP_SHARED)) { errno = EINVAL; return MAP_FAILED; }
    pthread_mutex_lock(&d->lock);
    for (uint32_t i = 0; i < d->nbufs; i++) {
        struct buffer *b = &d->bufs[i];
        if ((off_t)b->info.m.offset != off) continue;
        if (len == 0 || len > b->length) break;
        void *p = real_mmap(addr, len, prot, flags, b->memfd, 0);
        pthread_mutex_unlock(&d->lock);
        return p;
    }
    pthread_mutex_unlock(&d->lock);
    errno = EINVAL;
    return MAP_FAILED;
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

ssize_t read(int fd, void *buf, size_t n) {
    configure();
    if (file_for(fd)) { errno = EINVAL; return -1; }   /* no read() I/O: streaming only, as uvcvideo */
    return real_read(fd, buf, n);
}

/* ---- waiting: POLLPRI (a control event waits) on the device fd ----
   The device fd is an eventfd, which never reports POLLPRI by itself. When a poll, ppoll,
   select or pselect asks for POLLPRI (or the exception set) on a device fd, the file's event
   eventfd is polled beside it and reported as that fd's POLLPRI. Everything else goes
   straight to the kernel. epoll likewise: a device fd registered for EPOLLPRI brings the
   event eventfd into the same epoll set, under a marker that epoll_wait turns back into
   EPOLLPRI with the program's own data. */

static int wait_translated(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask, int *translated) {
    nfds_t extra = 0;
    for (nfds_t i = 0; i < n; i++) if ((fds[i].events & POLLPRI) && file_for(fds[i].fd)) extra++;
    *translated = extra > 0;
    if (!extra) return 0;
    struct pollfd *all = malloc(sizeof *all * (n + extra));
    nfds_t *from = malloc(sizeof *from * extra);
    if (!all || !from) { free(all); free(from); errno = ENOMEM; return -1; }
    memcpy(all, fds, sizeof *all * n);
    nfds_t k = 0;
    for (nfds_t i = 0; i < n; i++) {
        struct file *f = (fds[i].events & POLLPRI) ? file_for(fds[i].fd) : NULL;
        if (!f) continue;
        all[n + k] = (struct pollfd){ .fd = f->pfd, .events = POLLIN };
        from[k++] = i;
    }
    int r = real_ppoll(all, n + extra, ts, mask);
    if (r >= 0) {
        for (nfds_t i = 0; i < n; i++) fds[i].revents = all[i].revents;
        for (nfds_t j = 0; j < extra; j++) if (all[n + j].revents & POLLIN) fds[from[j]].revents |= POLLPRI;
        r = 0;
        for (nfds_t i = 0; i < n; i++) if (fds[i].revents) r++;
    }
    int e = errno;
    free(all); free(from);
    errno = e;
    return r;
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask) {
    configure();
    int translated;
    int r = wait_translated(fds, n, ts, mask, &translated);
    return translated ? r : real_ppoll(fds, n, ts, mask);
}

int poll(struct pollfd *fds, nfds_t n, int timeout) {
    configure();
    struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000L };
    int translated;
    int r = wait_translated(fds, n, timeout < 0 ? NULL : &ts, NULL, &translated);
    return translated ? r : real_poll(fds, n, timeout);
}
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len) { return poll(fds, n, timeout); }
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask, size_t len) { return ppoll(fds, n, ts, mask); }

/* select through ppoll, when an exception set names a device fd; -2: not translated. */
static int select_translated(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts, const sigset_t *mask) {
    int ours = 0;
    for (int fd = 0; x && fd < nfds && fd < FD_SETSIZE; fd++) if (FD_ISSET(fd, x) && file_for(fd)) ours = 1;
    if (!ours) return -2;
    struct pollfd *fds = calloc((size_t)nfds, sizeof *fds);
    if (!fds) { errno = ENOMEM; return -1; }
    nfds_t n = 0;
    for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
        short ev = (short)((r && FD_ISSET(fd, r) ? POLLIN : 0) | (w && FD_ISSET(fd, w) ? POLLOUT : 0) | (x && FD_ISSET(fd, x) ? POLLPRI : 0));
        if (ev) fds[n++] = (struct pollfd){ .fd = fd, .events = ev };
    }
    int translated;
    int got = wait_translated(fds, n, ts, mask, &translated);
    if (got < 0) { int e = errno; free(fds); errno = e; return -1; }
    int count = 0;
    if (r) FD_ZERO(r);
    if (w) FD_ZERO(w);
    if (x) FD_ZERO(x);
    for (nfds_t i = 0; i < n; i++) {
        short re = fds[i].revents;
        if (re & POLLNVAL) { free(fds); errno = EBADF; return -1; }
        if (r && (fds[i].events & POLLIN) && (re & (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR))) { FD_SET(fds[i].fd, r); count++; }
        if (w && (fds[i].events & POLLOUT) && (re & (POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR))) { FD_SET(fds[i].fd, w); count++; }
        if (x && (fds[i].events & POLLPRI) && (re & POLLPRI)) { FD_SET(fds[i].fd, x); count++; }
    }
    free(fds);
    return count;
}

int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv) {
    configure();
    struct timespec ts, start, end;
    if (tv) { ts.tv_sec = tv->tv_sec; ts.tv_nsec = tv->tv_usec * 1000L; }
    clock_gettime(CLOCK_MONOTONIC, &start);
    int got = select_translated(nfds, r, w, x, tv ? &ts : NULL, NULL);
    if (got == -2) return real_select(nfds, r, w, x, tv);
    if (tv) {   /* Linux's select leaves the time not slept in *tv */
        clock_gettime(CLOCK_MONOTONIC, &end);
        long long left = (long long)tv->tv_sec * 1000000 + tv->tv_usec
                       - ((long long)(end.tv_sec - start.tv_sec) * 1000000 + (end.tv_nsec - start.tv_nsec) / 1000);
        if (left < 0) left = 0;
        tv->tv_sec = left / 1000000; tv->tv_usec = left % 1000000;
    }
    return got;
}

int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts, const sigset_t *mask) {
    configure();
    int got = select_translated(nfds, r, w, x, ts, mask);
    return got == -2 ? real_pselect(nfds, r, w, x, ts, mask) : got;
}

/* ---- syscall(2): libv4l2 (v4l2_open, v4l2_ioctl, ...) and libv4lconvert call the kernel
   through syscall(SYS_openat, ...) rather than the libc wrappers; the device calls among them
   are answered as above, everything else goes to the kernel. ---- */

static long result(long r, int e) { if (r < 0) { errno = e; return -1; } return r; }

long syscall(long n, ...) {
    configure();
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    switch (n) {
    case SYS_openat: {
        int r = fake_open((const char *)b, (int)c);
        if (r != -2) return r;
        break;
    }
    case SYS_open: {
        int r = fake_open((const char *)a, (int)b);
        if (r != -2) return r;
        break;
    }
    case SYS_close:
        return close((int)a);
    case SYS_ioctl: {
        struct file *fh = file_for((int)a);
        if (!fh) break;
        int err = fake_ioctl(fh, (unsigned long)b, (void *)c);
        return result(err ? -1 : 0, err);
    }
    case SYS_read:
        if (file_for((int)a)) return result(-1, EINVAL);
        break;
    case SYS_mmap:
        if (file_for((int)e)) return (long)mmap((void *)a, (size_t)b, (int)c, (int)d, (int)e, (off_t)f);
        break;
    case SYS_dup:
        return dup((int)a);
    case SYS_dup2:
        return dup2((int)a, (int)b);
    case SYS_dup3:
        return dup3((int)a, (int)b, (int)c);
    case SYS_fcntl:
        return fcntl((int)a, (int)b, (void *)c);
    case SYS_fstat:
        return fstat((int)a, (struct stat *)b);
    case SYS_newfstatat:
        return fstatat((int)a, (const char *)b, (struct stat *)c, (int)d);
    case SYS_statx:
        return statx((int)a, (const char *)b, (int)c, (unsigned)d, (struct statx *)e);
    }
    return real_syscall(n, a, b, c, d, e, f);
}

/* An epoll registration of a device fd with EPOLLPRI: its event eventfd is in the set too,
   with data pointing here. */
struct epoll_pri { int used, epfd, fd, pfd; epoll_data_t data; };
static struct epoll_pri epoll_pris[64];

static struct epoll_pri *epoll_pri_find(int epfd, int fd) {
    for (int i = 0; i < 64; i++) if (epoll_pris[i].used && epoll_pris[i].epfd == epfd && epoll_pris[i].fd == fd) return &epoll_pris[i];
    return NULL;
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
    configure();
    int r = real_epoll_ctl(epfd, op, fd, ev);
    struct file *f = file_for(fd);
    if (r < 0 || !f) return r;
    pthread_mutex_lock(&global);
    struct epoll_pri *p = epoll_pri_find(epfd, fd);
    int want = op != EPOLL_CTL_DEL && ev && (ev->events & EPOLLPRI);
    if (want) {
        if (!p) for (int i = 0; i < 64 && !p; i++) if (!epoll_pris[i].used) p = &epoll_pris[i];
        if (p) {
            int had = p->used && p->pfd == f->pfd;
            p->used = 1; p->epfd = epfd; p->fd = fd; p->pfd = f->pfd; p->data = ev->data;
            struct epoll_event mine = { .events = EPOLLIN | (ev->events & EPOLLET), .data.ptr = p };
            if (real_epoll_ctl(epfd, had ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, f->pfd, &mine) < 0 && errno == EEXIST)
                real_epoll_ctl(epfd, EPOLL_CTL_MOD, f->pfd, &mine);
        }
    } else if (p) {
        real_epoll_ctl(epfd, EPOLL_CTL_DEL, p->pfd, NULL);
        p->used = 0;
    }
    pthread_mutex_unlock(&global);
    return r;
}

static int is_marker(const struct epoll_event *e) {
    const struct epoll_pri *p = e->data.ptr;
    return p >= epoll_pris && p < epoll_pris + 64;
}

/* Turns the marker entries back into EPOLLPRI on the program's registration: merged into
   its entry when that came too, else in the marker's place. */
static int epoll_translate(struct epoll_event *evs, int n) {
    if (n <= 0) return n;
    for (int i = 0; i < n; i++) {
        if (!is_marker(&evs[i])) continue;
        struct epoll_pri *p = evs[i].data.ptr;
        int merged = 0;
        for (int k = 0; k < n; k++)
            if (!is_marker(&evs[k]) && evs[k].events && evs[k].data.u64 == p->data.u64) { evs[k].events |= EPOLLPRI; merged = 1; }
        evs[i].data = p->data;                     /* no longer a marker */
        evs[i].events = merged ? 0 : EPOLLPRI;     /* 0: dropped below (epoll never reports 0) */
    }
    int out = 0;
    for (int i = 0; i < n; i++) if (evs[i].events) evs[out++] = evs[i];
    return out;
}

int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask) {
    configure();
    return epoll_translate(evs, real_epoll_pwait(epfd, evs, max, timeout, mask));
}

int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout) {
    return epoll_pwait(epfd, evs, max, timeout, NULL);
}
