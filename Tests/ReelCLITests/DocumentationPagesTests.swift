import Foundation
import Testing

/// GitHub's anchor for a heading's text: lower case; letters, digits, `-` and `_` kept; each
/// space made `-`; everything else (backticks, brackets, `/`, `*`) dropped.
func headingAnchor(_ heading: String) -> String {
    var out = ""
    for ch in heading.lowercased() {
        if ch == " " {
            out.append("-")
        } else if ch.isLetter || ch.isNumber || ch == "-" || ch == "_" {
            out.append(ch)
        }
    }
    return out
}

/// `link` (a relative path such as `docs/cli.md`, `storage.md` or `../README.md`) as seen from
/// the page `page`, as a path relative to the repository's root.
func resolveLink(_ link: String, from page: String) -> String {
    var parts = page.split(separator: "/").dropLast().map(String.init)
    for part in link.split(separator: "/").map(String.init) {
        if part == ".." {
            _ = parts.popLast()
        } else if part != "." {
            parts.append(part)
        }
    }
    return parts.joined(separator: "/")
}

/// The documentation is README.md and the topic pages in docs/ (issue 26): each page stands
/// on its own, and the links between the pages lead to a heading that exists.
@Suite struct DocumentationPagesTests {
    /// Every docs page begins with a `# Title` line (which ends any section of the page before
    /// it in `readme()`) and links back to the README.
    @Test func everyDocsPageStartsWithATitle() throws {
        let pages = try documentationPages().filter { $0 != "README.md" }
        #expect(pages.count >= 10, "\(pages)")
        for page in pages {
            let text = try String(contentsOfFile: repositoryRoot + "/" + page, encoding: .utf8)
            #expect(text.hasPrefix("# "), "\(page) does not start with a # Title line")
            #expect(text.contains("](../README.md)"), "\(page) has no link back to the README")
        }
    }

    /// Every link to a Markdown page or an anchor (`docs/cli.md#exit-status`, `storage.md`,
    /// `#colour-luts`) names a page of the documentation and, with an anchor, one of its headings.
    @Test func linksBetweenPagesLeadToAHeading() throws {
        let pages = try documentationPages()
        var texts: [String: String] = [:]
        var anchors: [String: Set<String>] = [:]
        for page in pages {
            let text = try String(contentsOfFile: repositoryRoot + "/" + page, encoding: .utf8)
            texts[page] = text
            var found: Set<String> = []
            for line in text.components(separatedBy: "\n") {
                let hashes = line.prefix { $0 == "#" }.count
                if hashes > 0 && line.dropFirst(hashes).hasPrefix(" ") {
                    found.insert(headingAnchor(String(line.dropFirst(hashes + 1))))
                }
            }
            anchors[page] = found
        }
        let regex = try NSRegularExpression(pattern: "\\]\\(([A-Za-z0-9_./-]*\\.md)?(#[a-z0-9_-]+)?\\)")
        var checked = 0
        for page in pages {
            let text = texts[page] ?? ""
            let ns = text as NSString
            for m in regex.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
                let path: String? = m.range(at: 1).location == NSNotFound ? nil : ns.substring(with: m.range(at: 1))
                let anchor: String? = m.range(at: 2).location == NSNotFound ? nil : String(ns.substring(with: m.range(at: 2)).dropFirst())
                if path == nil && anchor == nil { continue }
                checked += 1
                let target = path.map { resolveLink($0, from: page) } ?? page
                guard let headings = anchors[target] else {
                    Issue.record("\(page) links to \(target), which is not a page of the documentation")
                    continue
                }
                if let anchor {
                    #expect(headings.contains(anchor), "\(page) links to \(target)#\(anchor): no such heading there")
                }
            }
        }
        #expect(checked > 20, "only \(checked) links found")
    }
}
