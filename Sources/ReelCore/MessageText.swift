/// Text from the command line as it goes into a one-line message: control characters
/// (newlines above all) escaped, and long values cut.
public func printable(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        if scalar.value < 0x20 || scalar.value == 0x7f || (0x80..<0xa0).contains(scalar.value)
            || scalar == "\u{2028}" || scalar == "\u{2029}" || scalar == "\u{85}" {
            out += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out.count > 80 ? String(out.prefix(77)) + "..." : out
}
