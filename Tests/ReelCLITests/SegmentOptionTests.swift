import Foundation
import Testing
import ReelCore
import ReelCLI
import ReelWriter

/// `reel record --segment-duration SECONDS` (docs/cli.md): 0.001–86400 s of media time; anything else
/// is a usage error (exit 64, one line).
@Suite struct SegmentOptionTests {
    func segment(_ v: String) throws -> Double? {
        guard case .record(let c, _, _) = try ReelCLI.parse(["record", "--segment-duration", v]) else {
            Issue.record("reel record did not parse as record")
            return nil
        }
        return c.recording.segmentDuration
    }

    @Test func parsesSecondsOfMediaTime() throws {
        #expect(try segment("2.1") == 2.1)
        #expect(try segment("0.001") == 0.001)
        #expect(try segment("86400") == 86400)
        guard case .record(let c, _, _) = try ReelCLI.parse(["record"]) else { Issue.record("not record"); return }
        #expect(c.recording.segmentDuration == nil)
    }

    @Test func zeroAndNonNumbersAreUsageErrors() {
        for v in ["0", "-1", "0.0009", "86401", "abc", "nan", "inf", "1e300", "", "2s"] {
            #expect(throws: UsageError.self, "--segment-duration \(v)") { _ = try ReelCLI.parse(["record", "--segment-duration", v]) }
        }
        // `reel cost` does not take it.
        #expect(throws: (any Error).self) { _ = try ReelCLI.parse(["cost", "--segment-duration", "1"]) }
    }

    /// What `reel` prints and exits with (`ReelCLI.report`, as `main` does), in-process:
    /// exit 64 with one `--segment-duration` line.
    @Test(arguments: ["0", "abc"]) func refusedWithExit64AndOneLine(value: String) throws {
        do {
            _ = try ReelCLI.parse(["record", "--segment-duration", value])
            Issue.record("--segment-duration \(value) was accepted")
        } catch {
            let (line, status) = ReelCLI.report(error)
            #expect(status == 64)
            #expect(line.hasPrefix("--segment-duration: ") && !line.contains("\n"), "\(line)")
        }
    }

    func budget(_ v: String) throws -> LoopBudget? {
        guard case .record(let c, _, _) = try ReelCLI.parse(["record", "--keep", v]) else { return nil }
        return c.recording.loopBudget
    }

    /// `--keep`: a time or a size, always with its unit.
    @Test func loopBudgetTakesATimeOrASizeWithItsUnit() throws {
        #expect(try budget("600s") == .seconds(600))
        #expect(try budget("10min") == .seconds(600))
        #expect(try budget("1h") == .seconds(3600))
        #expect(try budget("1s") == .seconds(1) && budget("8760h") == .seconds(8760 * 3600))
        #expect(try budget("500M") == .bytes(500 << 20))
        #expect(try budget("2G") == .bytes(2 << 30))
        #expect(try budget("1M") == .bytes(1 << 20) && budget("64T") == .bytes(64 << 40))
        for v in ["600", "0s", "0.5s", "8761h", "1023K", "65T", "abc", "", "nan", "-1h", "infs"] {
            #expect(throws: UsageError.self, "--keep \(v)") { _ = try ReelCLI.parse(["record", "--keep", v]) }
        }
    }
}

/// `reel record --segment-size SIZE` (docs/cli.md): 64K–64T with its unit; anything else is a
/// usage error (exit 64, one line).
@Suite struct SegmentSizeOptionTests {
    func size(_ v: String) throws -> Int64? {
        guard case .record(let c, _, _) = try ReelCLI.parse(["record", "--segment-size", v]) else { return nil }
        return c.recording.segmentSize
    }

    @Test func parsesASizeWithItsUnit() throws {
        #expect(try size("500M") == 500 << 20)
        #expect(try size("2G") == 2 << 30)
        #expect(try size("64K") == 64 << 10 && size("64T") == 64 << 40)
        guard case .record(let c, _, _) = try ReelCLI.parse(["record"]) else { Issue.record("not record"); return }
        #expect(c.recording.segmentSize == nil)
    }

    @Test(arguments: ["1K", "63K", "65T", "abc", "", "-5M"]) func refusedWithExit64AndOneLine(value: String) throws {
        do {
            _ = try ReelCLI.parse(["record", "--segment-size", value])
            Issue.record("--segment-size \(value) was accepted")
        } catch {
            let (line, status) = ReelCLI.report(error)
            #expect(status == 64)
            #expect(line.hasPrefix("--segment-size: ") && !line.contains("\n"), "\(line)")
        }
    }
}
