import Foundation
import ReelCore

func printJSON<T: Encodable>(_ value: T) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    if let data = try? encoder.encode(value), let text = String(data: data, encoding: .utf8) {
        print(text)
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data(("reel: " + message + "\n").utf8))
}

/// One `reel: warning: …` line on stderr: something the user should know that did not fail
/// the command (README, "Exit status": a failing run still ends with one `reel: ` error line).
func printWarning(_ message: String) {
    FileHandle.standardError.write(Data(("reel: warning: " + message + "\n").utf8))
}

/// `S` seconds as `M:SS`, or `H:MM:SS` from an hour.
func clock(_ seconds: Double) -> String {
    let s = Int(max(0, min(seconds, 360_000_000)).rounded(.down))
    func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
    return s >= 3600 ? "\(s / 3600):\(two(s / 60 % 60)):\(two(s % 60))" : "\(s / 60):\(two(s % 60))"
}

func writeStderr(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

func fixed(_ x: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", x) }

func megabytes(_ bytes: Int64) -> String { fixed(Double(bytes) / 1_000_000) + " MB" }

/// This executable's own path, to start helpers (`reel _load`, `reel pool _prepare`).
let selfExecutable: String = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
