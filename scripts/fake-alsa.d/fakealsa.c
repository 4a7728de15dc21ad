/*
 * An emulated ALSA capture device (issue 28 item 2): an ioplug PCM ("type reelfake") that
 * delivers Reel's synthetic test signal in real time, paced by a timer, its sample clock
 * running a set number of ppm off CLOCK_MONOTONIC. scripts/fake-alsa makes it ALSA's
 * `default` PCM for one command, so that arecord, ffmpeg -f alsa and reel record all read it
 * through libasound's own API.
 *
 * The signal (every channel alike):
 * - a 1 kHz tone at 0.1 of full scale;
 * - a click at the first sample at or after every whole `click` seconds of the device clock:
 *   one sample at +0.99 of full scale, then the click's number k (the device time / `click`,
 *   32 bits, most significant first) as 4 samples a bit at +0.5 (1) or -0.5 (0), then the
 *   tone again. The device clock is CLOCK_MONOTONIC at the moment the PCM starts; sample n
 *   is at that time + n / rate of the device clock, and is delivered at the monotonic time
 *   start + n / (rate * (1 + ppm / 1e6)).
 *
 * Options, in FAKE_ALSA (comma-separated): ppm=N (the device clock's error, default 0),
 * click=SECONDS (default 1), busy (opening fails with EBUSY), denied (opening fails with
 * EACCES, as for a user outside the `audio` group), eio=FRAMES (a read past FRAMES
 * frames fails with EIO), log=PATH (each click's number and the CLOCK_MONOTONIC time its mark
 * was made at, `K NS` a line, appended as it is read: the ground truth an A/V sync check
 * compares a recording with).
 */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <alsa/pcm_external.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    snd_pcm_ioplug_t io;
    int timer;
    double ppm;
    double click;
    int64_t click_ns;
    long long eio_after;
    FILE *log;                  /* log=PATH: clicks and when they were made */
    uint64_t start_ns;          /* CLOCK_MONOTONIC when started */
    uint64_t device_start_ns;   /* the device clock at sample 0 */
    snd_pcm_uframes_t delivered; /* frames handed to the application (transfer) */
    int running;
} fake_t;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Frames the device has produced since it started. */
static snd_pcm_uframes_t produced(const fake_t *f) {
    if (!f->running) return f->delivered;
    double seconds = (double)(now_ns() - f->start_ns) / 1e9;
    return (snd_pcm_uframes_t)floor(seconds * f->io.rate * (1.0 + f->ppm / 1e6));
}

/* ceil(a / b) for b > 0. */
static __int128 ceil_div(__int128 a, __int128 b) {
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* The first sample at or after device time t (ns). */
static __int128 first_sample_at(const fake_t *f, __int128 t) {
    return ceil_div((t - (__int128)f->device_start_ns) * f->io.rate, 1000000000);
}

/* The signal at sample n, in [-1, 1]. In whole nanoseconds and samples: a click on a sample
 * boundary is that sample's, never lost to rounding. */
static double sample_at(const fake_t *f, uint64_t n) {
    __int128 period = f->click_ns;
    /* The last click at or before sample n: k from the device time, then corrected. */
    __int128 t = (__int128)f->device_start_ns + (__int128)n * 1000000000 / f->io.rate;
    __int128 k = t / period;
    while (first_sample_at(f, (k + 1) * period) <= (__int128)n) k++;
    while (k > 0 && first_sample_at(f, k * period) > (__int128)n) k--;
    __int128 first = first_sample_at(f, k * period);
    __int128 within = (__int128)n - first;
    if (k * period >= (__int128)f->device_start_ns && within >= 0 && within < 1 + 32 * 4) {
        if (within == 0) return 0.99;
        int bit = (int)((within - 1) / 4);
        return (((uint64_t)k >> (31 - bit)) & 1) ? 0.5 : -0.5;
    }
    return 0.1 * sin(2 * M_PI * 1000.0 * (double)n / f->io.rate);
}

static int fake_start(snd_pcm_ioplug_t *io) {
    fake_t *f = io->private_data;
    f->start_ns = now_ns();
    f->device_start_ns = f->start_ns;
    f->delivered = 0;
    f->running = 1;
    double period = (double)io->period_size / (io->rate * (1.0 + f->ppm / 1e6));
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)period;
    its.it_interval.tv_nsec = (long)((period - (double)its.it_interval.tv_sec) * 1e9);
    if (its.it_interval.tv_sec == 0 && its.it_interval.tv_nsec == 0) its.it_interval.tv_nsec = 1000000;
    its.it_value = its.it_interval;
    if (timerfd_settime(f->timer, 0, &its, NULL) != 0) return -errno;
    return 0;
}

