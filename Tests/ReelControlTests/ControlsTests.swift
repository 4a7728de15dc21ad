import Foundation
import Synchronization
import Testing
import ReelControl
import Glibc

@Suite struct ControlsTests {
    /// Rapid changes: 100 zoom values set back to back; the UI's observer sees them in the
    /// order they were set, and the value it shows at the end is the last one set (the stale
    /// zoom factor is the classic bug).
    @Test func theObservedValueIsNeverStale() {
        let set = ControlSet()
        let applied = Mutex<[Double]>([])
        let zoom = SystemSlider.zoom { v in applied.withLock { $0.append(v) } }
        set.beginConfiguration()
        #expect(set.canAddControl(zoom))
        #expect(throws: Never.self) { try set.addControl(zoom) }
        set.commitConfiguration()
        let observed = Mutex<[Double]>([])
        zoom.value.observe { v in observed.withLock { $0.append(v) } }
        let values = (0..<100).map { 1 + Double(($0 * 37) % 100) * 0.03 }
        for v in values { #expect(set.set("zoom", String(v)).ok) }
        set.drain()
        #expect(observed.withLock { $0 } == values)
        #expect(applied.withLock { $0 } == values)
        #expect(zoom.value.value == values.last)
        #expect(zoom.state.value == values.last)
    }

    /// Changes from many threads at once: every action runs on the one serial queue, one at a
    /// time, and what the UI shows at the end is the value of the last action that ran.
    @Test func actionsRunOnTheSessionQueueOneAtATime() async {
        let key = DispatchSpecificKey<Int>()
        let queue = DispatchQueue(label: "test.session")
        queue.setSpecific(key: key, value: 7)
        let set = ControlSet(queue: queue)
        let running = Atomic<Int>(0)
        let overlap = Atomic<Bool>(false), offQueue = Atomic<Bool>(false)
        let last = Mutex<Double?>(nil)
        let zoom = SystemSlider.zoom { v in
            if running.add(1, ordering: .relaxed).newValue > 1 { overlap.store(true, ordering: .relaxed) }
            if DispatchQueue.getSpecific(key: key) != 7 { offQueue.store(true, ordering: .relaxed) }
            last.withLock { $0 = v }
            running.subtract(1, ordering: .relaxed)
        }
        try? set.addControl(zoom)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask { for i in 0..<100 { _ = set.set("zoom", String(1 + Double(t * 100 + i) / 1000)) } }
            }
        }
        set.drain()
        #expect(!overlap.load(ordering: .relaxed) && !offQueue.load(ordering: .relaxed))
        #expect(zoom.value.value == last.withLock { $0 })
    }

    /// Out of range: clamped, and the result says so; a disabled control refuses with its reason.
    @Test func valuesAreClampedAndDisabledControlsRefuse() {
        let set = ControlSet()
        try? set.addControl(SystemSlider.zoom())
        try? set.addControl(SystemSlider.exposureBias(disabledReason: "the camera has no exposure control"))
        let high = set.set("zoom", "8")
        #expect(high.ok && high.value == 4 && high.clamped)
        let low = set.set("zoom", "0.5")
        #expect(low.ok && low.value == 1 && low.clamped)
        let fine = set.set("zoom", "2x")
        #expect(fine.ok && fine.value == 2 && !fine.clamped)
        let off = set.set("exposure", "-1")
        #expect(!off.ok && off.error == "the camera has no exposure control")
        #expect(!set.set("zoom", "nan").ok && !set.set("zoom", "fast").ok)
        #expect(!set.set("focus", "1").ok)
        set.drain()
        #expect(set.control("zoom")?.state.value == 2)
        let e = SystemSlider.exposureBias()
        #expect(e.set(-5, on: set.queue).value == -2)
    }

    /// The ratio picker selects by title or index, clamps an index, refuses an unknown title.
    @Test func theRatioPickerSelects() {
        let set = ControlSet()
        let picked = Mutex<[Int]>([])
        let ratio = IndexPicker(identifier: "ratio", titles: ["16x9", "9x16", "1x1", "4x3", "3x4"]) { i in picked.withLock { $0.append(i) } }
        try? set.addControl(ratio)
        #expect(set.set("ratio", "9x16").title == "9x16")
        #expect(set.set("ratio", "3").title == "4x3")
        let far = set.set("ratio", "9")
        #expect(far.ok && far.clamped && far.title == "3x4")
        #expect(!set.set("ratio", "2x1").ok)
        set.drain()
        #expect(picked.withLock { $0 } == [1, 3, 4])
        #expect(ratio.state.title == "3x4" && ratio.state.titles?.count == 5)
    }

    /// canAddControl/addControl: a batch shows its controls at commit; no duplicates; at most 6.
    @Test func controlsAreAddedInABatch() {
        let set = ControlSet()
        set.beginConfiguration()
        let zoom = SystemSlider.zoom()
        try? set.addControl(zoom)
        #expect(set.controls.isEmpty)
        #expect(!set.canAddControl(zoom) && !set.canAddControl(SystemSlider.zoom()))
        #expect(throws: ControlError.self) { try set.addControl(SystemSlider.zoom()) }
        set.commitConfiguration()
        #expect(set.controls.map(\.identifier) == ["zoom"])
        for i in 0..<5 { try? set.addControl(SystemSlider(identifier: "s\(i)", range: 0...1, value: 0)) }
        #expect(set.controls.count == 6, "at most six controls, as AVCaptureSession's maxControlsCount")
        #expect(!set.canAddControl(SystemSlider(identifier: "one-more", range: 0...1, value: 0)))
    }
}

