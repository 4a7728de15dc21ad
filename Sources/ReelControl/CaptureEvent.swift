import CEvdev
import Foundation
import ReelCore

/// One press of a capture button, as AVCaptureEventInteraction delivers it: a press `began`,
/// and then either `ended` (the capture fires) or `cancelled` (it never captures: the device
/// went away, events were dropped mid-press, the pointer left the page's button).
public struct CaptureEvent: Sendable, Hashable, Codable {
    /// Where a press is in its life.
    public enum Phase: String, Sendable, Hashable, Codable, CaseIterable {
        /// `began` (pressed), `cancelled` (it never captures: the device went away, events were
        /// dropped), `ended` (released: the capture fires).
        case began, cancelled, ended
    }
    /// What the press asks for: `primary` (shutter, record) or `secondary` (marker, lock).
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// `primary` (shutter, record) or `secondary` (marker, lock).
        case primary, secondary
    }

    /// began, cancelled or ended.
    public var phase: Phase
    /// primary or secondary.
    public var action: Action
    /// Who sent it: `evdev:/dev/input/event3 (KEY_VOLUMEDOWN)`, `terminal`, `socket`, `page`.
    public var source: String
    /// When it happened, in seconds on CLOCK_MONOTONIC (the session's clock); for evdev the
    /// kernel's own timestamp of the key event.
    public var time: Double

    /// Whether a confirmation sound should play when this press fires
    /// (`AVCaptureEventInteraction`'s `shouldPlaySound`): the user may not see the camera. True
    /// for a primary press from the control socket and from an input device key that is not the
    /// machine's own camera button — a headset's or a remote's (`KEY_VOLUMEDOWN`,
    /// `KEY_PLAYPAUSE`, …, and any key `--keys` maps); false for `KEY_CAMERA` and
    /// `KEY_CAMERA_FOCUS`, the terminal's keys and the page's button, pressed by someone at
    /// the camera or watching its picture, and for secondary presses (they capture nothing).
    public var shouldPlaySound: Bool { action == .primary && Self.isRemote(source) }

    /// Whether `source` (as `CaptureEvent.source` spells it) is a remote one (`shouldPlaySound`).
    public static func isRemote(_ source: String) -> Bool {
        if source == "socket" { return true }
        guard source.hasPrefix("evdev:") else { return false }
        return !(source.hasSuffix("(KEY_CAMERA)") || source.hasSuffix("(KEY_CAMERA_FOCUS)"))
    }

    /// An event stamped now on CLOCK_MONOTONIC unless `time` is given.
    public init(phase: Phase, action: Action, source: String, time: Double = Double(MonotonicClock.now()) / 1e9) {
        self.phase = phase
        self.action = action
        self.source = source
        self.time = time
    }
}

/// Which evdev key means which action. The default follows iOS: camera, camera focus and
/// volume down are primary, volume up secondary, and the headset keys (play/pause, play CD,
/// pause CD, media: what an "(AVRCP)" Bluetooth device sends) primary. Other keys are ignored.
public struct KeyMap: Sendable, Hashable {
    /// Key code (linux/input-event-codes.h) → action.
    public var actions: [UInt16: CaptureEvent.Action]

    /// A map from key codes to actions.
    public init(_ actions: [UInt16: CaptureEvent.Action]) { self.actions = actions }

    /// The default map (README, Capture events).
    public static let standard = KeyMap([
        UInt16(KEY_CAMERA): .primary, UInt16(KEY_CAMERA_FOCUS): .primary, UInt16(KEY_VOLUMEDOWN): .primary,
        UInt16(KEY_VOLUMEUP): .secondary,
        UInt16(KEY_PLAYPAUSE): .primary, UInt16(KEY_PLAYCD): .primary, UInt16(KEY_PAUSECD): .primary, UInt16(KEY_MEDIA): .primary,
    ])

    /// `KEY_NAME=primary|secondary|none,…` applied over `base` (libevdev's
    /// `libevdev_event_code_from_name` reads the names; a number is taken as the code).
    /// Throws a `UsageError` naming what does not parse.
    public init(parsing text: String, over base: KeyMap = .standard) throws {
        var actions = base.actions
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let code = Self.code(named: parts[0]) else {
                throw UsageError("--keys: '\(item)' is not KEY_NAME=primary|secondary|none (KEY_NAME from linux/input-event-codes.h)")
            }
            switch parts[1] {
            case "primary": actions[code] = .primary
            case "secondary": actions[code] = .secondary
            case "none": actions[code] = nil
            default: throw UsageError("--keys: '\(parts[1])' is not primary, secondary or none")
            }
        }
        self.actions = actions
    }

    /// The code of `KEY_…` or `BTN_…` (or a decimal number below KEY_CNT).
    public static func code(named name: String) -> UInt16? {
        if let n = UInt16(name), Int32(n) < KEY_CNT { return n }
        let c = keyCode(named: name)
        return c >= 0 ? UInt16(c) : nil
    }

    /// `KEY_VOLUMEDOWN` for 114 (libevdev's name table), or the number.
    public static func name(of code: UInt16) -> String { keyName(code) ?? String(code) }
}
