/* jpegcmp: the preview's JPEG work done by TurboJPEG and by libavcodec's mjpeg encoder on the
 * same frames, at equal quality.
 *
 *   jpegcmp FILE.yuv WIDTH HEIGHT FRAMES TJQUALITY
 *
 * FILE.yuv holds FRAMES yuv420p pictures of WIDTHxHEIGHT. TurboJPEG encodes each with
 * tjCompressFromYUVPlanes at TJQUALITY, 4:2:0, TJFLAG_FASTDCT (what the preview does);
 * libavcodec's mjpeg encodes each at fixed qscale 1..12 (yuvj420p, both Huffman modes). Every
 * JPEG is decoded with TurboJPEG and its luma compared with the source (PSNR). For each
 * encoder setting: CPU time per picture (CLOCK_THREAD_CPUTIME_ID, the median of the frames),
 * mean bytes and mean PSNR. Every library call's result is checked; a failure exits 1 with a
 * line on stderr.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>
#include <libavcodec/avcodec.h>
#include <libavutil/opt.h>

static void die(const char *what) { fprintf(stderr, "jpegcmp: %s\n", what); exit(1); }

static double now_cpu(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) die("clock_gettime failed");
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double psnr_y(const unsigned char *a, const unsigned char *b, int n) {
    double se = 0;
    for (int i = 0; i < n; i++) { double d = (double)a[i] - b[i]; se += d * d; }
    if (se == 0) return 99.0;
    return 10 * log10(255.0 * 255.0 / (se / n));
}

/* Decodes `jpeg` with TurboJPEG to yuv planes and returns the luma PSNR against `src`. */
static double quality_of(tjhandle dec, const unsigned char *jpeg, unsigned long size,
                         const unsigned char *src, int w, int h, unsigned char *scratch) {
    int dw, dh, sub, cs;
    if (tjDecompressHeader3(dec, jpeg, size, &dw, &dh, &sub, &cs) != 0) die(tjGetErrorStr2(dec));
    if (dw != w || dh != h) die("decoded size differs");
    unsigned char *planes[3];
    int strides[3];
    int cw = tjPlaneWidth(1, w, sub), ch = tjPlaneHeight(1, h, sub);
    if (cw < 0 || ch < 0) die("tjPlaneWidth failed");
    planes[0] = scratch; planes[1] = scratch + (size_t)w * h; planes[2] = planes[1] + (size_t)cw * ch;
    strides[0] = w; strides[1] = cw; strides[2] = cw;
    if (tjDecompressToYUVPlanes(dec, jpeg, size, planes, w, strides, h, 0) != 0) die(tjGetErrorStr2(dec));
    return psnr_y(src, scratch, w * h);
}

static void report(const char *name, double *cpu, int frames, double bytes, double psnr) {
    qsort(cpu, frames, sizeof(double), cmp_double);
    printf("%-34s %8.3f %8.3f %10.0f %8.2f\n", name, cpu[frames / 2] * 1e3,
           cpu[frames / 10] * 1e3, bytes / frames, psnr / frames);
}