@Suite struct DispatcherTests {
    /// Every event is logged with the frame it came at; secondary `ended` lays a marker; the
    /// handler (replaceable) sees the events in order on its queue; `cancelled` is logged but
    /// never a capture.
    @Test func theDispatcherLogsMarksAndHands() {
        let frame = Atomic<Int>(10)
        let d = CaptureEventDispatcher(currentFrame: { frame.load(ordering: .relaxed) })
        let seen = Mutex<[String]>([])
        d.setHandler { e, f in seen.withLock { $0.append("\(e.action.rawValue) \(e.phase.rawValue) \(f ?? -1)") } }
        d.send(CaptureEvent(phase: .began, action: .secondary, source: "test"))
        frame.store(12, ordering: .relaxed)
        d.send(CaptureEvent(phase: .ended, action: .secondary, source: "test"))
        d.send(CaptureEvent(phase: .began, action: .primary, source: "test"))
        d.send(CaptureEvent(phase: .cancelled, action: .primary, source: "test"))
        d.drain()
        #expect(seen.withLock { $0 } == ["secondary began 10", "secondary ended 12", "primary began 12", "primary cancelled 12"])
        #expect(d.events.map(\.frameIndex) == [10, 12, 12, 12])
        #expect(d.markers.map(\.frameIndex) == [12])
    }
}

@Suite struct ControlSocketLimitTests {
    /// Eight clients at once are answered; a ninth is closed at once.
    @Test func eightClientsAtMost() throws {
        var template = Array("/tmp/reel-sock-XXXXXX".utf8CString)
        let dir = String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ControlSocket(path: dir + "/s", dispatcher: CaptureEventDispatcher(), controls: ControlSet())
        defer { server.stop() }
        func connectOne() -> Int32 {
            let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array((dir + "/s").utf8)) }
            let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            let timed = setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            return r == 0 && timed == 0 ? s : -1
        }
        func ask(_ s: Int32) -> String {
            let line = Array("{\"status\":true}\n".utf8)
            guard line.withUnsafeBytes({ send(s, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == line.count else { return "" }
            var buf = [UInt8](repeating: 0, count: 4096)
            let n = buf.withUnsafeMutableBytes { read(s, $0.baseAddress, $0.count) }
            return n > 0 ? String(decoding: buf[0..<n], as: UTF8.self) : ""
        }
        var open: [Int32] = []
        for _ in 0..<8 {
            let s = connectOne()
            #expect(s >= 0)
            #expect(ask(s).contains("\"ok\":true"))
            open.append(s)
        }
        let ninth = connectOne()
        #expect(ask(ninth) == "")
        close(ninth)
        for s in open { close(s) }
        #expect(server.path == dir + "/s")
    }
}
