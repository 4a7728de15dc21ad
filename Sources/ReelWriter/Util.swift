#if canImport(Glibc)
import Glibc
#endif

func unlinkQuietly(_ path: String) { _ = unlink(path) }
