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
/// without recording. Exit 0 when it fits (cost ≤ 1), 69 when `reel record` would refuse it.
enum CostCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        let (configuration, json, _) = try RecordCommand.parse(argv, spec: CommandTable.cost)
        return .cost(configuration.recording, json: json, preview: configuration.preview != nil)
    }

    static func run(_ options: RecordOptions, json: Bool, preview: Bool) throws -> Int32 {
        guard let demand = CapacityGate.demand(options, preview: preview) else {
            throw UsageError("cost: a V4L2 camera's cost needs its size (v4l2:/dev/videoN:WxH)")
        }
        // Measured on first use (the cache missing, damaged or stale), silently: stderr stays
        // one line when the cost is refused.
        let (calibration, _) = try Calibration.load(measure: { try Calibrator().measure() })
        let model = CapacityGate.model(calibration, options: options)
        let cost = try model.cost(demand, others: try SessionRegistry().live())
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
        }
        if let refusal = cost.refusal {
            printError(refusal)
            return ExitStatus.unavailable
        }
        return 0
    }
}
