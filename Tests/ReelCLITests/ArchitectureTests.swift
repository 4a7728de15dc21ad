import Foundation
import Testing

/// The package graph as `swift package describe --type json` gives it: what each target
/// depends on directly.
struct PackageGraph {
    struct Target { let name: String; let type: String; let dependencies: [String] }
    let targets: [Target]

    static let root = repositoryRoot

    /// Runs `swift package describe` on the package (with its own scratch directory, so it
    /// never waits for the build lock of the `swift test` running it).
    static func describe() throws -> PackageGraph {
        let scratch = temporaryDirectory("reel-describe")
        defer { removeTree(scratch) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["swift", "package", "--package-path", root, "--scratch-path", scratch, "describe", "--type", "json"]
        var env = ProcessInfo.processInfo.environment
        env["PATH"] = (env["PATH"].map { $0 + ":" } ?? "") + "/opt/swift/usr/bin"
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw ProbeFailed(message: "swift package describe exited \(p.terminationStatus)") }
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let targets = try #require(json["targets"] as? [[String: Any]])
        return PackageGraph(targets: targets.map {
            Target(name: $0["name"] as? String ?? "", type: $0["type"] as? String ?? "",
                   dependencies: $0["target_dependencies"] as? [String] ?? [])
        })
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

    /// README's Architecture section names every target in Package.swift.
    @Test func theReadmeArchitectureNamesEveryTarget() throws {
        let graph = try PackageGraph.describe()
        let section = readmeSection("## Architecture", in: try readme()).joined(separator: "\n")
        let missing = graph.targets.filter { $0.type != "test" && !section.contains("`\($0.name)`") }.map(\.name)
        #expect(graph.targets.count > 5 && !section.isEmpty)
        #expect(missing.isEmpty, "README's Architecture section does not name \(missing.sorted())")
    }
}

extension ArchitectureTests {
    /// The README lists the targets bottom up: each depends only on targets listed before it.
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
