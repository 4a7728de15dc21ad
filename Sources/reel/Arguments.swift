import ReelCore

/// A usage error: printed as one line, exit status 64.
struct UsageError: UserFacingError {
    let description: String
    init(_ message: String) { description = message }
    var exitStatus: Int32 { ExitStatus.usage }
}

/// Command-line arguments, consumed front to back. Options take `--name VALUE` or `--name=VALUE`.
struct Arguments {
    private var items: [String]
    init(_ items: [String]) { self.items = items }

    var isEmpty: Bool { items.isEmpty }

    mutating func next() -> String? { items.isEmpty ? nil : items.removeFirst() }

    /// Splits `--name=value`; returns the option and an inline value.
    static func split(_ arg: String) -> (String, String?) {
        guard arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") else { return (arg, nil) }
        return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
    }

    mutating func value(for option: String, inline: String?) throws -> String {
        if let inline { return inline }
        guard let v = next() else { throw UsageError("\(option) needs a value") }
        return v
    }
}

func parseInt(_ text: String, option: String, range: ClosedRange<Int>? = nil) throws -> Int {
    guard let n = Int(text) else { throw UsageError("\(option): '\(text)' is not a whole number") }
    if let range, !range.contains(n) { throw UsageError("\(option): \(n) is out of range (\(range.lowerBound)…\(range.upperBound))") }
    return n
}

func parseSeconds(_ text: String, option: String) throws -> Double {
    guard let s = Double(text), s.isFinite, s > 0 else { throw UsageError("\(option): '\(text)' is not a positive number of seconds") }
    return s
}
