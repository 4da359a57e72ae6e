import Foundation

/// A shared object that makes every `fsync` and `fdatasync` of a process it
/// is preloaded into (`LD_PRELOAD`) take `milliseconds` longer: a slow disk,
/// for benchmarks and for tests that need writes to wait for their sync.
public struct SlowSync {
    /// The `.so` to put in `LD_PRELOAD`.
    public let path: String
    private let directory: String

    /// Builds the shim with the first C compiler on `PATH` (cc, gcc, clang).
    public init(milliseconds: Int) throws {
        directory = NSTemporaryDirectory() + "widgethost-slow-sync-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let source = directory + "/slow-sync.c"
        path = directory + "/slow-sync.so"
        try """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <time.h>
            static void pause_sync(void) {
                struct timespec t = { \(milliseconds / 1000), \(milliseconds % 1000) * 1000000L };
                while (nanosleep(&t, &t) != 0) {}
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
        let compiler = ["cc", "gcc", "clang"].first { name in
            (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").contains {
                FileManager.default.isExecutableFile(atPath: "\($0)/\(name)")
            }
        }
        guard let compiler else { throw PrivateBusError("no C compiler (cc, gcc or clang) on PATH to build the slow-sync shim") }
        let result = try runCommandBlocking("/usr/bin/env", [compiler, "-shared", "-fPIC", "-O2", "-o", path, source, "-ldl"])
        guard result.status == 0 else { throw PrivateBusError("\(compiler) could not build \(source): \(result.stderr)") }
    }

    /// Removes the shim and its folder.
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
