/*
 * A userspace emulation of evdev input devices, preloaded into a process (LD_PRELOAD) so that
 * /dev/input/eventN exists where no input device does (no /dev/input, no /dev/uinput). It
 * answers what libevdev and evtest ask, with the kernel's structs (linux/input.h) and error
 * codes:
 *
 *   stat/lstat/fstat/fstatat/statx: a character device, major 13 (input), minor 64+N,
 *     mode 0660, group input; access/faccessat: present
 *   open/openat (and the _2 fortify variants): each open file gets its own event queue — a
 *     pipe whose read end is the descriptor the program holds, so read(), poll(), select()
 *     and epoll are the kernel's own; whole `struct input_event`s are written into it
 *   read(): the pipe's bytes; once the device is gone, -1 with ENODEV (as evdev)
 *   ioctls: EVIOCGVERSION, EVIOCGID, EVIOCGNAME, EVIOCGPHYS, EVIOCGUNIQ (ENOENT), EVIOCGPROP,
 *     EVIOCGBIT (EV_SYN, EV_KEY, EV_REP), EVIOCGKEY (the keys down now), EVIOCGLED, EVIOCGSW,
 *     EVIOCGSND (all zero), EVIOCGREP/EVIOCSREP, EVIOCGRAB (one grabber at a time, others
 *     EBUSY), EVIOCSCLOCKID (REALTIME, MONOTONIC, BOOTTIME); everything else ENOTTY
 *   /proc/bus/input/devices (open, openat, fopen): the kernel's listing of these devices,
 *     with their handlers (eventN) and KEY bitmaps
 *   scandir("/dev/input"): the eventN nodes (evtest with no argument lists them)
 *
 * FAKE_EVDEV (comma-separated):
 *   devices=N     how many /dev/input/eventN with the camera keys appear (default 1)
 *   keyboard      one more device after them, a keyboard with KEY_A..KEY_Z only
 *   name=TEXT     the first device's name (default "Reel fake buttons"; others add " N")
 *   denied        open() fails with EACCES, as for a user outside the `input` group
 *   gone          no device at all until a script step `plug`
 * FAKE_EVDEV_SCRIPT: steps separated by ';', played on device 0 from its first open:
 *   wait MS                  sleep
 *   press KEY / release KEY / repeat KEY   value 1 / 0 / 2, each followed by SYN_REPORT
 *   drop                     SYN_DROPPED; the events after it up to the next SYN_REPORT are
 *                            lost, so a `release` right after it changes only the key state
 *   unplug                   the device is gone: reads fail with ENODEV, the node disappears
 *   plug                     it comes back (new opens work; old descriptors stay dead)
 * KEY is a name from linux/input-event-codes.h among those below, or a number.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/input.h>

#define MAX_DEVICES 4
#define MAX_FDS 65536
#define INPUT_MAJOR 13
#define INPUT_GID 105

struct device {
    char name[80];
    unsigned long keys[KEY_CNT / (8 * sizeof(long)) + 1];   /* the keys it has */
    unsigned long down[KEY_CNT / (8 * sizeof(long)) + 1];   /* the keys down now */
    struct file *grab;
    int present;
};
struct file { int used, fd, wfd, dev, clock, dead; };

static struct device devs[MAX_DEVICES];
static int ndevs, opt_denied, opt_keyboard, opt_gone;
static struct file files[256];
static struct file *fdmap[MAX_FDS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int script_started;

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_stat)(const char *, struct stat *);
static int (*real_lstat)(const char *, struct stat *);
static int (*real_fstat)(int, struct stat *);
static int (*real_fstatat)(int, const char *, struct stat *, int);
static int (*real_statx)(int, const char *, int, unsigned, struct statx *);
static int (*real_access)(const char *, int);
static int (*real_faccessat)(int, const char *, int, int);
static FILE *(*real_fopen)(const char *, const char *);
static int (*real_scandir)(const char *, struct dirent ***, int (*)(const struct dirent *), int (*)(const struct dirent **, const struct dirent **));

