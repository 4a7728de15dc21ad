// libpng (Debian's libpng-dev): the photo output's 16-bit PNG. libpng reports errors by
// longjmp, which Swift cannot take part in, so the whole write is one C call.
#ifndef REEL_CPNG_H
#define REEL_CPNG_H
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

typedef struct { unsigned char *data; size_t size, capacity; int failed; } CPNG_buffer;

static inline void CPNG_write(png_structp png, png_bytep data, size_t length) {
    CPNG_buffer *b = (CPNG_buffer *)png_get_io_ptr(png);
    if (b->failed) return;
    if (b->size + length > b->capacity) {
        size_t cap = b->capacity ? b->capacity : 1 << 20;
        while (cap < b->size + length) cap *= 2;
        unsigned char *grown = (unsigned char *)realloc(b->data, cap);
        if (!grown) { b->failed = 1; png_error(png, "out of memory"); }
        b->data = grown; b->capacity = cap;
    }
    memcpy(b->data + b->size, data, length);
    b->size += length;
}
static inline void CPNG_flush(png_structp png) { (void)png; }

/// Encodes `width`×`height` RGB samples of 16 bits (host order, `rowStride` samples a row)
/// as a 16-bit PNG at zlib `level` with an eXIf chunk before IDAT (TIFF-headed `exif`, may be NULL) into
/// `*out` (free out->data afterwards). Returns 0, or -1 with libpng's message in `message`.
static inline int CPNG_encodeRGB16(const uint16_t *rgb, int width, int height, size_t rowStride, int level,
                                   const unsigned char *exif, unsigned int exifSize,
                                   CPNG_buffer *out, char *message, size_t messageSize) {
    memset(out, 0, sizeof *out);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (!png) { snprintf(message, messageSize, "png_create_write_struct failed"); return -1; }
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_write_struct(&png, NULL); snprintf(message, messageSize, "png_create_info_struct failed"); return -1; }
    uint16_t *volatile row = NULL;
    if (setjmp(png_jmpbuf(png))) {
        snprintf(message, messageSize, "libpng failed%s", out->failed ? ": out of memory" : "");
        free((void *)row);
        png_destroy_write_struct(&png, &info);
        free(out->data); out->data = NULL; out->size = 0;
        return -1;
    }
    png_set_write_fn(png, out, CPNG_write, CPNG_flush);
    png_set_compression_level(png, level);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 16, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    // eXIf before the image data (libpng's png_set_eXIf_1 puts it after IDAT, where some
    // readers ignore it).
    if (exif && exifSize > 0) png_write_chunk(png, (png_const_bytep)"eXIf", exif, exifSize);
    row = (uint16_t *)malloc((size_t)width * 3 * 2);
    if (!row) png_error(png, "out of memory");
    for (int y = 0; y < height; y++) {
        const uint16_t *src = rgb + (size_t)y * rowStride;
        unsigned char *d = (unsigned char *)row;
        for (int i = 0; i < width * 3; i++) { d[2 * i] = (unsigned char)(src[i] >> 8); d[2 * i + 1] = (unsigned char)src[i]; }
        png_write_row(png, (png_const_bytep)row);
    }
    png_write_end(png, info);
    free((void *)row);
    png_destroy_write_struct(&png, &info);
    return 0;
}
#endif
