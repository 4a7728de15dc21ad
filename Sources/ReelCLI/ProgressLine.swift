import ReelWriter

/// The progress line's word for what the movie output does (issue 11): `recording` while it
/// records, `standby` under `--standby` until the first start request, `stopped` after a stop.
func recordingStateWord(_ writer: AssetWriter) -> String {
    if writer.isRecording { return "recording" }
    return writer.standby && writer.recordingToggles.isEmpty ? "standby" : "stopped"
}