static const struct { const char *name; int code; } key_names[] = {
    {"KEY_VOLUMEDOWN", KEY_VOLUMEDOWN}, {"KEY_VOLUMEUP", KEY_VOLUMEUP}, {"KEY_CAMERA", KEY_CAMERA},
    {"KEY_CAMERA_FOCUS", KEY_CAMERA_FOCUS}, {"KEY_PLAYPAUSE", KEY_PLAYPAUSE}, {"KEY_PLAYCD", KEY_PLAYCD},
    {"KEY_PAUSECD", KEY_PAUSECD}, {"KEY_MEDIA", KEY_MEDIA}, {"KEY_A", KEY_A}, {"KEY_ENTER", KEY_ENTER},
};
static const int camera_keys[] = { KEY_VOLUMEDOWN, KEY_VOLUMEUP, KEY_CAMERA, KEY_CAMERA_FOCUS, KEY_PLAYPAUSE, KEY_PLAYCD, KEY_PAUSECD, KEY_MEDIA };
#define BITS (8 * sizeof(long))
static void set_bit(unsigned long *b, int n) { b[n / BITS] |= 1UL << (n % BITS); }
static void clear_bit(unsigned long *b, int n) { b[n / BITS] &= ~(1UL << (n % BITS)); }
static int key_code(const char *s) {
    for (size_t i = 0; i < sizeof key_names / sizeof *key_names; i++) if (strcmp(s, key_names[i].name) == 0) return key_names[i].code;
    char *end; long n = strtol(s, &end, 0);
    return (*s && !*end && n >= 0 && n < KEY_CNT) ? (int)n : -1;
}

static void configure_once(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_close = dlsym(RTLD_NEXT, "close");
    real_ioctl = dlsym(RTLD_NEXT, "ioctl");
    real_read = dlsym(RTLD_NEXT, "read");
    real_stat = dlsym(RTLD_NEXT, "stat");
    real_lstat = dlsym(RTLD_NEXT, "lstat");
    real_fstat = dlsym(RTLD_NEXT, "fstat");
    real_fstatat = dlsym(RTLD_NEXT, "fstatat");
    real_statx = dlsym(RTLD_NEXT, "statx");
    real_access = dlsym(RTLD_NEXT, "access");
    real_faccessat = dlsym(RTLD_NEXT, "faccessat");
    real_fopen = dlsym(RTLD_NEXT, "fopen");
    real_scandir = dlsym(RTLD_NEXT, "scandir");
    int n = 1;
    char name[80] = "Reel fake buttons";
    const char *env = getenv("FAKE_EVDEV");
    if (env) {
        char *copy = strdup(env), *save = NULL;
        for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
            if (sscanf(t, "devices=%d", &n) == 1) continue;
            if (strcmp(t, "keyboard") == 0) { opt_keyboard = 1; continue; }
            if (strcmp(t, "denied") == 0) { opt_denied = 1; continue; }
            if (strcmp(t, "gone") == 0) { opt_gone = 1; continue; }
            if (strncmp(t, "name=", 5) == 0) { snprintf(name, sizeof name, "%s", t + 5); continue; }
        }
        free(copy);
    }
    if (n < 0) n = 0;
    if (n > MAX_DEVICES - 1) n = MAX_DEVICES - 1;
    for (int i = 0; i < n; i++) {
        struct device *d = &devs[ndevs++];
        if (i == 0) snprintf(d->name, sizeof d->name, "%s", name); else snprintf(d->name, sizeof d->name, "%s %d", name, i + 1);
        for (size_t k = 0; k < sizeof camera_keys / sizeof *camera_keys; k++) set_bit(d->keys, camera_keys[k]);
        d->present = !(opt_gone && i == 0);
    }
    if (opt_keyboard) {
        struct device *d = &devs[ndevs++];
        snprintf(d->name, sizeof d->name, "Reel fake keyboard");
        for (int k = KEY_Q; k <= KEY_M; k++) set_bit(d->keys, k);
        d->present = 1;
    }
}
static void configure(void) { pthread_once(&once, configure_once); }

