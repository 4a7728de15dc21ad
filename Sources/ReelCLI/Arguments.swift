import Foundation
import ReelCore
import ReelStorage

/// An error of a command with its own exit status (one of the README's).
struct CommandError: UserFacingError {
    let exitStatus: Int32
    let description: String
    init(status: Int32, _ message: String) { exitStatus = status; description = message }
}

/// One option of one subcommand: the single table the parser, the usage text and the README
/// check all read (FFmpeg's AVOption idea). Options take `--name VALUE` or `--name=VALUE`.
public struct OptionSpec: Sendable {
    /// `--duration`.
    public let name: String
    /// The value's placeholder (`SECONDS`), or nil for a flag.
    public let value: String?
    /// What it means and the range it accepts (shown by `reel help`).
    public let help: String
    /// A value the parser accepts (for the tests that walk this table).
    public let sample: String?
    /// Internal (the detached helpers' own options): neither shown nor documented.
    public let hidden: Bool
    /// Printed without brackets in the usage text.
    public let required: Bool

    /// An option without a value (`--json`).
    public static func flag(_ name: String, _ help: String, hidden: Bool = false) -> OptionSpec {
        OptionSpec(name: name, value: nil, help: help, sample: nil, hidden: hidden, required: false)
    }
    /// An option with a value (`--fps N`): `placeholder` in the usage, `sample` a value the parser
    /// accepts.
    public static func value(_ name: String, _ placeholder: String, _ help: String, sample: String,
                             hidden: Bool = false, required: Bool = false) -> OptionSpec {
        OptionSpec(name: name, value: placeholder, help: help, sample: sample, hidden: hidden, required: required)
    }
    /// Whether the option takes a value.
    public var takesValue: Bool { value != nil }
}

/// One subcommand (`record`, `pool create`, …): its operands and its option table.
public struct CommandSpec: Sendable {
    /// The words after `reel`: `record`, `pool create`.
    public let name: String
    /// Placeholder for the operands (`FILE...`, `[PATH]`), or nil when it takes none.
    public let operands: String?
    /// At most this many operands.
    public let maxOperands: Int
    /// Its options, in the order the usage shows them.
    public let options: [OptionSpec]
    /// Internal (the detached helpers' commands): neither shown nor documented.
    public let hidden: Bool

    /// A command `name` with up to `maxOperands` operands (shown as `operands`) and `options`.
    public init(_ name: String, operands: String? = nil, maxOperands: Int = 0, hidden: Bool = false, _ options: [OptionSpec]) {
        self.name = name; self.operands = operands; self.maxOperands = operands == nil ? 0 : maxOperands
        self.options = options; self.hidden = hidden
    }

    /// The option called `name`, if the command has one.
    public func option(_ name: String) -> OptionSpec? { options.first { $0.name == name } }

    /// `reel record [--source SOURCE] …` for the usage text.
    public var synopsis: String {
        var parts = ["reel", name]
        if let operands { parts.append(operands) }
        for o in options where !o.hidden {
            let text = o.value.map { "\(o.name) \($0)" } ?? o.name
            parts.append(o.required ? text : "[\(text)]")
        }
        return parts.joined(separator: " ")
    }
}

/// The options and operands of one command line, in order, checked against a `CommandSpec`
/// (names known, values present) but not yet converted.
public struct ScannedArguments: Sendable {
    /// The options, in command-line order, with their values (nil for a flag).
    public var options: [(name: String, value: String?)] = []
    /// The operands, in order.
    public var operands: [String] = []

