import Foundation
import ReelCore

let usage = """
usage: reel record [--source synthetic[:SIZE] | v4l2:/dev/videoN[:WxH][@FPS][:FOURCC]] [--fps N] [--duration SECONDS | --frames N]
                   [--codec prores[:proxy|lt|standard|hq|4444]|h264|hevc|ffv1] [--container mov|mp4|mkv]
                   [--ratio 1x1|4x3|3x4|16x9|9x16] [--ratio-at T:RATIO | --ratio-at #N:RATIO ...]
                   [--no-realtime] [--out DIR] [--name PREFIX] [--fragment SECONDS] [--json]
       reel devices [--json]
       reel probe FILE... [--frames] [--json]
       reel verify FILES-or-DIR... [--json]
       reel pool create [PATH] --capacity SIZE [--slot SIZE] [--write-mode auto|buffered|direct] [--prefill zero|fallocate]
                        [--background] [--seconds S] [--json]
       reel pool status|recover|delete [PATH] [--json]
       reel pool resize [PATH] --capacity SIZE [--background] [--json]
       reel pool wait [PATH] [--timeout SECONDS] [--json]
       reel pool calibrate [PATH] [--seconds S] [--json]
       reel jitter [--pool PATH | --dir DIR] [--rate 150M] [--block 1M] [--duration 30]
                   [--contention none|bulk|fsync|metadata|memory|all[,...]] [--arms pool,buffered,buffered-fdatasync,...]
                   [--ring 64M] [--fps 30] [--no-floor] [--report DIR] [--json]
       (record: --pool PATH records through that pool; --plain writes files directly)
"""

var args = Arguments(Array(CommandLine.arguments.dropFirst()))
let status: Int32
do {
    switch args.next() {
    case "record": status = try RecordCommand.run(&args)
    case "probe": status = try ProbeCommand.run(&args)
    case "verify": status = try VerifyCommand.run(&args)
    case "pool": status = try PoolCommand.run(&args)
    case "jitter": status = try JitterCommand.run(&args)
    case "devices": status = try DevicesCommand.run(&args)
    case "_load": status = try JitterCommand.load(&args)
    case "help", "--help", "-h":
        print(usage)
        status = 0
    case nil:
        writeStderr(usage + "\n")
        status = ExitStatus.usage
    case let other?:
        throw UsageError("unknown command '\(other)' (use record, probe, verify, pool, jitter or devices)")
    }
} catch let e as any UserFacingError {
    printError(e.description)
    status = e.exitStatus
} catch {
    printError(String(describing: error))
    status = ExitStatus.software
}
exit(status)
