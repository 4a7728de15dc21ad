import CHeif
import CPNG
import CTurboJPEG
import Foundation
import ReelCore

/// The photo output's encoders, prepared for the largest picture ahead of the first press
/// (Apple's `setPreparedPhotoSettingsArray`): the TurboJPEG handle and its worst-case output
/// buffer (`tjAlloc(tjBufSize)`), and libheif's x265 plugin loaded by a small warm-up encode.
/// Used by one thread at a time (the output's worker).
final class PhotoEncoder: @unchecked Sendable {
    private let jpeg: tjhandle
    private let jpegBuffer: UnsafeMutablePointer<UInt8>
    private let jpegCapacity: UInt
    let maxSize: Size

    /// - Throws: `PhotoError.encoder` when TurboJPEG or libheif cannot start.
    init(maxSize: Size, warmUp formats: Set<PhotoFileFormat>) throws(PhotoError) {
        self.maxSize = maxSize
        guard let handle = tjInitCompress() else {
            throw PhotoError.encoder("tjInitCompress: \(String(cString: tjGetErrorStr2(nil)))")
        }
        let side = Int32(max(maxSize.width, maxSize.height))
        let capacity = tjBufSize(side, side, Int32(TJSAMP_420.rawValue))
        guard capacity > 0, capacity != UInt(bitPattern: -1), let buffer = tjAlloc(Int32(capacity)) else {
            if tjDestroy(handle) != 0 { /* nothing more to release it with */ }
            throw PhotoError.encoder("tjAlloc of \(capacity) bytes failed")
        }
        jpeg = handle; jpegBuffer = buffer; jpegCapacity = capacity
        // Touch the buffer so its pages exist before the first photo.
        buffer.update(repeating: 0, count: Int(capacity))
        if formats.contains(.heic) {
            let small = PhotoImage(width: 64, height: 64)
            small.y.update(repeating: 128); small.u.update(repeating: 128); small.v.update(repeating: 128)
            _ = try encodeHEIC(small, quality: .speed, exif: [])
        }
    }

    deinit {
        tjFree(jpegBuffer)
        if tjDestroy(jpeg) != 0 { /* nothing more to release it with */ }
    }

    /// The file's bytes for `image` with the EXIF block `exif` (`Exif\0\0` + TIFF).
    func encode(_ image: PhotoImage, format: PhotoFileFormat, quality: PhotoQuality, exif: [UInt8]) throws(PhotoError) -> [UInt8] {
        switch format {
        case .jpeg: return try encodeJPEG(image, quality: quality, exif: exif)
        case .heic: return try encodeHEIC(image, quality: quality, exif: exif)
        case .png: return try encodePNG(image, exif: exif)
        }
    }

    // MARK: JPEG

    /// `tjCompressFromYUVPlanes` into the prepared buffer, then SOI, an APP1 segment with the
    /// EXIF block, and the rest of TurboJPEG's stream.
    private func encodeJPEG(_ image: PhotoImage, quality: PhotoQuality, exif: [UInt8]) throws(PhotoError) -> [UInt8] {
        guard exif.count + 2 <= 0xFFFF else { throw PhotoError.encoder("EXIF block of \(exif.count) bytes is too large for JPEG") }
        var out: UnsafeMutablePointer<UInt8>? = jpegBuffer
        var size: UInt = jpegCapacity
        var strides: [Int32] = [Int32(image.width), Int32(image.chromaWidth), Int32(image.chromaWidth)]
        var planes: [UnsafePointer<UInt8>?] = [UnsafePointer(image.y.baseAddress), UnsafePointer(image.u.baseAddress), UnsafePointer(image.v.baseAddress)]
        let flags = TJFLAG_NOREALLOC | (quality == .speed ? TJFLAG_FASTDCT : TJFLAG_ACCURATEDCT)
        let status = tjCompressFromYUVPlanes(jpeg, &planes, Int32(image.width), &strides, Int32(image.height),
                                             Int32(TJSAMP_420.rawValue), &out, &size, quality.jpegQuality, flags)
        guard status == 0, let out, size > 2 else {
            throw PhotoError.encoder("tjCompressFromYUVPlanes: \(String(cString: tjGetErrorStr2(jpeg)))")
        }
        var file: [UInt8] = []
        file.reserveCapacity(Int(size) + exif.count + 4)
        file += [0xFF, 0xD8, 0xFF, 0xE1, UInt8((exif.count + 2) >> 8), UInt8((exif.count + 2) & 0xFF)]
        file += exif
        file += UnsafeBufferPointer(start: out + 2, count: Int(size) - 2)
        return file
    }

    // MARK: HEIC

    private static func check(_ e: heif_error, _ call: String) throws(PhotoError) {
        guard e.code == heif_error_Ok else {
            throw PhotoError.encoder("\(call): \(e.message.map { String(cString: $0) } ?? "error \(e.code.rawValue)")")
        }
    }

