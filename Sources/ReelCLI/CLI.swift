import Foundation
import ReelBench
import ReelCamera
import ReelCore
import ReelWriter

/// A command line, parsed and checked: what `reel` will do, with typed options. Parsing has
/// no side effects (no files, no processes, no terminal); `ReelCLI.run` does the work.
public enum ParsedCommand: Sendable {
    /// `report`: the `--report` directory, where the recording's write-latency plot goes.
    case record(CameraConfiguration, json: Bool, report: String?)
    /// `reel photo`.
    case photo(PhotoInvocation)
    /// `reel probe FILE…` (`--frames`: every frame's barcode; `--json`).
    case probe(files: [String], frames: Bool, json: Bool)
    /// `reel verify PATH…`: each clip's frames, barcodes and seams checked (`--json`).
    case verify(paths: [String], json: Bool)
    /// `reel devices`: the V4L2 cameras and evdev inputs (`--json`).
    case devices(json: Bool)
    /// `reel control`: the socket and the JSON lines to send (ReelControl).
    case control(socket: String, lines: [String], timeout: Double)
    /// `reel cost` and `reel calibrate` (issue 13).
    case cost(RecordOptions, json: Bool, preview: Bool)
    /// `reel calibrate` (`--refresh`: measure again; `--json`).
    case calibrate(json: Bool, refresh: Bool)
    /// `reel jitter`.
    case jitter(JitterInvocation)
    /// `reel pool …`.
    case pool(PoolInvocation)
    /// `reel _load`: one contention load of `reel jitter`, run as its own process.
    case load(LoadInvocation)
    /// `reel preview`.
    case preview(PreviewInvocation)
    /// `reel help`: every command's options; `reel help COMMAND` and `reel COMMAND --help`:
    /// that command's alone (its name: `record`, `pool create`).
    case help(String?)
    /// `reel _docs man|bash-completion`: the man page or the bash completion, made from the
    /// option tables (`scripts/make-docs` writes them to `docs/`).
    case docs(String)
    /// `reel _faces`: face detection scored on the people scene (`scripts/bench framing`).
    case faces(FacesCommand.Invocation)
    /// `reel _shake`: how much a video shakes (`scripts/bench stabilization`).
    case shake(ShakeCommand.Invocation)
}

/// `reel jitter …` as parsed: the options and where the report goes.
public struct JitterInvocation: Sendable {
    /// The measurement's options (`--rate`, `--block`, `--duration`, `--arms`, `--ring`, `--fps`,
    /// `--no-floor`).
    public var options: JitterOptions
    /// `--dir`: the directory to write in (nil: the default pool's parent directory).
    public var dir: String?
    /// `--pool`: measure in this pool's directory (wins over `--dir`).
    public var poolPath: String?
    /// `--report`: the directory for the JSON and SVG report.
    public var report: String?
    /// `--contention`: the scenarios to run, each a set of contention loads (`[[]]`: none).
    public var scenarios: [[ContentionKind]]
    /// `--json`: print the result as JSON.
    public var json: Bool
}

/// `reel _load KIND --dir D --seconds S` as parsed.
public struct LoadInvocation: Sendable {
    /// The load to run.
    public var kind: ContentionKind
    /// `--dir`: where it writes or reads.
    public var directory: String
    /// `--seconds`: how long it runs.
    public var seconds: Double
}