static int fake_stop(snd_pcm_ioplug_t *io) {
    fake_t *f = io->private_data;
    f->running = 0;
    struct itimerspec off;
    memset(&off, 0, sizeof off);
    if (timerfd_settime(f->timer, 0, &off, NULL) != 0) return -errno;
    return 0;
}

static int fake_prepare(snd_pcm_ioplug_t *io) {
    fake_t *f = io->private_data;
    f->delivered = 0;
    f->running = 0;
    return 0;
}

static snd_pcm_sframes_t fake_pointer(snd_pcm_ioplug_t *io) {
    fake_t *f = io->private_data;
    snd_pcm_uframes_t made = produced(f);
    /* More than a buffer ahead of what the application read: an overrun. */
    if (made > f->delivered + io->buffer_size) return -EPIPE;
    return (snd_pcm_sframes_t)(made % io->buffer_size);
}

static snd_pcm_sframes_t fake_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
                                       snd_pcm_uframes_t offset, snd_pcm_uframes_t size) {
    fake_t *f = io->private_data;
    /* --eio: the device fails once it has made that many frames (a read gets EIO; a negative
     * pointer would be taken for an overrun and recovered from). */
    if (f->eio_after >= 0 && (long long)(f->delivered + size) > f->eio_after) return -EIO;
    for (snd_pcm_uframes_t i = 0; i < size; i++) {
        double v = sample_at(f, (uint64_t)(f->delivered + i));
        for (unsigned c = 0; c < io->channels; c++) {
            const snd_pcm_channel_area_t *a = &areas[c];
            char *p = (char *)a->addr + (a->first + a->step * (offset + i)) / 8;
            switch (io->format) {
            case SND_PCM_FORMAT_S16_LE: { int16_t s = (int16_t)lrint(v * 32767.0); memcpy(p, &s, 2); break; }
            case SND_PCM_FORMAT_S32_LE: { int32_t s = (int32_t)llrint(v * 2147483647.0); memcpy(p, &s, 4); break; }
            case SND_PCM_FORMAT_FLOAT_LE: { float s = (float)v; memcpy(p, &s, 4); break; }
            default: return -EINVAL;
            }
        }
    }
    if (f->log) {
        /* Each click whose mark was read now: its number and the monotonic time it was made. */
        __int128 period = f->click_ns;
        for (__int128 k = ((__int128)f->device_start_ns + (__int128)f->delivered * 1000000000 / io->rate) / period;; k++) {
            __int128 mark = first_sample_at(f, k * period);
            if (mark < (__int128)f->delivered) continue;
            if (mark >= (__int128)(f->delivered + size)) break;
            double at = (double)f->start_ns + (double)mark * 1e9 / (io->rate * (1.0 + f->ppm / 1e6));
            fprintf(f->log, "%lld %.0f\n", (long long)k, at);
        }
        fflush(f->log);
    }
    f->delivered += size;
    return (snd_pcm_sframes_t)size;
}

static int fake_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds, unsigned short *revents) {
    fake_t *f = io->private_data;
    uint64_t ticks;
    if (nfds >= 1 && (pfd[0].revents & POLLIN)) {
        if (read(f->timer, &ticks, sizeof ticks) < 0 && errno != EAGAIN) return -errno;
    }
    snd_pcm_uframes_t made = produced(f);
    *revents = (f->running && made >= f->delivered + io->period_size) ? POLLIN : 0;
    return 0;
}

static int fake_delay(snd_pcm_ioplug_t *io, snd_pcm_sframes_t *delay) {
    fake_t *f = io->private_data;
    *delay = (snd_pcm_sframes_t)(produced(f) - f->delivered);
    return 0;
}

