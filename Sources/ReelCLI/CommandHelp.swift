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

    /// The command a `--help` or `-h` among `rest` (the words after `reel COMMAND`) asks
    /// about: `command`, or `pool SUBCOMMAND` when `rest` starts with one; nil when there is
    /// none. The value of an option that takes one is a value, whatever it reads (`--name -h`
    /// names the clips `-h`).
    static func helpAsked(command: String, rest: [String]) -> String? {
        var name = command
        var words = rest[...]
        if let sub = words.first, !sub.hasPrefix("-"), spec("\(command) \(sub)") != nil {
            name = "\(command) \(sub)"
            words = words.dropFirst()
        }
        let table = spec(name)
        if table?.hidden == true { return nil }
        var i = words.startIndex
        while i < words.endIndex {
            let word = words[i]
            if word == "--help" || word == "-h" { return table != nil || !visibleSpecs(named: name).isEmpty ? name : nil }
            if !word.contains("="), table?.option(word)?.takesValue == true { i += 2 } else { i += 1 }
        }
        return nil
    }
}
