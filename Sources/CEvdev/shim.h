// libevdev (Debian's libevdev-dev): reading evdev input devices (/dev/input/event*) for the
// capture events (camera, volume and headset keys).
#ifndef REEL_CEVDEV_H
#define REEL_CEVDEV_H
#include <libevdev/libevdev.h>
#include <linux/input.h>

// Closed C enums import as Swift enums with shortened case names; these keep the C spelling.
static const enum libevdev_read_flag CEvdev_readNormal = LIBEVDEV_READ_FLAG_NORMAL;
static const enum libevdev_read_flag CEvdev_readSync = LIBEVDEV_READ_FLAG_SYNC;
static const int CEvdev_statusSuccess = LIBEVDEV_READ_STATUS_SUCCESS;
static const int CEvdev_statusSync = LIBEVDEV_READ_STATUS_SYNC;
static const enum libevdev_grab_mode CEvdev_grab = LIBEVDEV_GRAB;
static const enum libevdev_grab_mode CEvdev_ungrab = LIBEVDEV_UNGRAB;
#endif