/// The command line's entry points: `parse` (no side effects) and `run`.
public enum ReelCLI {
    /// Parses `argv` (without the program name). Throws a `UserFacingError` (exit 64) for a
    /// command line that is not one.
    public static func parse(_ argv: [String]) throws -> ParsedCommand {
        guard let command = argv.first else {
            throw UsageError("no command: use record, preview, photo, cost, calibrate, probe, verify, pool, jitter, devices or control (reel help lists every option)")
        }
        let rest = Array(argv.dropFirst())
        if let name = CommandTable.helpAsked(command: command, rest: rest) { return .help(name) }
        switch command {
        case "record":
            let (configuration, json, report) = try RecordCommand.parse(rest)
            return .record(configuration, json: json, report: report)
        case "photo": return .photo(try PhotoCommand.parse(rest))
        case "probe": return try ProbeCommand.parse(rest)
        case "verify": return try VerifyCommand.parse(rest)
        case "devices": return try DevicesCommand.parse(rest)
        case "control": return try ControlCommand.parse(rest)
        case "cost": return try CostCommand.parse(rest)
        case "calibrate": return try CalibrateCommand.parse(rest)
        case "jitter": return .jitter(try JitterCommand.parse(rest))
        case "pool": return .pool(try PoolCommand.parse(rest))
        case "_load": return .load(try JitterCommand.parseLoad(rest))
        case "preview": return .preview(try PreviewCommand.parse(rest))
        case "help", "--help", "-h":
            guard !rest.isEmpty else { return .help(nil) }
            let name = rest.joined(separator: " ")
            guard CommandTable.help(for: name) != nil else {
                throw UsageError("help: unknown command '\(printable(name))' (use record, preview, photo, cost, calibrate, probe, verify, pool, jitter, devices or control)")
            }
            return .help(name)
        case "_faces": return .faces(try FacesCommand.parse(rest))
        case "_shake": return .shake(try ShakeCommand.parse(rest))
        case "_docs":
            guard rest.count == 1, ["man", "bash-completion"].contains(rest[0]) else { throw UsageError("_docs takes man or bash-completion") }
            return .docs(rest[0])
        default:
            throw UsageError("unknown command '\(printable(command))' (use record, preview, photo, cost, calibrate, probe, verify, pool, jitter, devices or control)")
        }
    }

    /// Does what `command` says; returns the exit status.
    /// - Throws: the command's `UserFacingError` (its exit status and one-line message) or another
    ///   error, which `report` turns into a line and a status.
    public static func run(_ command: ParsedCommand) throws -> Int32 {
        switch command {
        case .record(let configuration, let json, let report):
            return try RecordCommand.run(configuration, json: json, report: report)
        case .photo(let p): return try PhotoCommand.run(p)
        case .probe(let files, let frames, let json): return try ProbeCommand.run(files: files, frames: frames, json: json)
        case .verify(let paths, let json): return try VerifyCommand.run(paths: paths, json: json)
        case .devices(let json): return DevicesCommand.run(json: json)
        case .faces(let f): return try FacesCommand.run(f)
        case .shake(let s): return try ShakeCommand.run(s)
        case .control(let socket, let lines, let timeout): return try ControlCommand.run(socket: socket, lines: lines, timeout: timeout)
        case .cost(let o, let json, let preview): return try CostCommand.run(o, json: json, preview: preview)
        case .calibrate(let json, let refresh): return try CalibrateCommand.run(json: json, refresh: refresh)
        case .jitter(let j): return try JitterCommand.run(j)
        case .pool(let p): return try PoolCommand.run(p)
        case .load(let l): return JitterCommand.load(l)
        case .preview(let p): return try PreviewCommand.run(p)
        case .help(let name):
            print(name.flatMap(CommandTable.help(for:)) ?? CommandTable.help, terminator: "")
            return 0
        case .docs(let which):
            print(which == "man" ? CommandTable.manPage : CommandTable.bashCompletion, terminator: "")
            return 0
        }
    }

    /// `reel ARGS…`: parses, runs, prints an error as one line; returns the exit status.
    public static func main(_ argv: [String]) -> Int32 {
        do {
            return try run(try parse(argv))
        } catch {
            let (line, status) = report(error)
            printError(line)
            return status
        }
    }

    /// The one line (after `reel: `) and the exit status `reel` reports for `error`.
    public static func report(_ error: any Error) -> (line: String, status: Int32) {
        if let e = error as? any UserFacingError { return (oneLine(e.description), e.exitStatus) }
        return (oneLine(String(describing: error)), ExitStatus.software)
    }
}

/// A message as one line: line breaks in it (from a path, say) escaped.
func oneLine(_ text: String) -> String {
    text.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
        .replacingOccurrences(of: "\u{2028}", with: "\\u{2028}").replacingOccurrences(of: "\u{2029}", with: "\\u{2029}")
        .replacingOccurrences(of: "\u{85}", with: "\\u{85}")
}
