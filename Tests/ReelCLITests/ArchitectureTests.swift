import Foundation
import Testing

/// The package graph as `swift package describe --type json` gives it: what each target
/// depends on directly.
struct PackageGraph {
    struct Target { let name: String; let type: String; let dependencies: [String] }
    let targets: [Target]
    /// Each product's name and its targets.
    var products: [(name: String, targets: [String])] = []

    static let root = repositoryRoot

    /// Runs `swift package describe` on the package (with its own scratch directory, so it
    /// never waits for the build lock of the `swift test` running it).
    static func describe() throws -> PackageGraph {
        let scratch = temporaryDirectory("reel-describe")
        defer { removeTree(scratch) }
        let path = (ProcessInfo.processInfo.environment["PATH"].map { $0 + ":" } ?? "") + "/opt/swift/usr/bin"
        let (status, data) = try runTool("/usr/bin/env", ["swift", "package", "--package-path", root, "--scratch-path", scratch,
                                                          "describe", "--type", "json"], environment: ["PATH": path])
        guard status == 0 else { throw ProbeFailed(message: "swift package describe exited \(status)") }
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let targets = try #require(json["targets"] as? [[String: Any]])
        let products = (json["products"] as? [[String: Any]] ?? []).map {
            (name: $0["name"] as? String ?? "", targets: $0["targets"] as? [String] ?? [])
        }
        return PackageGraph(targets: targets.map {
            Target(name: $0["name"] as? String ?? "", type: $0["type"] as? String ?? "",
                   dependencies: $0["target_dependencies"] as? [String] ?? [])
        }, products: products)
    }

    /// Every target `name` depends on, directly or through others.
    func closure(of name: String) -> Set<String> {
        let direct = Dictionary(targets.map { ($0.name, $0.dependencies) }, uniquingKeysWith: { a, _ in a })
        var seen = Set<String>(), todo = direct[name] ?? []
        while let t = todo.popLast() {
            if seen.insert(t).inserted { todo += direct[t] ?? [] }
        }
        return seen
    }
}

/// The structure issue 10 asks for, checked against Package.swift itself.
@Suite struct ArchitectureTests {
    /// docs/architecture.md: "plus one library per target" — every Swift library target of the product
    /// (all but the benchmarks and the command line) is a library product of its own name,
    /// so another package can depend on just the preview, the photo output, the controls….
    @Test func everyLibraryTargetIsAProduct() throws {
        let graph = try PackageGraph.describe()
        let libraries = graph.targets.filter { $0.type == "library" && $0.name.hasPrefix("Reel") }.map(\.name)
        #expect(libraries.count >= 12, "\(libraries)")
        let products = Dictionary(graph.products.map { ($0.name, $0.targets) }, uniquingKeysWith: { a, _ in a })
        for name in libraries where !["ReelBench", "ReelCLI"].contains(name) {
            #expect(products[name] == [name], "\(name) has no library product of its own")
        }
    }

    /// Benchmarks and reports sit above the product: only the command line (and tests) may
    /// depend on ReelBench, directly or transitively.
    @Test func onlyTheCommandLineDependsOnTheBenchmarks() throws {
        let graph = try PackageGraph.describe()
        let allowed: Set<String> = ["ReelCLI", "reel", "ReelBench"]
        let offenders = graph.targets
            .filter { $0.type != "test" && !allowed.contains($0.name) && graph.closure(of: $0.name).contains("ReelBench") }
            .map(\.name)
        #expect(offenders.isEmpty, "\(offenders.sorted()) depend on ReelBench: the product must not depend on benchmark code")
        // The graph really was read (a describe that lists nothing would pass the check above).
        #expect(graph.closure(of: "ReelCLI").contains("ReelBench") && graph.closure(of: "reel").contains("ReelWriter"))
    }

    /// The Architecture section (docs/architecture.md) names every target in Package.swift.
    @Test func theReadmeArchitectureNamesEveryTarget() throws {
        let graph = try PackageGraph.describe()
        let section = readmeSection("## Architecture", in: try readme()).joined(separator: "\n")
        let missing = graph.targets.filter { $0.type != "test" && !section.contains("`\($0.name)`") }.map(\.name)
        #expect(graph.targets.count > 5 && !section.isEmpty)
        #expect(missing.isEmpty, "docs/architecture.md's Architecture section does not name \(missing.sorted())")
    }
}

extension ArchitectureTests {
    /// The Architecture section (docs/architecture.md) lists the targets bottom up: each depends only on targets listed before it.
    @Test func theReadmeListsTheTargetsBottomUp() throws {
        let graph = try PackageGraph.describe()
        let section = readmeSection("## Architecture", in: try readme()).joined(separator: "\n")
        // "- `Name` — …" lines, in order.
        let listed = section.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("- `"), let end = line.dropFirst(3).firstIndex(of: "`") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 3)..<end])
        }
        let nonTest = graph.targets.filter { $0.type != "test" }
        #expect(Set(listed) == Set(nonTest.map(\.name)), "the list names \(listed), Package.swift has \(nonTest.map(\.name).sorted())")
        for t in nonTest {
            guard let at = listed.firstIndex(of: t.name) else { continue }
            for d in t.dependencies {
                #expect((listed.firstIndex(of: d) ?? .max) < at, "\(t.name) depends on \(d), listed after it")
            }
        }
    }
}

