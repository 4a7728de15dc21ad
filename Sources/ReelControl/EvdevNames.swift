import CEvdev

/// `libevdev_event_code_from_name(EV_KEY, name)`: the key's code, or -1.
func keyCode(named name: String) -> Int32 {
    libevdev_event_code_from_name(UInt32(EV_KEY), name)
}

/// `libevdev_event_code_get_name(EV_KEY, code)`.
func keyName(_ code: UInt16) -> String? {
    libevdev_event_code_get_name(UInt32(EV_KEY), UInt32(code)).map { String(cString: $0) }
}