    /// Splits `argv` by `spec`. Throws a `UsageError` for an unknown option, a missing value,
    /// a value given to a flag, or too many operands.
    public init(_ argv: [String], spec: CommandSpec) throws {
        var i = 0
        while i < argv.count {
            let arg = argv[i]
            i += 1
            if arg.hasPrefix("--") {
                var name = arg, inline: String? = nil
                if let eq = arg.firstIndex(of: "=") {
                    name = String(arg[..<eq]); inline = String(arg[arg.index(after: eq)...])
                }
                guard let o = spec.option(name) else { throw UsageError("\(spec.name): unknown option '\(printable(arg))'") }
                if o.takesValue {
                    if let inline { options.append((name, inline)); continue }
                    guard i < argv.count else { throw UsageError("\(name) needs a value (\(o.value!))") }
                    options.append((name, argv[i]))
                    i += 1
                } else {
                    guard inline == nil else { throw UsageError("\(name) takes no value") }
                    options.append((name, nil))
                }
            } else {
                guard spec.operands != nil else { throw UsageError("\(spec.name): unexpected argument '\(printable(arg))'") }
                guard operands.count < spec.maxOperands else {
                    throw UsageError("\(spec.name): too many arguments ('\(printable(arg))'; \(spec.operands!))")
                }
                operands.append(arg)
            }
        }
    }
}

// MARK: Values with ranges

/// A whole number in `range`.
func parseInt(_ text: String, option: String, range: ClosedRange<Int>) throws -> Int {
    guard let n = Int(text.trimmingCharacters(in: .whitespaces)) else {
        throw UsageError("\(option): '\(printable(text))' is not a whole number (\(range.lowerBound)–\(range.upperBound))")
    }
    guard range.contains(n) else { throw UsageError("\(option): \(n) is out of range (\(range.lowerBound)–\(range.upperBound))") }
    return n
}

/// A number of seconds in `range` (finite; NaN and infinities refused).
func parseSeconds(_ text: String, option: String, range: ClosedRange<Double>) throws -> Double {
    let bounds = "\(number(range.lowerBound))–\(number(range.upperBound)) s"
    guard let s = Double(text.trimmingCharacters(in: .whitespaces)), s.isFinite, s > 0 || range.lowerBound <= 0 else {
        let what = range.lowerBound > 0 ? "a positive number of seconds" : "a number of seconds"
        throw UsageError("\(option): '\(printable(text))' is not \(what) (\(bounds))")
    }
    guard range.contains(s) else { throw UsageError("\(option): \(printable(text)) is out of range (\(bounds))") }
    return s
}

/// A byte size (`4G`, `512M`, `1.5GiB`, bytes; powers of 1024) in `range`.
func parseSize(_ text: String, option: String, range: ClosedRange<Int64>, multipleOf unit: Int64 = 1) throws -> Int64 {
    let bounds = "\(sizeText(range.lowerBound))–\(sizeText(range.upperBound))" + (unit > 1 ? ", a multiple of \(sizeText(unit))" : "")
    guard let n = parseByteSize(text) else { throw UsageError("\(option): '\(printable(text))' is not a size like 4G or 512M (\(bounds))") }
    guard range.contains(n), n % unit == 0 else { throw UsageError("\(option): \(printable(text)) is out of range (\(bounds))") }
    return n
}

/// `150M` (150 000 000 bytes per second: disk rates are decimal), `1.5G/s`, `64MiB`
/// (binary), `2000000` (bytes); 1M–10G.
func parseRate(_ text: String) throws -> Int64 {
    var t = text.trimmingCharacters(in: .whitespaces).uppercased()
    if t.hasSuffix("/S") { t.removeLast(2) }
    var bytes: Double? = nil
    if let last = t.last, let scale = ["K": 1e3, "M": 1e6, "G": 1e9][String(last)] {
        if let v = Double(t.dropLast()), v.isFinite { bytes = v * scale }
    } else if let b = parseByteSize(t) {
        bytes = Double(b)
    }
    guard let bytes else { throw UsageError("--rate: '\(printable(text))' is not a rate like 150M (1M–10G)") }
    guard bytes >= 1e6, bytes <= 1e10 else { throw UsageError("--rate: \(printable(text)) is out of range (1M–10G bytes per second)") }
    return Int64(bytes)
}

/// `4M`, `64T`: a power-of-1024 size as the range texts show it.
func sizeText(_ n: Int64) -> String {
    for (suffix, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] where n >= Int64(1) << shift && n % (Int64(1) << shift) == 0 {
        return "\(n >> shift)\(suffix)"
    }
    return "\(n)"
}

/// `0.1`, `86400`: a bound as the range texts show it.
func number(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int64(x)) : String(x) }