int main(int argc, char **argv) {
    if (argc != 6) die("usage: jpegcmp FILE.yuv WIDTH HEIGHT FRAMES TJQUALITY");
    int w = atoi(argv[2]), h = atoi(argv[3]), frames = atoi(argv[4]), q = atoi(argv[5]);
    if (w <= 0 || h <= 0 || frames <= 0 || q < 1 || q > 100 || (w & 1) || (h & 1)) die("bad size, count or quality");
    size_t ysize = (size_t)w * h, fsize = ysize * 3 / 2;
    unsigned char *all = malloc(fsize * frames), *scratch = malloc(fsize * 2);
    if (!all || !scratch) die("out of memory");
    FILE *f = fopen(argv[1], "rb");
    if (!f) { fprintf(stderr, "jpegcmp: %s: %s\n", argv[1], strerror(errno)); return 1; }
    if (fread(all, fsize, frames, f) != (size_t)frames) die("short input file");
    if (fclose(f) != 0) die("fclose failed");

    double *cpu = malloc(sizeof(double) * frames);
    if (!cpu) die("out of memory");
    tjhandle enc = tjInitCompress(), dec = tjInitDecompress();
    if (!enc || !dec) die("tjInit failed");
    printf("%-34s %8s %8s %10s %8s\n", "encoder (same frames)", "cpu ms", "p10 ms", "bytes", "PSNR-Y");

    /* TurboJPEG, as the preview does it. */
    unsigned long cap = tjBufSize(w, h, TJSAMP_420);
    unsigned char *out = tjAlloc((int)cap);
    if (!out) die("tjAlloc failed");
    double bytes = 0, psnr = 0;
    for (int i = 0; i < frames; i++) {
        const unsigned char *src = all + fsize * i;
        const unsigned char *planes[3] = { src, src + ysize, src + ysize + ysize / 4 };
        int strides[3] = { w, w / 2, w / 2 };
        unsigned long size = cap;
        double t0 = now_cpu();
        if (tjCompressFromYUVPlanes(enc, planes, w, strides, h, TJSAMP_420, &out, &size, q,
                                    TJFLAG_NOREALLOC | TJFLAG_FASTDCT) != 0) die(tjGetErrorStr2(enc));
        cpu[i] = now_cpu() - t0;
        bytes += size;
        psnr += quality_of(dec, out, size, src, w, h, scratch);
    }
    char name[64];
    snprintf(name, sizeof name, "turbojpeg q%d fastdct", q);
    report(name, cpu, frames, bytes, psnr);

    /* libavcodec mjpeg at fixed qscales, both Huffman modes. */
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
    if (!codec) die("no mjpeg encoder");
    AVPacket *pkt = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    if (!pkt || !frame) die("out of memory");
    const char *huffman[] = { "default", "optimal" };
    for (int hm = 0; hm < 2; hm++) {
        for (int qs = 1; qs <= 12; qs++) {
            AVCodecContext *ctx = avcodec_alloc_context3(codec);
            if (!ctx) die("out of memory");
            ctx->width = w; ctx->height = h; ctx->pix_fmt = AV_PIX_FMT_YUVJ420P;
            ctx->time_base = (AVRational){ 1, 30 };
            ctx->flags |= AV_CODEC_FLAG_QSCALE;
            ctx->global_quality = qs * FF_QP2LAMBDA;
            ctx->qmin = ctx->qmax = qs;
            ctx->thread_count = 1;
            if (av_opt_set(ctx->priv_data, "huffman", huffman[hm], 0) < 0) die("huffman option");
            if (avcodec_open2(ctx, codec, NULL) < 0) die("avcodec_open2 mjpeg failed");
            bytes = 0; psnr = 0;
            for (int i = 0; i < frames; i++) {
                unsigned char *src = all + fsize * i;
                frame->format = AV_PIX_FMT_YUVJ420P; frame->width = w; frame->height = h;
                frame->data[0] = src; frame->data[1] = src + ysize; frame->data[2] = src + ysize + ysize / 4;
                frame->linesize[0] = w; frame->linesize[1] = w / 2; frame->linesize[2] = w / 2;
                frame->pts = i;
                frame->quality = ctx->global_quality;
                double t0 = now_cpu();
                if (avcodec_send_frame(ctx, frame) < 0) die("avcodec_send_frame failed");
                int r = avcodec_receive_packet(ctx, pkt);
                cpu[i] = now_cpu() - t0;
                if (r < 0) die("avcodec_receive_packet failed");
                bytes += pkt->size;
                psnr += quality_of(dec, pkt->data, pkt->size, src, w, h, scratch);
                av_packet_unref(pkt);
            }
            snprintf(name, sizeof name, "libavcodec mjpeg q%d huffman=%s", qs, huffman[hm]);
            report(name, cpu, frames, bytes, psnr);
            avcodec_free_context(&ctx);
        }
    }
    av_frame_free(&frame);
    av_packet_free(&pkt);
    tjFree(out);
    if (tjDestroy(enc) != 0 || tjDestroy(dec) != 0) die("tjDestroy failed");
    free(cpu); free(all); free(scratch);
    return 0;
}