/* The device a path names (/dev/input/eventN), present or not, or -1. */
static int device_number(const char *path) {
    int n; char tail;
    if (path && sscanf(path, "/dev/input/event%d%c", &n, &tail) == 1 && n >= 0 && n < ndevs) return n;
    return -1;
}
static int present(int n) { pthread_mutex_lock(&lock); int p = n >= 0 && devs[n].present; pthread_mutex_unlock(&lock); return p; }
static struct file *file_for(int fd) {
    if (fd < 0 || fd >= MAX_FDS) return NULL;
    pthread_mutex_lock(&lock); struct file *f = fdmap[fd]; pthread_mutex_unlock(&lock);
    return f;
}

/* ---- events ---- */

static void stamp(struct input_event *e, int clock) {
    struct timespec t;
    clock_gettime(clock == CLOCK_MONOTONIC ? CLOCK_MONOTONIC : clock == CLOCK_BOOTTIME ? CLOCK_BOOTTIME : CLOCK_REALTIME, &t);
    e->input_event_sec = t.tv_sec;
    e->input_event_usec = t.tv_nsec / 1000;
}
/* Sends one event to every open file of device n (lock held). */
static void broadcast(int n, int type, int code, int value) {
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        struct file *f = &files[i];
        if (!f->used || f->dev != n || f->dead) continue;
        if (devs[n].grab && devs[n].grab != f) continue;
        struct input_event e = { .type = (uint16_t)type, .code = (uint16_t)code, .value = value };
        stamp(&e, f->clock);
        if (write(f->wfd, &e, sizeof e) != (ssize_t)sizeof e) { /* the queue is full: the kernel would drop; so do we */ }
    }
}

static void *play(void *arg) {
    char *script = arg, *save = NULL;
    int dropping = 0;
    for (char *step = strtok_r(script, ";", &save); step; step = strtok_r(NULL, ";", &save)) {
        while (*step == ' ') step++;
        char verb[16] = "", what[40] = "";
        if (sscanf(step, "%15s %39s", verb, what) < 1) continue;
        if (strcmp(verb, "wait") == 0) { long ms = atol(what); struct timespec t = { ms / 1000, (ms % 1000) * 1000000 }; nanosleep(&t, NULL); continue; }
        pthread_mutex_lock(&lock);
        struct device *d = &devs[0];
        if (strcmp(verb, "press") == 0 || strcmp(verb, "release") == 0 || strcmp(verb, "repeat") == 0) {
            int code = key_code(what), value = verb[0] == 'p' ? 1 : verb[2] == 'l' ? 0 : 2;
            if (code >= 0) {
                if (value == 1) set_bit(d->down, code); else if (value == 0) clear_bit(d->down, code);
                if (!dropping) { broadcast(0, EV_KEY, code, value); broadcast(0, EV_SYN, SYN_REPORT, 0); }
                dropping = 0;
            } else fprintf(stderr, "fake-evdev: unknown key '%s'\n", what);
        } else if (strcmp(verb, "drop") == 0) {
            broadcast(0, EV_SYN, SYN_DROPPED, 0);
            dropping = 1;
        } else if (strcmp(verb, "unplug") == 0) {
            d->present = 0;
            memset(d->down, 0, sizeof d->down);
            d->grab = NULL;
            for (size_t i = 0; i < sizeof files / sizeof *files; i++)
                if (files[i].used && files[i].dev == 0 && !files[i].dead) { files[i].dead = 1; real_close(files[i].wfd); files[i].wfd = -1; }
        } else if (strcmp(verb, "plug") == 0) {
            d->present = 1;
        } else fprintf(stderr, "fake-evdev: unknown script step '%s'\n", step);
        pthread_mutex_unlock(&lock);
    }
    free(script);
    return NULL;
}

