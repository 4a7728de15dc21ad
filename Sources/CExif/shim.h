// libexif (Debian's libexif-dev): the photo output's EXIF block. One call builds the block
// from plain values (Swift cannot reach libexif's entry memory conveniently).
#ifndef REEL_CEXIF_H
#define REEL_CEXIF_H
#include <libexif/exif-data.h>
#include <libexif/exif-utils.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/// A new entry of `components` × `format` (`size` bytes) in `ifd`, zeroed; NULL when out of memory.
static inline ExifEntry *CExif_entry(ExifData *exif, ExifIfd ifd, ExifTag tag, ExifFormat format,
                                     unsigned long components, unsigned int size) {
    ExifMem *mem = exif_mem_new_default();
    if (!mem) return NULL;
    ExifEntry *entry = exif_entry_new_mem(mem);
    void *data = exif_mem_alloc(mem, size);
    if (!entry || !data) {
        if (entry) exif_entry_unref(entry);
        if (data) exif_mem_free(mem, data);
        exif_mem_unref(mem);
        return NULL;
    }
    memset(data, 0, size);
    entry->data = data; entry->size = size; entry->tag = tag;
    entry->components = components; entry->format = format;
    exif_content_add_entry(exif->ifd[ifd], entry);
    exif_mem_unref(mem);
    exif_entry_unref(entry);   // the IFD holds it now
    return entry;
}

static inline int CExif_ascii(ExifData *exif, ExifIfd ifd, ExifTag tag, const char *text) {
    unsigned int n = (unsigned int)strlen(text) + 1;
    ExifEntry *e = CExif_entry(exif, ifd, tag, EXIF_FORMAT_ASCII, n, n);
    if (!e) return -1;
    memcpy(e->data, text, n);
    return 0;
}

/// Builds an EXIF block (`Exif\0\0` + TIFF, Intel byte order) with Make, Model, Orientation
/// (IFD0), DateTimeOriginal, SubSecTimeOriginal, PixelXDimension, PixelYDimension,
/// ImageUniqueID and UserComment (EXIF IFD). `*out` is malloc'ed: free() it.
/// Returns 0, or -1 when out of memory.
static inline int CExif_build(const char *make, const char *model, uint16_t orientation,
                              const char *dateTimeOriginal, const char *subSecTimeOriginal,
                              uint32_t pixelX, uint32_t pixelY, const char *imageUniqueID,
                              const char *userComment, unsigned char **out, unsigned int *outSize) {
    *out = NULL; *outSize = 0;
    ExifData *exif = exif_data_new();
    if (!exif) return -1;
    exif_data_set_byte_order(exif, EXIF_BYTE_ORDER_INTEL);
    exif_data_set_data_type(exif, EXIF_DATA_TYPE_COMPRESSED);
    int failed = 0;
    failed |= CExif_ascii(exif, EXIF_IFD_0, EXIF_TAG_MAKE, make);
    failed |= CExif_ascii(exif, EXIF_IFD_0, EXIF_TAG_MODEL, model);
    ExifEntry *o = CExif_entry(exif, EXIF_IFD_0, EXIF_TAG_ORIENTATION, EXIF_FORMAT_SHORT, 1, 2);
    if (o) exif_set_short(o->data, EXIF_BYTE_ORDER_INTEL, orientation); else failed = 1;
    failed |= CExif_ascii(exif, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, dateTimeOriginal);
    failed |= CExif_ascii(exif, EXIF_IFD_EXIF, EXIF_TAG_SUB_SEC_TIME_ORIGINAL, subSecTimeOriginal);
    ExifEntry *x = CExif_entry(exif, EXIF_IFD_EXIF, EXIF_TAG_PIXEL_X_DIMENSION, EXIF_FORMAT_LONG, 1, 4);
    if (x) exif_set_long(x->data, EXIF_BYTE_ORDER_INTEL, pixelX); else failed = 1;
    ExifEntry *y = CExif_entry(exif, EXIF_IFD_EXIF, EXIF_TAG_PIXEL_Y_DIMENSION, EXIF_FORMAT_LONG, 1, 4);
    if (y) exif_set_long(y->data, EXIF_BYTE_ORDER_INTEL, pixelY); else failed = 1;
    failed |= CExif_ascii(exif, EXIF_IFD_EXIF, EXIF_TAG_IMAGE_UNIQUE_ID, imageUniqueID);
    // UserComment: an 8-byte character-code prefix, then the text (no terminator).
    unsigned int len = (unsigned int)strlen(userComment);
    ExifEntry *c = CExif_entry(exif, EXIF_IFD_EXIF, EXIF_TAG_USER_COMMENT, EXIF_FORMAT_UNDEFINED, 8 + len, 8 + len);
    if (c) { memcpy(c->data, "ASCII\0\0\0", 8); memcpy(c->data + 8, userComment, len); } else failed = 1;
    if (failed) { exif_data_unref(exif); return -1; }
    exif_data_save_data(exif, out, outSize);
    exif_data_unref(exif);
    return (*out && *outSize > 0) ? 0 : -1;
}
#endif
