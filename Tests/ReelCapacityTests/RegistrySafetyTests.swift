import Foundation
import ReelCapacity
import ReelCore
import Testing

// Issue 27 item 5: the registry's /tmp fallback cannot be hijacked by another local user.
// Each test lays out the fallback (`ROOT/reel-UID/sessions`) in a directory of its own.

private let shares = SessionShares(encoder: 0.3, preview: 0, diskBytesPerSecond: 1e6, description: "prores:hq 1920×1080 at 30 fps")

/// `SCRATCH/reel-UID` as the root and its `sessions`, as the fallback lays them out.
private func fallback(_ scratchDir: String) -> SessionRegistry {
    SessionRegistry(directory: scratchDir + "/reel-\(geteuid())/sessions", root: scratchDir + "/reel-\(geteuid())")
}

private func mode(_ path: String) -> mode_t? {
    var st = stat()
    return lstat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
}

@Suite struct RegistrySafetyTests {
    @Test func theFallbackIsTmpReelUIDAndTheRuntimeDirectoryComesFirst() {
        #expect(SessionRegistry.defaultLocation(environment: [:], uid: 1000) == ("/tmp/reel-1000", "/tmp/reel-1000/sessions"))
        #expect(SessionRegistry.defaultLocation(environment: ["XDG_RUNTIME_DIR": ""], uid: 7) == ("/tmp/reel-7", "/tmp/reel-7/sessions"))
        #expect(SessionRegistry.defaultLocation(environment: ["XDG_RUNTIME_DIR": "/run/user/7"], uid: 7) == ("/run/user/7/reel", "/run/user/7/reel/sessions"))
    }

    /// A fresh registry is made 0700, root and sessions both; the lock and the entries 0600.
    @Test func aFreshRegistryIsMade0700() throws {
        let dir = scratch("safety")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let registry = fallback(dir)
        let old = umask(0)   // whatever the umask, the directories are 0700
        defer { umask(old) }
        let r = try #require(try registry.admit { _ in shares })
        defer { r.release() }
        #expect(mode(registry.root) == 0o700 && mode(registry.directory) == 0o700)
        #expect(mode(registry.directory + "/lock") == 0o600 && mode(r.path) == 0o600)
    }

    /// A pre-made directory others may write (0777, or 0775 sessions), one owned by another
    /// user (uid 65534), or a symlink planted in its place: refused with one clear line and
    /// exit 77, and nothing is registered or read there.
    @Test(arguments: ["root 0777", "sessions 0775", "root owner", "sessions owner", "root symlink", "sessions symlink"])
    func anUnsafeDirectoryIsRefused(_ case_: String) throws {
        let dir = scratch("safety")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let registry = fallback(dir)
        let (which, how) = (String(case_.split(separator: " ")[0]), String(case_.split(separator: " ")[1]))
        let path = which == "root" ? registry.root : registry.directory
        if which == "sessions" { #expect(mkdir(registry.root, 0o700) == 0) }
        var why = ""
        switch how {
        case "symlink":
            let elsewhere = dir + "/planted"
            #expect(mkdir(elsewhere, 0o700) == 0)
            #expect(symlink(elsewhere, path) == 0)
            why = "is a symbolic link"
        case "owner":
            #expect(mkdir(path, 0o700) == 0)
            #expect(chown(path, 65534, 65534) == 0)
            why = "belongs to uid 65534, not \(geteuid())"
        default:
            let m: mode_t = how == "0777" ? 0o777 : 0o775
            #expect(mkdir(path, 0o700) == 0 && chmod(path, m) == 0)
            why = "is open to other users (mode \(String(m, radix: 8)))"
        }
        let error = RegistryError.unsafe(path, why)
        #expect(error.description == "the session registry \(path) \(why): remove it (it is remade 0700), or set XDG_RUNTIME_DIR")
        #expect(error.exitStatus == 77)
        #expect(throws: error) { _ = try registry.admit { _ in shares } }
        #expect(throws: error) { _ = try registry.live() }
        #expect(!FileManager.default.fileExists(atPath: registry.directory + "/\(getpid()).json"))
    }

    /// A registry an older Reel made 0755 (readable by others, writable by nobody else: no
    /// entry can have been planted) is closed to 0700 and used, so an upgrade records at once.
    @Test func anOlderReadableRegistryIsClosedTo0700() throws {
        let dir = scratch("safety")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let registry = fallback(dir)
        #expect(mkdir(registry.root, 0o755) == 0 && chmod(registry.root, 0o755) == 0)
        #expect(mkdir(registry.directory, 0o755) == 0 && chmod(registry.directory, 0o755) == 0)
        let r = try #require(try registry.admit { _ in shares })
        defer { r.release() }
        #expect(mode(registry.root) == 0o700 && mode(registry.directory) == 0o700)
        #expect(FileManager.default.fileExists(atPath: registry.directory + "/\(getpid()).json"))
    }

    /// Entries are read without following symlinks: a planted symlink to a forged entry is
    /// not a live session (a forged live entry would refuse every recording).
    @Test func aPlantedSymlinkEntryIsNotRead() throws {
        let dir = scratch("safety")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let registry = fallback(dir)
        try registry.prepare()
        let forged = RegisteredSession(pid: 1, start: nil, boot: nil, shares: shares, registeredAt: 0)
        try JSONEncoder().encode(forged).write(to: URL(fileURLWithPath: dir + "/forged.json"))
        #expect(symlink(dir + "/forged.json", registry.directory + "/1.json") == 0)
        #expect(try registry.live().isEmpty, "the symlinked entry counted")
        // A temporary entry planted as a symlink is not written through.
        let target = dir + "/target"
        #expect(FileManager.default.createFile(atPath: target, contents: Data("keep".utf8)))
        #expect(symlink(target, registry.directory + "/.\(getpid()).tmp") == 0)
        let r = try #require(try registry.admit { _ in shares })
        defer { r.release() }
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep")
    }
}