static void start_script(void) {
    const char *s = getenv("FAKE_EVDEV_SCRIPT");
    if (!s || script_started) return;
    script_started = 1;
    pthread_t t;
    char *copy = strdup(s);
    if (copy && pthread_create(&t, NULL, play, copy) == 0) pthread_detach(t); else free(copy);
}

/* ---- opening and closing ---- */

static int fake_open(const char *path, int flags) {
    int n = device_number(path);
    if (n < 0) return -2;
    if (!present(n)) { errno = ENOENT; return -1; }
    if (opt_denied) { errno = EACCES; return -1; }
    int p[2];
    if (pipe2(p, O_CLOEXEC | ((flags & O_NONBLOCK) ? O_NONBLOCK : 0)) != 0) return -1;
    if (!(flags & O_CLOEXEC)) { int fl = fcntl(p[0], F_GETFD); if (fl >= 0) fcntl(p[0], F_SETFD, fl & ~FD_CLOEXEC); }
    /* The writing end never blocks (a full queue drops, as the kernel's does) and hides high. */
    int w = fcntl(p[1], F_DUPFD_CLOEXEC, 512);
    if (w >= 0) { real_close(p[1]); p[1] = w; }
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    if (p[0] >= MAX_FDS) { real_close(p[0]); real_close(p[1]); errno = EMFILE; return -1; }
    pthread_mutex_lock(&lock);
    struct file *f = NULL;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) if (!files[i].used) { f = &files[i]; break; }
    if (!f) { pthread_mutex_unlock(&lock); real_close(p[0]); real_close(p[1]); errno = EMFILE; return -1; }
    *f = (struct file){ .used = 1, .fd = p[0], .wfd = p[1], .dev = n, .clock = CLOCK_REALTIME };
    fdmap[p[0]] = f;
    if (n == 0) start_script();
    pthread_mutex_unlock(&lock);
    return p[0];
}

static void forget_fd(int fd) {
    if (fd < 0 || fd >= MAX_FDS) return;
    pthread_mutex_lock(&lock);
    struct file *f = fdmap[fd];
    fdmap[fd] = NULL;
    if (f) {
        if (devs[f->dev].grab == f) devs[f->dev].grab = NULL;
        if (f->wfd >= 0) real_close(f->wfd);
        f->used = 0;
    }
    pthread_mutex_unlock(&lock);
}

static mode_t open_mode(int flags, va_list ap) { return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0; }

/* /proc/bus/input/devices, as the kernel writes it, for the devices present. */
static int proc_devices(void) {
    char *text = NULL; size_t size = 0;
    FILE *m = open_memstream(&text, &size);
    if (!m) return -1;
    pthread_mutex_lock(&lock);
    for (int n = 0; n < ndevs; n++) {
        struct device *d = &devs[n];
        if (!d->present) continue;
        fprintf(m, "I: Bus=0019 Vendor=0001 Product=%04x Version=0100\nN: Name=\"%s\"\nP: Phys=reel/input%d\nS: Sysfs=/devices/virtual/input/input%d\nU: Uniq=\nH: Handlers=kbd event%d \nB: PROP=0\nB: EV=100003\nB: KEY=", 0x100 + n, d->name, n, n, n);
        int last = KEY_CNT / (int)BITS;
        while (last > 0 && d->keys[last] == 0) last--;
        for (int i = last; i >= 0; i--) fprintf(m, i == last ? "%lx" : " %lx", d->keys[i]);
        fprintf(m, "\n\n");
    }
    pthread_mutex_unlock(&lock);
    fclose(m);
    int fd = memfd_create("fakeevdev-proc", MFD_CLOEXEC);
    if (fd >= 0 && (write(fd, text, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0)) { real_close(fd); fd = -1; }
    free(text);
    return fd;
}
static int is_proc_devices(const char *path) { return path && strcmp(path, "/proc/bus/input/devices") == 0; }

int open(const char *path, int flags, ...) {
    configure();
    va_list ap; va_start(ap, flags); mode_t mode = open_mode(flags, ap); va_end(ap);
    if (is_proc_devices(path)) return proc_devices();
    int r = fake_open(path, flags);
    return r != -2 ? r : real_open(path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));
int openat(int dirfd, const char *path, int flags, ...) {
    configure();
    va_list ap; va_start(ap, flags); mode_t mode = open_mode(flags, ap); va_end(ap);
    if (is_proc_devices(path)) return proc_devices();
    int r = fake_open(path, flags);
    return r != -2 ? r : real_openat(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));
int __openat_2(int dirfd, const char *path, int flags) { return openat(dirfd, path, flags); }
int __openat64_2(int dirfd, const char *path, int flags) __attribute__((alias("__openat_2")));
FILE *fopen(const char *path, const char *mode) {
    configure();
    if (is_proc_devices(path)) { int fd = proc_devices(); return fd < 0 ? NULL : fdopen(fd, "r"); }
    return real_fopen(path, mode);
}
FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));

