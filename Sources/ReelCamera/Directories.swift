import Foundation

/// Creates `directory` (and its parents) if needed and checks that a file can be made in it,
/// by making one (root passes access(2) where a read-only mount still refuses): where a
/// report will go, checked before the run rather than after.
public func canWriteInDirectory(_ directory: String) -> Bool {
    guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil else { return false }
    let probe = directory + "/.reel-probe"
    guard FileManager.default.createFile(atPath: probe, contents: Data()) else { return false }
    // The probe is empty and ours; one left behind (a failed unlink) is harmless.
    try? FileManager.default.removeItem(atPath: probe)
    return true
}