/// `scripts/check-docs DIR…` run to completion: its exit status, the `file:line: …` lines it
/// printed, and its count (stderr).
private func checkDocs(_ arguments: [String] = [], in directory: String = PackageGraph.root) throws -> (status: Int32, lines: [String], count: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", PackageGraph.root + "/scripts/check-docs"] + arguments
    p.currentDirectoryURL = URL(fileURLWithPath: directory)
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    return (p.terminationStatus, lines, String(decoding: errData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

extension ArchitectureTests {
    /// Every public declaration in Sources/ has a `///` (or `/** */`) doc comment directly
    /// above it: what it does, the C call it wraps, what it throws (issue 10).
    @Test
    func everyPublicSymbolHasADocComment() throws {
        let result = try checkDocs()
        #expect(result.status == 0 && result.lines.isEmpty,
                "\(result.count):\n\(result.lines.joined(separator: "\n"))")
    }

    /// The checker itself: it sees through multi-line attributes, `public extension` members,
    /// `open`, failable inits, static members, subscripts, protocol requirements, enum cases,
    /// several declarations on one line, strings that look like declarations, and it accepts
    /// `/** */` docs but not a plain comment or a doc separated by a blank line; a throwing
    /// function's doc must say what it throws.
    @Test func theDocCheckerFindsUndocumentedPublicDeclarations() throws {
        let dir = temporaryDirectory("reel-check-docs")
        defer { removeTree(dir) }
        let source = #"""
        /// ok
        @available(*, deprecated,
                   message: "a multi-line attribute")
        public func documentedBehindAnAttribute() {}
        @available(*, deprecated,
                   message: "a multi-line attribute")
        public func undocumentedBehindAnAttribute() {}
        public extension Int {
            func extensionMember() {}
            /// ok
            func documentedExtensionMember() {}
            private func hidden() {}
        }
        /// ok
        open class Base {
            open func overridable() {}
            public init?(x: Int) { nil }
            public static func make() {}
            public subscript(i: Int) -> Int { 0 }
            func internalMember() {}
            let text = "public func notADeclaration() { \(1 + (2)) }"
            let lines = """
            public func alsoNotADeclaration()
            """
        }
        /** ok */
        public func blockDocumented() {}
        /* not a doc */
        public func plainBlockComment() {}
        /// ok
        public protocol Requirements {
            func requirement()
            /// ok
            var documented: Int { get }
        }
        /// ok
        public enum Cases { case a, b
            /// ok
            case c(Int)
        }
        enum Internal { public func notVisible() {} }
        struct InternalType {}
        extension InternalType { public func notVisibleEither() {} }
        /// ok
        public struct Visible {}
        extension Visible { public func visible() {} }
        /// separated by a blank line

        public func blankLineBetween() {}
        /// ok
        public final class Flags { public nonisolated(unsafe) static var x = 0; public private(set) var y = 0 }
        @_spi(Testing) public func spi() {}
        package func packageOnly() {}
        func body() { let publicValue = 1; _ = publicValue }
        /// Says nothing of what it throws.
        public func throwsWithoutSaying() throws {}
        /// Says it.
        /// - Throws: `CancellationError`.
        public func throwsAndSaysSo() throws {}
        /// Returns a throwing closure; it does not throw itself.
        public func returnsAThrowingClosure() -> () throws -> Void { {} }
        """#
        try FileManager.default.createDirectory(atPath: dir + "/T", withIntermediateDirectories: true)
        try source.write(toFile: dir + "/T/a.swift", atomically: true, encoding: .utf8)
        let result = try checkDocs(["T"], in: dir)
        let flagged = result.lines.map { $0.split(separator: ":")[1] }.map(String.init)
        #expect(flagged == ["5", "9", "16", "17", "18", "19", "29", "32", "37", "46", "49", "51", "51", "56"],
                "\(result.lines.joined(separator: "\n"))")
        #expect(result.status == 1 && result.count.hasPrefix("\(flagged.count) "))

        // Fully documented: exit 0, nothing listed.
        try "/// ok\npublic func documented() {}\n".write(toFile: dir + "/T/a.swift", atomically: true, encoding: .utf8)
        let clean = try checkDocs(["T"], in: dir)
        #expect(clean.status == 0 && clean.lines.isEmpty && clean.count.hasPrefix("0 "))
    }
}

extension ArchitectureTests {
    /// docs/architecture.md lists every source file over 500 lines, with its line count as it
    /// is now (issue 26: none over about 500 without its reason), and no file that is not.
    @Test func everySourceFileOver500LinesIsListedWithItsReason() throws {
        let root = PackageGraph.root
        let files = try FileManager.default.subpathsOfDirectory(atPath: root + "/Sources").filter { $0.hasSuffix(".swift") }
        var long: [String: Int] = [:]
        for f in files {
            let text = try String(contentsOfFile: root + "/Sources/" + f, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
            if lines > 500 { long["Sources/" + f] = lines }
        }
        let section = readmeSection("## Source files over 500 lines", in: try readme())
        // "| `Sources/…` | 588 | why |" rows.
        var listed: [String: Int] = [:]
        for row in section where row.hasPrefix("| `Sources/") {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let n = Int(cells[1]) else { continue }
            #expect(!cells[2].isEmpty, "\(cells[0]) has no reason")
            listed[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = n
        }
        #expect(!files.isEmpty)
        #expect(listed == long, "over 500 lines now: \(long.sorted { $0.key < $1.key }); listed: \(listed.sorted { $0.key < $1.key })")
    }
}