int close(int fd) { configure(); forget_fd(fd); return real_close(fd); }

ssize_t read(int fd, void *buf, size_t count) {
    configure();
    struct file *f = file_for(fd);
    if (!f) return real_read(fd, buf, count);
    if (count < sizeof(struct input_event)) { errno = EINVAL; return -1; }
    ssize_t r = real_read(fd, buf, count - count % sizeof(struct input_event));
    if (r == 0 || (r < 0 && errno == EAGAIN && f->dead)) { errno = ENODEV; return -1; }
    return r;
}

/* ---- the ioctls ---- */

static int copy_out(void *arg, const void *src, size_t have, unsigned long req) {
    size_t len = _IOC_SIZE(req);
    size_t n = have < len ? have : len;
    memcpy(arg, src, n);
    return (int)n;
}

int ioctl(int fd, unsigned long req, ...) {
    configure();
    va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
    struct file *f = file_for(fd);
    if (!f) return real_ioctl(fd, req, arg);
    pthread_mutex_lock(&lock);
    struct device *d = &devs[f->dev];
    int r = 0;
    errno = 0;
    if (f->dead) { errno = ENODEV; r = -1; goto out; }
    if (_IOC_TYPE(req) != 'E') { errno = ENOTTY; r = -1; goto out; }
    unsigned nr = _IOC_NR(req);
    if (req == EVIOCGVERSION) { *(int *)arg = EV_VERSION; goto out; }
    if (req == EVIOCGID) { struct input_id id = { BUS_HOST, 0x0001, (uint16_t)(0x100 + f->dev), 0x0100 }; *(struct input_id *)arg = id; goto out; }
    if (req == EVIOCGREP) { ((unsigned *)arg)[0] = 250; ((unsigned *)arg)[1] = 33; goto out; }
    if (req == EVIOCSREP) goto out;
    if (req == EVIOCGRAB) {
        if ((uintptr_t)arg) { if (d->grab) { errno = EBUSY; r = -1; } else d->grab = f; }
        else { if (d->grab != f) { errno = EINVAL; r = -1; } else d->grab = NULL; }
        goto out;
    }
    if (req == EVIOCSCLOCKID) {
        int c = *(int *)arg;
        if (c != CLOCK_REALTIME && c != CLOCK_MONOTONIC && c != CLOCK_BOOTTIME) { errno = EINVAL; r = -1; } else f->clock = c;
        goto out;
    }
    if (_IOC_DIR(req) == _IOC_READ) {
        unsigned long zero[KEY_CNT / BITS + 1] = {0};
        if (nr == _IOC_NR(EVIOCGNAME(0))) { r = copy_out(arg, d->name, strlen(d->name) + 1, req); goto out; }
        if (nr == _IOC_NR(EVIOCGPHYS(0))) { char phys[32]; snprintf(phys, sizeof phys, "reel/input%d", f->dev); r = copy_out(arg, phys, strlen(phys) + 1, req); goto out; }
        if (nr == _IOC_NR(EVIOCGUNIQ(0))) { errno = ENOENT; r = -1; goto out; }
        if (nr == _IOC_NR(EVIOCGPROP(0))) { r = copy_out(arg, zero, sizeof(long), req); goto out; }
        if (nr == _IOC_NR(EVIOCGKEY(0))) { r = copy_out(arg, d->down, KEY_CNT / 8, req); goto out; }
        if (nr == _IOC_NR(EVIOCGLED(0))) { r = copy_out(arg, zero, LED_CNT / 8 + 1, req); goto out; }
        if (nr == _IOC_NR(EVIOCGSND(0))) { r = copy_out(arg, zero, SND_CNT / 8 + 1, req); goto out; }
        if (nr == _IOC_NR(EVIOCGSW(0))) { r = copy_out(arg, zero, SW_CNT / 8 + 1, req); goto out; }
        if (nr >= _IOC_NR(EVIOCGBIT(0, 0)) && nr < _IOC_NR(EVIOCGBIT(EV_MAX, 0)) + 1) {
            unsigned type = nr - _IOC_NR(EVIOCGBIT(0, 0));
            if (type == 0) { unsigned long ev = (1UL << EV_SYN) | (1UL << EV_KEY) | (1UL << EV_REP); r = copy_out(arg, &ev, EV_CNT / 8 + 1, req); }
            else if (type == EV_KEY) r = copy_out(arg, d->keys, KEY_CNT / 8, req);
            else r = copy_out(arg, zero, type == EV_ABS ? ABS_CNT / 8 : type == EV_REL ? REL_CNT / 8 : type == EV_MSC ? MSC_CNT / 8 : type == EV_SW ? SW_CNT / 8 : type == EV_LED ? LED_CNT / 8 : type == EV_SND ? SND_CNT / 8 : type == EV_FF ? FF_CNT / 8 : 1, req);
            if (r < (int)_IOC_SIZE(req)) memset((char *)arg + r, 0, _IOC_SIZE(req) - (size_t)r);
            goto out;
        }
        if ((nr & ~0x3fu) == 0x40) { errno = EINVAL; r = -1; goto out; }   /* EVIOCGABS: no absolute axes */
    }
    errno = ENOTTY; r = -1;
out:
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- the nodes: character devices, major 13, minors 64+N ---- */

static void fill_stat(struct stat *st, int n) {
    memset(st, 0, sizeof *st);
    struct timespec now; clock_gettime(CLOCK_REALTIME, &now);
    st->st_dev = makedev(0, 5);
    st->st_ino = 2000 + (ino_t)n;
    st->st_mode = S_IFCHR | 0660;
    st->st_nlink = 1;
    st->st_gid = INPUT_GID;
    st->st_rdev = makedev(INPUT_MAJOR, 64 + (unsigned)n);
    st->st_blksize = 4096;
    st->st_atim = st->st_mtim = st->st_ctim = now;
}
__attribute__((noinline)) static int empty_path(const char *p) { return !p || !*p; }
static int fd_device(int fd) { struct file *f = file_for(fd); return f ? f->dev : -1; }
static int node(const char *path) { int n = device_number(path); return n >= 0 ? (present(n) ? n : -3) : -1; }
#define STAT_PATH(path, st, realcall) do { int n = node(path); if (n == -3) { errno = ENOENT; return -1; } if (n >= 0) { fill_stat(st, n); return 0; } return realcall; } while (0)
int stat(const char *path, struct stat *st) { configure(); STAT_PATH(path, st, real_stat(path, st)); }
int stat64(const char *path, struct stat64 *st) __attribute__((alias("stat")));
int lstat(const char *path, struct stat *st) { configure(); STAT_PATH(path, st, real_lstat(path, st)); }
int lstat64(const char *path, struct stat64 *st) __attribute__((alias("lstat")));
int fstat(int fd, struct stat *st) { configure(); int n = fd_device(fd); if (n >= 0) { fill_stat(st, n); return 0; } return real_fstat(fd, st); }
int fstat64(int fd, struct stat64 *st) __attribute__((alias("fstat")));
int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    configure();
    if ((flags & AT_EMPTY_PATH) && empty_path(path)) { int n = fd_device(dirfd); if (n >= 0) { fill_stat(st, n); return 0; } }
    STAT_PATH(path, st, real_fstatat(dirfd, path, st, flags));
}
int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) __attribute__((alias("fstatat")));
int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx) {
    configure();
    int n = (flags & AT_EMPTY_PATH) && empty_path(path) ? fd_device(dirfd) : node(path);
    if (n == -3) { errno = ENOENT; return -1; }
    if (n < 0) return real_statx(dirfd, path, flags, mask, sx);
    struct stat st; fill_stat(&st, n);
    memset(sx, 0, sizeof *sx);
    sx->stx_mask = STATX_BASIC_STATS; sx->stx_blksize = 4096; sx->stx_nlink = 1; sx->stx_gid = INPUT_GID;
    sx->stx_mode = (uint16_t)st.st_mode; sx->stx_ino = st.st_ino;
    sx->stx_rdev_major = INPUT_MAJOR; sx->stx_rdev_minor = 64 + (uint32_t)n; sx->stx_dev_minor = 5;
    return 0;
}
int __xstat(int ver, const char *path, struct stat *st) { return stat(path, st); }
int __xstat64(int ver, const char *path, struct stat64 *st) __attribute__((alias("__xstat")));
int __lxstat(int ver, const char *path, struct stat *st) { return lstat(path, st); }
int __lxstat64(int ver, const char *path, struct stat64 *st) __attribute__((alias("__lxstat")));
int __fxstat(int ver, int fd, struct stat *st) { return fstat(fd, st); }
int __fxstat64(int ver, int fd, struct stat64 *st) __attribute__((alias("__fxstat")));
int access(const char *path, int mode) {
    configure();
    int n = node(path);
    if (n == -3) { errno = ENOENT; return -1; }
    if (n >= 0) return (mode & X_OK) || opt_denied ? (errno = EACCES, -1) : 0;
    return real_access(path, mode);
}
int faccessat(int dirfd, const char *path, int mode, int flags) {
    configure();
    int n = node(path);
    if (n == -3) { errno = ENOENT; return -1; }
    if (n >= 0) return (mode & X_OK) || opt_denied ? (errno = EACCES, -1) : 0;
    return real_faccessat(dirfd, path, mode, flags);
}