    /// A libheif image of the planes (BT.601 limited range, as the sensor gives them),
    /// encoded with the x265 plugin, the EXIF block added as an item, written into memory.
    private func encodeHEIC(_ image: PhotoImage, quality: PhotoQuality, exif: [UInt8]) throws(PhotoError) -> [UInt8] {
        guard let ctx = heif_context_alloc() else { throw PhotoError.encoder("heif_context_alloc failed") }
        defer { heif_context_free(ctx) }
        var picture: OpaquePointer? = nil
        try Self.check(heif_image_create(Int32(image.width), Int32(image.height), heif_colorspace_YCbCr, heif_chroma_420, &picture), "heif_image_create")
        guard let picture else { throw PhotoError.encoder("heif_image_create gave no image") }
        defer { heif_image_release(picture) }
        let planes: [(heif_channel, UnsafeMutableBufferPointer<UInt8>, Int, Int)] = [
            (heif_channel_Y, image.y, image.width, image.height),
            (heif_channel_Cb, image.u, image.chromaWidth, image.chromaHeight),
            (heif_channel_Cr, image.v, image.chromaWidth, image.chromaHeight),
        ]
        for (channel, source, w, h) in planes {
            try Self.check(heif_image_add_plane(picture, channel, Int32(w), Int32(h), 8), "heif_image_add_plane")
            var stride: Int32 = 0
            guard let dst = heif_image_get_plane(picture, channel, &stride), let src = source.baseAddress else {
                throw PhotoError.encoder("heif_image_get_plane gave no plane")
            }
            for row in 0..<h { (dst + row * Int(stride)).update(from: src + row * w, count: w) }
        }
        guard let nclx = heif_nclx_color_profile_alloc() else { throw PhotoError.encoder("heif_nclx_color_profile_alloc failed") }
        defer { heif_nclx_color_profile_free(nclx) }
        nclx.pointee.color_primaries = heif_color_primaries_ITU_R_BT_601_6
        nclx.pointee.transfer_characteristics = heif_transfer_characteristic_ITU_R_BT_601_6
        nclx.pointee.matrix_coefficients = heif_matrix_coefficients_ITU_R_BT_601_6
        nclx.pointee.full_range_flag = 0
        try Self.check(heif_image_set_nclx_color_profile(picture, nclx), "heif_image_set_nclx_color_profile")

        var encoder: OpaquePointer? = nil
        try Self.check(heif_context_get_encoder_for_format(ctx, heif_compression_HEVC, &encoder), "heif_context_get_encoder_for_format(HEVC)")
        guard let encoder else { throw PhotoError.encoder("libheif has no HEVC encoder (install libheif's x265 plugin)") }
        defer { heif_encoder_release(encoder) }
        try Self.check(heif_encoder_set_lossy_quality(encoder, quality.heicQuality), "heif_encoder_set_lossy_quality")
        try Self.check(heif_encoder_set_parameter(encoder, "preset", quality.heicPreset), "heif_encoder_set_parameter(preset)")
        try Self.check(heif_encoder_set_parameter(encoder, "chroma", "420"), "heif_encoder_set_parameter(chroma)")
        var handle: OpaquePointer? = nil
        try Self.check(heif_context_encode_image(ctx, picture, encoder, nil, &handle), "heif_context_encode_image")
        guard let handle else { throw PhotoError.encoder("heif_context_encode_image gave no handle") }
        defer { heif_image_handle_release(handle) }
        if !exif.isEmpty {
            try Self.check(exif.withUnsafeBytes { heif_context_add_exif_metadata(ctx, handle, $0.baseAddress, Int32($0.count)) },
                           "heif_context_add_exif_metadata")
        }
        var buffer = CHeif_buffer(data: nil, size: 0, capacity: 0, failed: 0)
        defer { free(buffer.data) }
        try Self.check(CHeif_writeToMemory(ctx, &buffer), "heif_context_write")
        guard let data = buffer.data, buffer.size > 0 else { throw PhotoError.encoder("heif_context_write wrote nothing") }
        return Array(UnsafeBufferPointer(start: data, count: buffer.size))
    }

    // MARK: PNG

    /// BT.601 limited-range 4:2:0 to 16-bit RGB (chroma upsampled by nearest neighbour), then
    /// libpng (zlib level 1) with the EXIF block, from its TIFF header, in an eXIf chunk.
    private func encodePNG(_ image: PhotoImage, exif: [UInt8]) throws(PhotoError) -> [UInt8] {
        let w = image.width, h = image.height
        let rgb = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: w * h * 3)
        defer { rgb.deallocate() }
        // Fixed point, 16 fractional bits: 255 * 257 * (1.164 (Y-16) + …) / 255.
        for row in 0..<h {
            let yLine = row * w, cLine = (row / 2) * image.chromaWidth, out = row * w * 3
            for x in 0..<w {
                let c = Int(image.y[yLine + x]) - 16
                let d = Int(image.u[cLine + x / 2]) - 128
                let e = Int(image.v[cLine + x / 2]) - 128
                let r = (76309 * c + 104597 * e) >> 8
                let g = (76309 * c - 25675 * d - 53279 * e) >> 8
                let b = (76309 * c + 132201 * d) >> 8
                // r, g, b are 8-bit values × 256; × 257 / 256 spreads 0…255 over 0…65535.
                rgb[out + 3 * x] = UInt16(clamping: r + r >> 8)
                rgb[out + 3 * x + 1] = UInt16(clamping: g + g >> 8)
                rgb[out + 3 * x + 2] = UInt16(clamping: b + b >> 8)
            }
        }
        let tiff = exif.count > 6 ? Array(exif.dropFirst(6)) : []
        var buffer = CPNG_buffer(data: nil, size: 0, capacity: 0, failed: 0)
        var message = [CChar](repeating: 0, count: 256)
        let status = tiff.withUnsafeBufferPointer { t in
            CPNG_encodeRGB16(rgb.baseAddress, Int32(w), Int32(h), w * 3, 1, t.baseAddress, UInt32(t.count), &buffer, &message, message.count)
        }
        defer { free(buffer.data) }
        guard status == 0, let data = buffer.data else {
            throw PhotoError.encoder(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return Array(UnsafeBufferPointer(start: data, count: buffer.size))
    }
}
