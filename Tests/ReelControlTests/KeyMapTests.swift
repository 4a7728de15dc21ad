import Testing
import ReelControl
import ReelCore

@Suite struct KeyMapTests {
    /// The default map is the one docs/controls.md documents.
    @Test func theStandardMapFollowsIOS() {
        let names = Dictionary(uniqueKeysWithValues: KeyMap.standard.actions.map { (KeyMap.name(of: $0.key), $0.value) })
        #expect(names == ["KEY_CAMERA": .primary, "KEY_CAMERA_FOCUS": .primary, "KEY_VOLUMEDOWN": .primary,
                          "KEY_VOLUMEUP": .secondary, "KEY_PLAYPAUSE": .primary, "KEY_PLAYCD": .primary,
                          "KEY_PAUSECD": .primary, "KEY_MEDIA": .primary])
    }

    @Test func aMapIsConfiguredByName() throws {
        let m = try KeyMap(parsing: "KEY_ENTER=primary,KEY_VOLUMEUP=none,KEY_VOLUMEDOWN=secondary")
        #expect(m.actions[KeyMap.code(named: "KEY_ENTER")!] == .primary)
        #expect(m.actions[KeyMap.code(named: "KEY_VOLUMEUP")!] == nil)
        #expect(m.actions[KeyMap.code(named: "KEY_VOLUMEDOWN")!] == .secondary)
        #expect(throws: UsageError.self) { try KeyMap(parsing: "KEY_NOPE=primary") }
        #expect(throws: UsageError.self) { try KeyMap(parsing: "KEY_ENTER=tertiary") }
    }

    /// The kernel's listing: the device with camera keys is listed with what each does; a
    /// keyboard without them is not.
    @Test func devicesAreListedFromTheKernelsTable() {
        let text = """
        I: Bus=0005 Vendor=004c Product=200e Version=0100
        N: Name="AirPods Pro (AVRCP)"
        H: Handlers=kbd event7
        B: KEY=300 0 0 0

        I: Bus=0011 Vendor=0001 Product=0001 Version=ab41
        N: Name="AT Translated Set 2 keyboard"
        H: Handlers=sysrq kbd event0 leds
        B: KEY=fffe

        """
        let devices = InputDevices.list(text: text)
        #expect(devices.map(\.path) == ["/dev/input/event7"])
        #expect(devices.first?.name == "AirPods Pro (AVRCP)")
        #expect(devices.first?.keys == ["KEY_PLAYCD", "KEY_PAUSECD"])
        #expect(devices.first?.actions == ["KEY_PLAYCD": "primary", "KEY_PAUSECD": "primary"])
    }
}

@Suite struct PageButtonTests {
    /// The page's button: down began, up ended, leaving it cancelled; anything else nothing.
    @Test func thePageButtonMapsToPhases() {
        #expect(CaptureEvent.fromPage("down")?.phase == .began)
        #expect(CaptureEvent.fromPage("up")?.phase == .ended)
        #expect(CaptureEvent.fromPage("leave", action: .secondary).map { "\($0.phase) \($0.action) \($0.source)" } == "cancelled secondary page")
        #expect(CaptureEvent.fromPage("click") == nil)
    }
}