/* evtest with no argument lists /dev/input/event* with scandir. */
int scandir(const char *dir, struct dirent ***list, int (*filter)(const struct dirent *), int (*compar)(const struct dirent **, const struct dirent **)) {
    configure();
    if (empty_path(dir) || (strcmp(dir, "/dev/input") != 0 && strcmp(dir, "/dev/input/") != 0)) return real_scandir(dir, list, filter, compar);
    struct dirent **out = calloc((size_t)ndevs + 1, sizeof *out);
    if (!out) { errno = ENOMEM; return -1; }
    int count = 0;
    for (int n = 0; n < ndevs; n++) {
        if (!present(n)) continue;
        struct dirent *e = calloc(1, sizeof *e);
        if (!e) break;
        e->d_ino = 2000 + (ino_t)n; e->d_type = DT_CHR; e->d_reclen = sizeof *e;
        snprintf(e->d_name, sizeof e->d_name, "event%d", n);
        if (filter && !filter(e)) { free(e); continue; }
        out[count++] = e;
    }
    if (compar) qsort(out, (size_t)count, sizeof *out, (int (*)(const void *, const void *))compar);
    *list = out;
    return count;
}
int scandir64(const char *dir, struct dirent64 ***list, int (*filter)(const struct dirent64 *), int (*compar)(const struct dirent64 **, const struct dirent64 **)) __attribute__((alias("scandir")));
