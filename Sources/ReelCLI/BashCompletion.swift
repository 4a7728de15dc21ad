import Foundation

/// The bash completion (`docs/reel.bash-completion`), made from the option tables by
/// `reel _docs bash-completion`. It needs nothing of the bash-completion package.
extension CommandTable {
    /// The completion script: commands after `reel`, pool's subcommands after `reel pool`,
    /// a command's options after it, file names after an option that takes a path.
    public static var bashCompletion: String {
        let visible = all.filter { !$0.hidden }
        let top = Array(Set(visible.map { String($0.name.split(separator: " ")[0]) })).sorted() + ["help"]
        let poolSubs = visible.filter { $0.name.hasPrefix("pool ") }.map { String($0.name.dropFirst(5)) }
        func options(_ c: CommandSpec) -> String { c.options.filter { !$0.hidden }.map(\.name).joined(separator: " ") }
        let valueOptions = Set(visible.flatMap { c in c.options.filter { !$0.hidden && $0.takesValue }.map(\.name) }).sorted()
        var s = """
        # bash completion for reel: made by `reel _docs bash-completion` from Reel's option tables
        # (scripts/make-docs); do not edit. Load it with `source docs/reel.bash-completion`, or copy
        # it to /usr/share/bash-completion/completions/reel. Where it offers nothing (an operand,
        # an option's value) bash completes file names (`-o default`).
        _reel() {
            local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
            local cmd=${COMP_WORDS[1]} opts=""
            COMPREPLY=()
            if [ "$COMP_CWORD" -eq 1 ]; then
                mapfile -t COMPREPLY < <(compgen -W "\(top.joined(separator: " "))" -- "$cur")
                return
            fi
            case "$cmd" in

        """
        for c in visible where !c.name.hasPrefix("pool ") {
            s += "        \(c.name)) opts=\"\(options(c))\" ;;\n"
        }
        s += """
                pool)
                    if [ "$COMP_CWORD" -eq 2 ]; then
                        mapfile -t COMPREPLY < <(compgen -W "\(poolSubs.joined(separator: " "))" -- "$cur")
                        return
                    fi
                    case "${COMP_WORDS[2]}" in

        """
        for c in visible where c.name.hasPrefix("pool ") {
            s += "                \(c.name.dropFirst(5))) opts=\"\(options(c))\" ;;\n"
        }
        s += """
                    esac ;;
                help)
                    mapfile -t COMPREPLY < <(compgen -W "\(top.filter { $0 != "help" }.joined(separator: " "))" -- "$cur")
                    return ;;
            esac
            # An option's value, or an operand: left to bash's file-name completion.
            case "$prev" in
                \(valueOptions.joined(separator: "|"))) return ;;
            esac
            if [[ "$cur" == -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "$opts --help" -- "$cur")
            fi
        }
        complete -o bashdefault -o default -F _reel reel

        """
        return s
    }
}
