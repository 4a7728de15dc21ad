import Synchronization
import Testing
import ReelControl

/// The dispatcher plays a remote primary press's confirmation sound once its `ended` was
/// handled (issue 28 item 6), and logs whether each event should play one.
@Suite struct ShutterSoundDispatchTests {
    @Test func onlyARemotePrimaryPressThatFiresPlays() {
        let handled = Mutex<[String]>([]), played = Mutex<[String]>([])
        let d = CaptureEventDispatcher(handler: { event, _ in handled.withLock { $0.append(event.source + " " + event.phase.rawValue) } })
        d.setShutterSound { event in
            // After its handler: the press has fired.
            let fired = handled.withLock { $0.last } == event.source + " ended"
            played.withLock { $0.append(event.source + (fired ? "" : " (before its handler)")) }
        }
        let volume = "evdev:/dev/input/event0 (KEY_VOLUMEDOWN)", camera = "evdev:/dev/input/event0 (KEY_CAMERA)"
        for (source, phases, action) in [("socket", [CaptureEvent.Phase.began, .cancelled], CaptureEvent.Action.primary),
                                         ("socket", [.began, .ended], .primary), ("page", [.began, .ended], .primary),
                                         ("terminal", [.began, .ended], .primary), ("socket", [.began, .ended], .secondary),
                                         (camera, [.began, .ended], .primary), (volume, [.began, .ended], .primary)] {
            for p in phases { d.send(CaptureEvent(phase: p, action: action, source: source)) }
        }
        d.drain()
        #expect(played.withLock { $0 } == ["socket", volume])
        let log = d.events
        #expect(log.count == 14)
        #expect(log.filter(\.shouldPlaySound).map(\.source) == ["socket", "socket", "socket", "socket", volume, volume],
                "a remote primary press, both its phases (the cancelled one too: it would have played)")
        // Without a sound set, nothing plays and the log is the same.
        d.setShutterSound(nil)
        d.send(CaptureEvent(phase: .began, action: .primary, source: "socket"))
        d.send(CaptureEvent(phase: .ended, action: .primary, source: "socket"))
        d.drain()
        #expect(played.withLock { $0.count } == 2)
        #expect(d.events.last?.shouldPlaySound == true)
    }
}
