import Foundation
import ReelCore

/// The man page (`docs/reel.1`), made from the option tables by `reel _docs man`.
extension CommandTable {
    /// The exit statuses the man page lists, with what each means (docs/cli.md's table).
    public static let exitStatuses: [(Int32, String)] = [
        (0, "success (a recording that dropped frames says so in one reel: warning: line; see --fail-on-drop)"),
        (ExitStatus.usage, "a bad command line or option value"),
        (ExitStatus.dataError, "verify found a violation; a pool manifest is damaged or foreign"),
        (ExitStatus.noInput, "a file to read is missing or not media; no such video device; not a pool"),
        (ExitStatus.unavailable, "an encoder is missing; the camera is busy; the configuration does not fit this machine"),
        (ExitStatus.software, "an encoder or muxer failed"),
        (ExitStatus.cantCreate, "the output directory is not writable, a clip name exists, or a pool does not fit"),
        (ExitStatus.ioError, "the disk is full, a write or writeback failed, or the camera was lost while recording"),
        (ExitStatus.busy, "the pool is busy, the preview port is in use, frames were dropped under --fail-on-drop, or a timeout passed; try again"),
        (ExitStatus.permission, "permission denied (the video device, the preview port, the session registry)"),
        (ExitStatus.interrupted, "a second SIGINT while recording quit at once"),
    ]

    /// `text` for troff: backslashes doubled as `\e`, hyphens as `\-`, a leading dot or quote
    /// kept from being read as a request.
    static func troff(_ text: String) -> String {
        var t = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if t.hasPrefix(".") || t.hasPrefix("'") { t = "\\&" + t }
        return t
    }

    /// The whole man page, in troff's man macros.
    public static var manPage: String {
        var m = """
        .\\" Made by `reel _docs man` from Reel's option tables (scripts/make-docs); do not edit.
        .TH REEL 1 "" "Reel" "User Commands"
        .SH NAME
        reel \\- record camera streams to files, split exactly at aspect\\-ratio changes
        .SH SYNOPSIS
        .B reel
        .I COMMAND
        .RI [ OPTIONS ]
        .br
        .B reel help
        .RI [ COMMAND ]
        .br
        .B reel
        .I COMMAND
        .B \\-\\-help
        .SH DESCRIPTION
        Reel records synthetic or V4L2 camera streams to files (ProRes, H.264, HEVC, FFV1 in MOV,
        MP4 or Matroska), cuts a new clip exactly at the frame where the aspect ratio changes,
        writes through a preallocated storage pool, shows a live preview page, takes photos and
        measures its own write jitter.
        .B reel help
        .I COMMAND
        prints one command's options; the README and docs/ in the source tree explain each.
        .SH COMMANDS

        """
        for c in all where !c.hidden {
            m += ".SS \"reel \(c.name)\"\n"
            m += troff(c.synopsis) + "\n"
            for o in c.options where !o.hidden {
                m += ".TP\n" + (o.value.map { ".BI \"\(troff(o.name)) \" \"\(troff($0))\"" } ?? ".B \(troff(o.name))") + "\n"
                m += troff(o.help) + "\n"
            }
        }
        m += ".SH \"EXIT STATUS\"\n"
        for (code, meaning) in exitStatuses {
            m += ".TP\n.B \(code)\n\(troff(meaning))\n"
        }
        m += """
        .SH ENVIRONMENT
        .TP
        .B XDG_DATA_HOME
        holds the default storage pool (reel/pool), made on first use
        .TP
        .B XDG_CACHE_HOME
        holds the calibration and write\\-mode measurements
        .TP
        .B XDG_RUNTIME_DIR
        holds the session registry (else /tmp/reel\\-UID, made 0700)
        .SH "SEE ALSO"
        .BR ffmpeg (1),
        .BR ffprobe (1),
        .BR v4l2\\-ctl (1)

        """
        return m
    }
}
