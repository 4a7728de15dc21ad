import Foundation
import Testing
import ReelCLI
import ReelCore

/// `reel help COMMAND`, `reel COMMAND --help`, the man page and the bash completion: all made
/// from the option tables, so what they list is what the parser takes.
@Suite struct HelpPagesTests {
    /// Runs `tool args…` in `directory` to completion: status, stdout, stderr.
    func command(_ tool: String, _ args: [String], in directory: String = repositoryRoot) throws -> Run {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Run(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    /// The option names in a help text's lines that start with two spaces and `--`.
    func listedOptions(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  --") else { return nil }
            return String(line.dropFirst(2).split(separator: " ")[0])
        }
    }

    @Test(arguments: ["record", "preview", "photo", "verify", "jitter"])
    func aCommandsHelpListsItsOptionsAlone(command: String) throws {
        let spec = try #require(CommandTable.spec(command))
        let visible = spec.options.filter { !$0.hidden }.map(\.name)
        for argv in [[command, "--help"], ["help", command], [command, "-h"], [command, "--json", "--help"]] {
            let run = try reel(argv)
            #expect(run.status == 0 && run.stderr.isEmpty, "reel \(argv.joined(separator: " ")): \(run.stderr)")
            #expect(run.stdout.hasPrefix("usage: reel \(command)"), "\(run.stdout.prefix(80))")
            #expect(listedOptions(run.stdout) == visible, "reel \(argv.joined(separator: " "))")
            #expect(!run.stdout.contains("reel pool create"))
        }
    }

    @Test func poolHelpListsEachPoolCommandAndOneSubcommandItsOwn() throws {
        let all = try reel(["help", "pool"])
        #expect(all.status == 0)
        for spec in CommandTable.all where spec.name.hasPrefix("pool ") && !spec.hidden {
            #expect(all.stdout.contains("usage: reel \(spec.name)"), "\(spec.name)")
        }
        let create = try reel(["pool", "create", "--help"])
        #expect(create.status == 0 && create.stdout.hasPrefix("usage: reel pool create"))
        #expect(listedOptions(create.stdout) == CommandTable.spec("pool create")!.options.filter { !$0.hidden }.map(\.name))
        #expect(!create.stdout.contains("pool status"))
    }

    @Test func helpForAnUnknownCommandIsAUsageError() throws {
        let run = try reel(["help", "recrod"])
        #expect(run.status == 64 && run.stderr == "reel: help: unknown command 'recrod' (use record, preview, photo, cost, calibrate, probe, verify, pool, jitter, devices or control)\n")
        let parsed = try ReelCLI.parse(["verify", "x.mov", "-h"])
        guard case .help(let name) = parsed, name == "verify" else { Issue.record("\(parsed)"); return }
        // An option's value is a value, whatever it reads: clips named `-h`, a token `--help`.
        for argv in [["record", "--name", "-h"], ["record", "--preview", "0", "--preview-token", "--help"], ["pool", "create", "p", "--capacity", "1G", "--json"]] {
            if case .help? = try? ReelCLI.parse(argv) { Issue.record("\(argv) was taken as a request for help") }
        }
        for status in CommandTable.exitStatuses.map(\.0) { #expect(status == 0 || ExitStatus.all.values.contains(status), "\(status)") }
        #expect(Set(CommandTable.exitStatuses.map(\.0)) == Set(ExitStatus.all.values).union([0]))
    }

    /// `docs/reel.1` and `docs/reel.bash-completion` are what the tables make now
    /// (`scripts/make-docs` writes them).
    @Test func theCommittedManPageAndCompletionAreCurrent() throws {
        for (which, file) in [("man", "docs/reel.1"), ("bash-completion", "docs/reel.bash-completion")] {
            let made = try reel(["_docs", which])
            #expect(made.status == 0)
            let committed = try String(contentsOfFile: repositoryRoot + "/" + file, encoding: .utf8)
            #expect(made.stdout == committed, "\(file) is stale: run scripts/make-docs")
        }
    }

    /// `man ./docs/reel.1` renders: every visible command and option, and the exit statuses.
    @Test func theManPageRenders() throws {
        let run = try command("/usr/bin/env", ["LC_ALL=C", "MANWIDTH=120", "man", "-P", "cat", "-l", repositoryRoot + "/docs/reel.1"])
        #expect(run.status == 0, "\(run.stderr)")
        let text = run.stdout
        #expect(text.contains("REEL(1)") && text.contains("NAME") && text.contains("EXIT STATUS"))
        for spec in CommandTable.all where !spec.hidden {
            #expect(text.contains("reel \(spec.name)"), "\(spec.name)")
            for o in spec.options where !o.hidden { #expect(text.contains(o.name), "\(spec.name) \(o.name)") }
        }
        for status in ["64", "65", "66", "69", "70", "73", "74", "75", "77", "130"] { #expect(text.contains("\n       \(status)     ") || text.contains("\n       \(status)    "), "\(status)") }
    }

    /// In bash, the completion offers `record`'s options after `reel record --`, the commands
    /// after `reel `, pool's subcommands after `reel pool `, and files after `--out`.
    @Test func bashCompletesCommandsAndOptions() throws {
        func complete(_ words: [String]) throws -> [String] {
            let quoted = words.map { "'\($0)'" }.joined(separator: " ")
            let script = "source '\(repositoryRoot)/docs/reel.bash-completion'; COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _reel; printf '%s\\n' \"${COMPREPLY[@]}\""
            let run = try command("/bin/bash", ["--norc", "--noprofile", "-c", script])
            #expect(run.status == 0, "\(run.stderr)")
            return run.stdout.split(separator: "\n").map(String.init)
        }
        let record = CommandTable.record.options.filter { !$0.hidden }.map(\.name)
        #expect(Set(try complete(["reel", "record", "--"])) == Set(record + ["--help"]))
        #expect(Set(try complete(["reel", "record", "--du"])) == ["--duration"])
        #expect(try complete(["reel", "ver"]) == ["verify"])
        #expect(Set(try complete(["reel", "pool", ""])) == Set(CommandTable.all.filter { $0.name.hasPrefix("pool ") && !$0.hidden }.map { String($0.name.dropFirst(5)) }))
        // An option's value and an operand are left to bash's file-name completion.
        #expect(try complete(["reel", "record", "--out", "Packa"]).isEmpty)
        #expect(try complete(["reel", "record", "--codec", ""]).isEmpty)
        #expect(try complete(["reel", "verify", "Packa"]).isEmpty)
        let registered = try command("/bin/bash", ["--norc", "--noprofile", "-c", "source '\(repositoryRoot)/docs/reel.bash-completion'; complete -p reel"])
        #expect(registered.stdout == "complete -o bashdefault -o default -F _reel reel\n", "\(registered.stdout)")
    }
}
