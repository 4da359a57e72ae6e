import Foundation

/// A shared object that makes every `fsync` and `fdatasync` of a process it
/// is preloaded into (`LD_PRELOAD`) take `milliseconds` longer: a slow disk,
/// for benchmarks and for tests that need writes to wait for their sync.
public struct SlowSync {
    private let shim: PreloadShim

    /// The `.so` to put in `LD_PRELOAD`.
    public var path: String { shim.path }

    /// Builds the shim (see ``PreloadShim``). With `frozen`, a sync also waits
    /// for as long as ``frozenFile`` exists: a file system frozen (`fsfreeze`)
    /// until the file is removed.
    public static func build(milliseconds: Int, frozen: Bool = false) async throws -> SlowSync {
        SlowSync(shim: try await PreloadShim.build(named: "slow-sync") { directory in
            let frozenPath = frozen ? "\"\(directory)/frozen\"" : "0"
            return """
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
                """
        })
    }

    /// While this file exists, syncs wait (a shim built with `frozen`).
    public var frozenFile: String { shim.directory + "/frozen" }

    /// Removes the shim and its folder.
    public func remove() { shim.remove() }
}
