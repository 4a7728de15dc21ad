// libasound (Debian's libasound2-dev): ALSA capture for the audio sources. On a desktop, ALSA's
// `default` PCM reaches PulseAudio or PipeWire through their ALSA plugins.
#ifndef REEL_CALSA_H
#define REEL_CALSA_H
#include <alsa/asoundlib.h>

// Values Swift cannot take from the headers' enums and macros in the C spelling.
static const snd_pcm_stream_t CALSA_streamCapture = SND_PCM_STREAM_CAPTURE;
static const snd_pcm_stream_t CALSA_streamPlayback = SND_PCM_STREAM_PLAYBACK;
static const int CALSA_openNonblock = SND_PCM_NONBLOCK;
static const snd_pcm_access_t CALSA_accessRWInterleaved = SND_PCM_ACCESS_RW_INTERLEAVED;
static const snd_pcm_format_t CALSA_formatS16LE = SND_PCM_FORMAT_S16_LE;
static const snd_pcm_tstamp_type_t CALSA_tstampMonotonic = SND_PCM_TSTAMP_TYPE_MONOTONIC;
static const snd_pcm_tstamp_t CALSA_tstampEnable = SND_PCM_TSTAMP_ENABLE;

static void CALSA_silent(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
/// Stops libasound printing its own error lines on stderr (`snd_lib_error_set_handler`):
/// Reel reports a failure in its own words.
static inline void CALSA_quiet(void) { snd_lib_error_set_handler(CALSA_silent); }
#endif
