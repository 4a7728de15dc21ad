import Testing
import ReelCore

@Suite struct AspectRatioTests {
    @Test(arguments: [
        (AspectRatio.landscape16x9, 1920, 1080), (.portrait9x16, 1080, 1920), (.square, 1920, 1920),
        (.landscape4x3, 1920, 1440), (.portrait3x4, 1440, 1920),
    ])
    func cropsOfSquareSensor(ratio: AspectRatio, width: Int, height: Int) {
        let crop = ratio.crop(in: Size(width: 1920, height: 1920))
        #expect(crop.width == width && crop.height == height)
        #expect(crop.x == (1920 - width) / 2 && crop.y == (1920 - height) / 2)
    }

    @Test func cropsAreEvenAndCentredOnAnySensor() {
        for sensor in [Size(width: 1280, height: 720), Size(width: 1282, height: 1282), Size(width: 4032, height: 4032), Size(width: 640, height: 480)] {
            for ratio in AspectRatio.allCases {
                let c = ratio.crop(in: sensor)
                #expect(c.width % 2 == 0 && c.height % 2 == 0 && c.x % 2 == 0 && c.y % 2 == 0, "\(ratio) in \(sensor): \(c)")
                #expect(c.x * 2 + c.width == sensor.width && c.y * 2 + c.height == sensor.height)
                #expect(c.width <= sensor.width && c.height <= sensor.height)
                // Within 4 pixels of the exact ratio on the cropped side.
                let (a, b) = ratio.components
                #expect(abs(c.width * b - c.height * a) <= 4 * max(a, b), "\(ratio) in \(sensor): \(c)")
            }
        }
        #expect(AspectRatio.portrait9x16.crop(in: Size(width: 1280, height: 720)).width == 404)
    }

    @Test func parsesSpellings() {
        #expect(AspectRatio(parsing: "16:9") == .landscape16x9)
        #expect(AspectRatio(parsing: "9x16") == .portrait9x16)
        #expect(AspectRatio(parsing: "2x1") == nil)
    }
}

@Suite struct BarcodeTests {
    @Test func roundTripsAndRejectsNoise() {
        let w = 640, h = 480
        var plane = [UInt8](repeating: 128, count: w * h)
        plane.withUnsafeMutableBufferPointer { buf in
            for index in [0, 1, 59, 60, 12345, FrameBarcode.maxIndex] {
                FrameBarcode.draw(index: index, luma: buf.baseAddress!, stride: w, centerX: w / 2, centerY: h / 2)
                let read = FrameBarcode.read(LumaPlane(base: UnsafeRawPointer(buf.baseAddress!), stride: w, width: w, height: h, depth: 8))
                #expect(read == index)
            }
            // Flip one cell: the CRC must refuse it.
            let x0 = w / 2 - FrameBarcode.width / 2, y0 = h / 2 - FrameBarcode.height / 2
            for y in y0..<(y0 + 32) { for x in x0..<(x0 + 32) { buf[y * w + x] = buf[y * w + x] == 16 ? 235 : 16 } }
            #expect(FrameBarcode.read(LumaPlane(base: UnsafeRawPointer(buf.baseAddress!), stride: w, width: w, height: h, depth: 8)) == nil)
            buf.update(repeating: 128)
            #expect(FrameBarcode.read(LumaPlane(base: UnsafeRawPointer(buf.baseAddress!), stride: w, width: w, height: h, depth: 8)) == nil)
        }
    }

    @Test func readsTenBitSamples() {
        let w = 400, h = 300
        var eight = [UInt8](repeating: 100, count: w * h)
        eight.withUnsafeMutableBufferPointer { FrameBarcode.draw(index: 777, luma: $0.baseAddress!, stride: w, centerX: w / 2, centerY: h / 2) }
        let ten = eight.map { UInt16($0) << 2 }
        let read = ten.withUnsafeBytes { FrameBarcode.read(LumaPlane(base: $0.baseAddress!, stride: w * 2, width: w, height: h, depth: 10)) }
        #expect(read == 777)
    }
}

@Suite struct TimestampTests {
    @Test func comparesAcrossTimescales() {
        #expect(Timestamp(value: 1, timescale: 30) == Timestamp(value: 3000, timescale: 90000))
        #expect(Timestamp(value: 1, timescale: 30) < Timestamp(value: 3001, timescale: 90000))
        #expect(FrameRate(parsing: "29.97") == FrameRate(frames: 30000, seconds: 1001))
        #expect(Timestamp(parsing: "60/30") == Timestamp(value: 2, timescale: 1))
    }
}
