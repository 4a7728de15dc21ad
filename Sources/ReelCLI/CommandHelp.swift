import Foundation

/// One command's help (`reel help record`, `reel record --help`), from the option tables.
extension CommandTable {
    /// The visible commands called `name` or under it (`pool`: every `pool …` command).
    static func visibleSpecs(named name: String) -> [CommandSpec] {
        all.filter { !$0.hidden && ($0.name == name || $0.name.hasPrefix(name + " ")) }
    }

    /// `reel help NAME`: the synopsis and options of the command `NAME` (`record`,
    /// `pool create`; `pool` gives every pool command), or nil when there is no such command.
    public static func help(for name: String) -> String? {
        let specs = visibleSpecs(named: name)
        guard !specs.isEmpty else { return nil }
        var text = ""
        for c in specs {
            if !text.isEmpty { text += "\n" }
            text += "usage: \(c.synopsis)\n"
            let visible = c.options.filter { !$0.hidden }
            if !visible.isEmpty { text += "\n" }
            for o in visible {
                let head = o.value.map { "\(o.name) \($0)" } ?? o.name
                text += "  " + head.padding(toLength: max(head.count, 30), withPad: " ", startingAt: 0) + "  " + o.help + "\n"
            }
        }
        return text
    }

    /// The command a `--help` among `rest` (the words after `reel COMMAND`) asks about:
    /// `command`, or `pool SUBCOMMAND` when `rest` starts with one; nil when `rest` holds no
    /// `--help` or `-h`.
    static func helpAsked(command: String, rest: [String]) -> String? {
        guard rest.contains("--help") || rest.contains("-h") else { return nil }
        if let sub = rest.first, !sub.hasPrefix("-"), spec("\(command) \(sub)") != nil { return "\(command) \(sub)" }
        return visibleSpecs(named: command).isEmpty ? nil : command
    }
}
