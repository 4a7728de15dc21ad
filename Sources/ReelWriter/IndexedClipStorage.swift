import ReelStorage

/// The recording's storage, listing each clip in the index as it is created (before a byte
/// of it is written): a run killed while writing a clip leaves it listed as `open`, so the
/// next run owns it (`SegmentIndexAdoption`).
struct IndexedClipStorage: ClipStorage {
    let inner: any ClipStorage
    let log: SegmentIndexLog

    func createClip(named name: String) throws -> any ClipFile {
        let file = try inner.createClip(named: name)
        log.created(name)
        return file
    }

    var destination: String { inner.destination }
    func deleteFinishedClip(_ path: String) -> ClipDeletion { inner.deleteFinishedClip(path) }
    func finishedClipSettled() { inner.finishedClipSettled() }
}
