// libheif (Debian's libheif-dev, HEVC through its x265 plugin): the photo output's HEIC files.
#ifndef REEL_CHEIF_H
#define REEL_CHEIF_H
#include <libheif/heif.h>
#include <stdlib.h>
#include <string.h>

/// A growing memory buffer heif_context_write fills.
typedef struct { unsigned char *data; size_t size, capacity; int failed; } CHeif_buffer;

static inline struct heif_error CHeif_write(struct heif_context *ctx, const void *data, size_t size, void *userdata) {
    (void)ctx;
    CHeif_buffer *b = (CHeif_buffer *)userdata;
    struct heif_error ok = { heif_error_Ok, heif_suberror_Unspecified, "" };
    if (b->size + size > b->capacity) {
        size_t cap = b->capacity ? b->capacity : 1 << 20;
        while (cap < b->size + size) cap *= 2;
        unsigned char *grown = (unsigned char *)realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            struct heif_error e = { heif_error_Memory_allocation_error, heif_suberror_Unspecified, "out of memory" };
            return e;
        }
        b->data = grown; b->capacity = cap;
    }
    memcpy(b->data + b->size, data, size);
    b->size += size;
    return ok;
}

/// Writes the context into `*buffer` (heif_context_write); free buffer->data afterwards.
static inline struct heif_error CHeif_writeToMemory(struct heif_context *ctx, CHeif_buffer *buffer) {
    static struct heif_writer writer = { 1, CHeif_write };
    return heif_context_write(ctx, &writer, buffer);
}
#endif
