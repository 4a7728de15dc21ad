import Foundation
import Synchronization
import ReelCamera
import ReelCapacity
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelWriter

/// `reel cost [record options] [--json]`: the hardware cost of a recording on this machine
/// (the largest share any resource is asked for, counting the other live Reel recordings),
/// without recording, and what `reel record` would do with it. Exit 0 when `reel record` would
/// record it (as asked or adjusted), 69 when it would refuse it (a real-time recording above 1,
/// or one nothing on the ladder fits).
enum CostCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        let (configuration, json, _) = try RecordCommand.parse(argv, spec: CommandTable.cost)
        return .cost(configuration.recording, json: json, preview: configuration.preview != nil)
    }

    static func run(_ options: RecordOptions, json: Bool, preview: Bool) throws -> Int32 {
        guard let demand = CapacityGate.demand(options, preview: preview) else {
            throw UsageError("cost: a V4L2 camera's cost needs its size (v4l2:/dev/videoN:WxH)")
        }
        // The figures `reel record` counts with: the cached calibration, else the shipped table
        // scaled by this machine's CPU probe (`reel calibrate` measures them).
        guard let calibration = CapacityGate.calibration() else { throw CapacityError.noCalibration("no cost figures for this machine") }
        let model = CapacityGate.model(calibration, options: options)
        let others = try SessionRegistry().live()
        let cost = try model.cost(demand, others: others)
        // What `reel record` would do with it in real time: record it, or the first rung of the
        // ladder that fits (`--strict` refuses instead).
        var record: String? = nil, refusedByRecord: String? = nil
        if options.realtime {
            var lowerRates = true
            if case .v4l2 = options.source { lowerRates = false }
            switch try model.validate(demand, others: others, lowerRates: lowerRates, allowed: { options.container.supports($0) }) {
            case .valid: record = nil
            case .adjusted(let a, _): record = "reel record would record \(a.chosen.description) instead (\(CostFormat.share(a.chosen.cost))): more than \(CostFormat.share(a.target)) of this machine does not keep real time"
            case .invalid(let asked):
                record = "reel record would refuse it: nothing on the ladder fits within \(CostFormat.share(CostModel.realtimeTarget))"
                refusedByRecord = "\(asked.needs); nothing down the ladder (lighter codecs, then lower rates) fits within the \(CostFormat.share(CostModel.realtimeTarget)) a real-time recording may take"
            }
        }
        if json {
            printJSON(cost)
        } else {
            print("hardware cost \(CostFormat.share(cost.cost)) (\(cost.bottleneck)): \(cost.session.description)")
            for r in cost.resources {
                let figures = r.measured
                    ? "this \(CostFormat.share(r.share))  others \(CostFormat.share(r.othersShare))  total \(CostFormat.share(r.total))"
                    : "not counted"
                print("  \(r.name.padding(toLength: 8, withPad: " ", startingAt: 0)) \(figures)  (\(r.capacity))")
            }
            for o in cost.others {
                print("  other recording: pid \(o.pid): \(o.shares.description) (encoder \(CostFormat.share(o.shares.encoder + o.shares.preview)))")
            }
            let probe = String(format: "%.2f ms against the table's %.2f ms", calibration.cpuProbeMilliseconds ?? 0, CostTable.reference?.cpuProbeMilliseconds ?? 0)
            print("  figures: " + (calibration.isEstimate ? "estimated (Reel's shipped cost table scaled by this machine's CPU probe, \(probe); reel calibrate measures them)" : "measured by reel calibrate"))
            if let record { print("  \(record)") }
        }
        // What `reel record` refuses (a real-time recording: above 1, or nothing on the ladder
        // fits), this refuses with the same exit status; a --no-realtime recording never is.
        if options.realtime, let refusal = cost.refusal ?? refusedByRecord {
            printError(refusal)
            return ExitStatus.unavailable
        }
        return 0
    }
}
