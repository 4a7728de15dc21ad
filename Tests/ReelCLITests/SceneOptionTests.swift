import Foundation
import Testing
import ReelCLI
import ReelCamera
import ReelCore
import ReelWriter

/// `reel record --scene`: the realistic scene as the sensor's picture (the default, issue 24), or the flat pattern.
@Suite struct SceneOptionTests {
    /// The same 30 ProRes HQ frames of the 1920 sensor, pattern and realistic: both verify
    /// frame for frame (the barcode reads on the realistic scene too), and the realistic clip
    /// is at least three times the pattern's bytes (the scene's tests pin its bitrate).
    @Test func theRealisticSceneRecordsVerifiesAndCostsMoreBytes() throws {
        let dir = temporaryDirectory("reel-scene")
        defer { removeTree(dir) }
        var bytes: [String: Int64] = [:]
        for scene in ["pattern", "realistic", "default"] {
            // `default`: no --scene at all (the tests' pin left off).
            let chosen = scene == "default" ? [] : ["--scene", scene]
            let run = try reel(["record"] + chosen + ["--source", "synthetic:1920", "--ratio", "16x9", "--frames", "30",
                                "--no-realtime", "--plain", "--out", dir + "/" + scene, "--name", scene, "--json"], pinScene: false)
            #expect(run.status == 0, "\(run.stderr)")
            let verify = try reel(["verify", dir + "/" + scene, "--json"])
            #expect(verify.status == 0 && verify.stdout.contains("\"framesChecked\" : 30"), "\(verify.stdout) \(verify.stderr)")
            let clip = dir + "/\(scene)/\(scene)-0001-16x9.mov"
            bytes[scene] = (try FileManager.default.attributesOfItem(atPath: clip)[.size] as? NSNumber)?.int64Value ?? 0
        }
        let pattern = bytes["pattern"] ?? 0, realistic = bytes["realistic"] ?? 0, byDefault = bytes["default"] ?? 0
        #expect(pattern > 0 && realistic >= 3 * pattern, "pattern \(pattern) B, realistic \(realistic) B")
        // The default is the realistic scene: the same frames, the same bytes (within the header's own).
        #expect(abs(byDefault - realistic) < 4096, "default \(byDefault) B, realistic \(realistic) B")
    }

    /// The realistic scene is the default; an unknown scene, and a scene for a V4L2 camera, are usage
    /// errors (in-process: parsing has no side effects).
    @Test func theSceneIsParsedAndChecked() throws {
        guard case .record(let c, _, _) = try ReelCLI.parse(["record"]) else { Issue.record("not record"); return }
        #expect(c.recording.scene == .realistic)
        guard case .record(let r, _, _) = try ReelCLI.parse(["record", "--scene", "Pattern"]) else { Issue.record("not record"); return }
        #expect(r.recording.scene == .pattern)
        // A V4L2 source without --scene is fine: the default is the synthetic sensor's.
        guard case .record(let v, _, _) = try ReelCLI.parse(["record", "--source", "v4l2:/dev/video0"]) else { Issue.record("not record"); return }
        #expect(v.recording.source == .v4l2(path: "/dev/video0", size: nil, fps: nil, fourcc: nil))
        #expect(throws: UsageError.self) { try ReelCLI.parse(["record", "--scene", "forest"]) }
        do {
            _ = try ReelCLI.parse(["record", "--scene", "realistic", "--source", "v4l2:/dev/video0"])
            Issue.record("a scene for a V4L2 camera was accepted")
        } catch let e as UsageError {
            #expect(e.description.hasPrefix("--scene: only the synthetic sensor draws a scene"))
        }
        let bad = try reel(["record", "--scene", "forest"])
        #expect(bad.status == 64 && bad.stderr == "reel: --scene: unknown scene 'forest' (use pattern, realistic or people)\n")
    }

    /// `reel preview` and `reel photo` take `--scene` too (a V4L2 source refuses it).
    @Test func previewAndPhotoTakeTheScene() throws {
        guard case .preview(let p) = try ReelCLI.parse(["preview", "--scene", "pattern"]) else { Issue.record("not preview"); return }
        #expect(p.scene == .pattern)
        guard case .photo(let ph) = try ReelCLI.parse(["photo", "--scene", "pattern"]) else { Issue.record("not photo"); return }
        #expect(ph.scene == .pattern)
        // Both default to the realistic scene.
        guard case .preview(let dp) = try ReelCLI.parse(["preview"]), case .photo(let dph) = try ReelCLI.parse(["photo"]) else { Issue.record("not parsed"); return }
        #expect(dp.scene == .realistic && dph.scene == .realistic)
        _ = try ReelCLI.parse(["preview", "--source", "v4l2:/dev/video0"])
        #expect(throws: UsageError.self) { try ReelCLI.parse(["preview", "--scene", "realistic", "--source", "v4l2:/dev/video0"]) }
        #expect(throws: UsageError.self) { try ReelCLI.parse(["photo", "--scene", "forest"]) }
    }

    /// A photo of the realistic scene at the 4032 photo format: taken, and several times the
    /// bytes of the pattern's at the same settings (the texture reaches the photo).
    @Test func aPhotoOfTheRealisticSceneCarriesItsTexture() throws {
        let dir = temporaryDirectory("reel-scene-photo")
        defer { removeTree(dir) }
        var bytes: [String: Int64] = [:]
        for scene in ["pattern", "realistic"] {
            let run = try reel(["photo", "--scene", scene, "--format", "jpeg", "--out", dir + "/" + scene, "--name", scene, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/" + scene).filter { $0.hasSuffix(".jpg") }) ?? []
            #expect(files.count == 1, "\(files)")
            if let f = files.first {
                bytes[scene] = (try FileManager.default.attributesOfItem(atPath: dir + "/\(scene)/" + f)[.size] as? NSNumber)?.int64Value
            }
        }
        let pattern = bytes["pattern"] ?? 0, realistic = bytes["realistic"] ?? 0
        #expect(pattern > 0 && realistic >= 3 * pattern, "pattern \(pattern) B, realistic \(realistic) B")
    }
}
