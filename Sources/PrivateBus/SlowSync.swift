import Foundation

/// A shared object that makes every `fsync` and `fdatasync` of a process it
/// is preloaded into (`LD_PRELOAD`) take `milliseconds` longer: a slow disk,
/// for benchmarks and for tests that need writes to wait for their sync.
public struct SlowSync {
    /// The `.so` to put in `LD_PRELOAD`.
    public let path: String
    private let directory: String

    /// Builds the shim with the first C compiler on `PATH` (cc, gcc, clang),
    /// without blocking a thread of the cooperative pool. With `frozen`, a
    /// sync also waits for as long as ``frozenFile`` exists: a file system
    /// frozen (`fsfreeze`) until the file is removed.
    public static func build(milliseconds: Int, frozen: Bool = false) async throws -> SlowSync {
        let shim = try SlowSync(milliseconds: milliseconds, frozen: frozen)
        let result = try await runCommand("/usr/bin/env", [shim.compiler, "-shared", "-fPIC", "-O2", "-o", shim.path, shim.source, "-ldl"])
        guard result.status == 0 else {
            shim.remove()
            throw PrivateBusError("\(shim.compiler) could not build \(shim.source): \(result.stderr)")
        }
        return shim
    }

    private let compiler: String
    private let source: String

    /// While this file exists, syncs wait (a shim built with `frozen`).
    public var frozenFile: String { directory + "/frozen" }

    /// Writes the source and picks the compiler; ``build(milliseconds:frozen:)`` compiles it.
    private init(milliseconds: Int, frozen: Bool) throws {
        directory = NSTemporaryDirectory() + "widgethost-slow-sync-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        source = directory + "/slow-sync.c"
        path = directory + "/slow-sync.so"
        let frozenPath = frozen ? "\"\(directory)/frozen\"" : "0"
        try """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <time.h>
            #include <unistd.h>
            static void pause_sync(void) {
                struct timespec t = { \(milliseconds / 1000), \(milliseconds % 1000) * 1000000L };
                while (nanosleep(&t, &t) != 0) {}
                const char *frozen = \(frozenPath);
                while (frozen && access(frozen, F_OK) == 0) {
                    struct timespec tick = { 0, 10000000L };
                    nanosleep(&tick, 0);
                }
            }
            int fsync(int fd) {
                static int (*real)(int);
                if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
                pause_sync();
                return real(fd);
            }
            int fdatasync(int fd) {
                static int (*real)(int);
                if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
                pause_sync();
                return real(fd);
            }
            """.write(toFile: source, atomically: true, encoding: .utf8)
        let found = ["cc", "gcc", "clang"].first { name in
            (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").contains {
                FileManager.default.isExecutableFile(atPath: "\($0)/\(name)")
            }
        }
        guard let compiler = found else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PrivateBusError("no C compiler (cc, gcc or clang) on PATH to build the slow-sync shim")
        }
        self.compiler = compiler
    }

    /// Removes the shim and its folder.
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