static int fake_close(snd_pcm_ioplug_t *io) {
    fake_t *f = io->private_data;
    if (f->timer >= 0) close(f->timer);
    if (f->log) fclose(f->log);
    free(f);
    return 0;
}

static const snd_pcm_ioplug_callback_t callbacks = {
    .start = fake_start,
    .stop = fake_stop,
    .prepare = fake_prepare,
    .pointer = fake_pointer,
    .transfer = fake_transfer,
    .poll_revents = fake_poll_revents,
    .delay = fake_delay,
    .close = fake_close,
};

static void parse_options(fake_t *f) {
    f->ppm = 0;
    f->click = 1;
    f->click_ns = 1000000000;
    f->eio_after = -1;
    const char *env = getenv("FAKE_ALSA");
    if (!env) return;
    char *copy = strdup(env), *save = NULL;
    if (!copy) return;
    for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
        if (strncmp(opt, "ppm=", 4) == 0) f->ppm = atof(opt + 4);
        else if (strncmp(opt, "click=", 6) == 0) f->click = atof(opt + 6);
        else if (strncmp(opt, "eio=", 4) == 0) f->eio_after = atoll(opt + 4);
        else if (strncmp(opt, "log=", 4) == 0 && !f->log) f->log = fopen(opt + 4, "ae");
    }
    free(copy);
    if (!(f->click > 0)) f->click = 1;
    f->click_ns = llround(f->click * 1e9);
    if (f->click_ns < 1) f->click_ns = 1;
}

static int wants(const char *option) {
    const char *env = getenv("FAKE_ALSA");
    if (!env) return 0;
    size_t n = strlen(option);
    for (const char *p = env; (p = strstr(p, option)) != NULL; p += n) {
        if ((p == env || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    }
    return 0;
}

SND_PCM_PLUGIN_DEFINE_FUNC(reelfake) {
    (void)root; (void)conf;
    /* Refusals first, for either stream, as a kernel device's open refuses. */
    if (wants("busy")) return -EBUSY;
    if (wants("denied")) return -EACCES;
    if (stream != SND_PCM_STREAM_CAPTURE) {
        SNDERR("reelfake: capture only");
        return -EINVAL;
    }
    fake_t *f = calloc(1, sizeof *f);
    if (!f) return -ENOMEM;
    parse_options(f);
    f->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (f->timer < 0) { int e = errno; free(f); return -e; }
    f->io.version = SND_PCM_IOPLUG_VERSION;
    f->io.name = "Reel emulated capture device";
    f->io.callback = &callbacks;
    f->io.private_data = f;
    f->io.poll_fd = f->timer;
    f->io.poll_events = POLLIN;
    f->io.mmap_rw = 0;
    int err = snd_pcm_ioplug_create(&f->io, name, stream, mode);
    if (err < 0) { close(f->timer); free(f); return err; }
    /* Read/write only: for mmap capture without mmap_rw, ioplug calls transfer for the same
     * frames on every avail update. */
    static const unsigned int access[] = { SND_PCM_ACCESS_RW_INTERLEAVED };
    static const unsigned int formats[] = { SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S32_LE, SND_PCM_FORMAT_FLOAT_LE };
    static const unsigned int rates[] = { 44100, 48000 };
    if ((err = snd_pcm_ioplug_set_param_list(&f->io, SND_PCM_IOPLUG_HW_ACCESS, 1, access)) < 0 ||
        (err = snd_pcm_ioplug_set_param_list(&f->io, SND_PCM_IOPLUG_HW_FORMAT, 3, formats)) < 0 ||
        (err = snd_pcm_ioplug_set_param_list(&f->io, SND_PCM_IOPLUG_HW_RATE, 2, rates)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&f->io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 2)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&f->io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 64, 1 << 20)) < 0 ||
        (err = snd_pcm_ioplug_set_param_minmax(&f->io, SND_PCM_IOPLUG_HW_PERIODS, 2, 1024)) < 0) {
        snd_pcm_ioplug_delete(&f->io);
        return err;
    }
    *pcmp = f->io.pcm;
    return 0;
}

SND_PCM_PLUGIN_SYMBOL(reelfake);
