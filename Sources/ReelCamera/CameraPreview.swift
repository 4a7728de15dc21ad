import Foundation
import Synchronization
import ReelCapacity
import ReelCapture
import ReelCore
import ReelPreview
import ReelWriter

/// The camera's live preview: the page's server, bound before capture starts, and its output
/// on the session (behind the pressure handler's gate).
public enum CameraPreview {
    /// Binds the preview's server and adds `gate` (around its output) to the session. With
    /// `photos`, the page's shutter takes a photo through it; without, it answers 501.
    /// `pressure` gives the level for the page's status; `controls` the picture controls it shows.
    /// The gallery learns of clips from a `ClipWatcher` on the output directory (returned: stop
    /// it when the recording ended; nil, with a notice, when inotify refuses the directory)
    /// and of photos from the photo output's list.
    /// - Throws: `CameraError` (75: port in use; 77: no permission; 64: bad address; else 69),
    ///   or the session's refusal of the output (the server is stopped first).
    static func start(_ request: PreviewRequest, recording: Recording, photos: CameraPhotos?, gate: PressurePreviewGate,
                      pressure: @escaping @Sendable () -> PressureLevel, secondary: @escaping @Sendable () -> String,
                      controls: CameraControls,
                      notice: @escaping @Sendable (String) -> Void) throws -> (PreviewServer, ClipWatcher?) {
        let output = (gate.inner as? PreviewOutput) ?? PreviewOutput()
        let session = recording.session
        let started = DispatchTime.now().uptimeNanoseconds
        let server: PreviewServer
        var shutter: (@Sendable () throws -> Data)? = nil
        if let photos { shutter = { try photos.pageShutter() } }
        let toggle = RecordingToggles.page(recording)
        let pushed = PushedStatus()
        let page = PreviewControls(setRatio: PreviewControls.ratio(of: session), shutter: shutter,
                                   record: { action in
                                       defer { pushed.changed() }
                                       return try toggle(action)
                                   },
                                   setControl: { try controls.pageSet($0, $1) },
                                   press: { controls.pageButton($0, action: $1) })
        do {
            server = try PreviewServer(address: request.address, token: request.token, output: output, controls: page) {
                let stats = session.stats
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                let media: Double
                if let first = stats.startPTS, let last = stats.lastPTS { media = last.seconds - first.seconds } else { media = 0 }
                var status = PreviewStatus(recording: recording.writer.isRecording, elapsed: media, frames: stats.framesCaptured,
                                           fps: elapsed > 0 ? Double(stats.framesCaptured) / elapsed : 0,
                                           drops: stats.drops.total, ratio: session.ratio.description,
                                           // Read each time: under Deferred Start the pool opens after the first frame.
                                           poolRemainingCapacity: recording.pool?.remainingCapacity)
                status.poolRemainingSeconds = recording.remainingTime.remainingSeconds
                status.pressure = pressure().rawValue   // [issue 13]
                status.dropReasons = stats.drops.table
                status.seams = stats.seams.count
                controls.fillPicture(&status)   // zoom, exposure, effect as last applied
                status.secondary = secondary()
                status.audioLevelDb = recording.audioLevelDecibels
                if status.recording != pushed.recording(status.recording) { pushed.changed() }
                if let photo = photos?.output.photos.last { pushed.photo(photo.path) }
                pushed.photosToGallery(photos)
                return status
            }
        } catch let error as PreviewError {
            throw CameraError(status: exitStatus(error), error.description)
        }
        pushed.attach(server)
        controls.observeChanges { pushed.changed() }
        // The gallery: each clip as the writer finishes it, each photo once saved.
        server.gallery.setRefresher { pushed.photosToGallery(photos) }
        let settings = recording.writer.settings
        var watcher: ClipWatcher? = nil
        do {
            watcher = try ClipWatcher(directory: settings.storage.destination, prefix: settings.namePrefix,
                                      fileExtension: settings.container.fileExtension) { path in
                do { try server.clipFinished(at: path) } catch let refusal as GalleryRefusal where refusal.isGone {
                    // A clip opened ahead and discarded (the recording stopped): not one to list.
                } catch {
                    notice("preview: gallery: \(error)")
                }
            } gone: { path in
                server.clipGone(at: path)
            }
        } catch {
            // Recording goes on: the gallery lists the photos, not the clips.
            notice("preview: gallery: the clips cannot be listed (\(error))")
        }
        do {
            try session.addOutput(gate)
        } catch {
            watcher?.stop()
            server.stop()   // refused (the configuration check): nothing is left listening
            throw error
        }
        return (server, watcher)
    }

    /// Port in use: 75 (try another port, or later); no permission: 77; bad address: 64; else 69.
    public static func exitStatus(_ error: PreviewError) -> Int32 {
        switch error {
        case .listen(_, let e) where e == EADDRINUSE: return ExitStatus.busy
        case .listen(_, let e) where e == EACCES: return ExitStatus.permission
        case .badAddress: return ExitStatus.usage
        default: return ExitStatus.unavailable
        }
    }
}

/// What the page's `/events` stream is told about: control changes, the recording starting
/// or stopping, a new photo (its thumbnail). Holds the server once it exists.
private final class PushedStatus: Sendable {
    private struct State { var server: PreviewServer?; var recording: Bool?; var photo: String? }
    private let state = Mutex(State())

    func attach(_ server: PreviewServer) { state.withLock { $0.server = server } }

    /// The status changed: the streams send it now.
    func changed() { state.withLock { $0.server }?.statusChanged() }

    /// Records `now`; returns the value seen before (nil the first time: `now`).
    func recording(_ now: Bool) -> Bool {
        state.withLock { s in
            let before = s.recording ?? now
            s.recording = now
            return before
        }
    }

    /// Every photo `photos` saved joins the gallery (the ones added before are skipped).
    func photosToGallery(_ photos: CameraPhotos?) {
        guard let photos, let server = state.withLock({ $0.server }) else { return }
        for photo in photos.output.photos {
            do {
                try server.photoFinished(at: photo.path, width: photo.width, height: photo.height, format: photo.format.rawValue)
            } catch {
                // Not served (moved, replaced): the gallery lists what it can check.
            }
        }
    }

    /// A photo saved at `path`: the first time it is seen, it becomes the page's thumbnail.
    func photo(_ path: String) {
        let server = state.withLock { s -> PreviewServer? in
            guard s.photo != path, s.server != nil else { return nil }
            s.photo = path
            return s.server
        }
        server?.photoSaved((path as NSString).lastPathComponent)
    }
}

