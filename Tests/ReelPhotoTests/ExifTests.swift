import Foundation
import Testing
import ReelPhoto

@Suite struct ExifBlockTests {
    @Test func blockStartsWithTheExifHeaderAndCarriesTheFields() throws {
        let f = ExifFields(make: "Reel", model: "Synthetic", orientation: 6, capturedAt: Date(timeIntervalSince1970: 1_700_000_000.25),
                           width: 4032, height: 3024, frameIndex: 42, sessionTime: 1.4, pressTime: 1.39, sessionID: 0xABCD, quality: .balanced)
        let block = try f.block()
        #expect(Array(block.prefix(6)) == Array("Exif\0\0".utf8))
        #expect(Array(block[6..<8]) == Array("II".utf8))
        let text = String(decoding: block, as: UTF8.self)
        #expect(text.contains("Synthetic"))
        #expect(text.contains("2023:11:14 22:13:20"))
        #expect(text.contains(f.userComment))
        #expect(f.imageUniqueID == "0000002A0000000000155CC00000ABCD")
    }
}
