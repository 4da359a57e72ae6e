import Foundation

/// A shared object built from C source with the first C compiler on `PATH`
/// (cc, gcc, clang), to put in a process's `LD_PRELOAD`: what the benchmarks
/// and tests change or count in a process without touching its code.
public struct PreloadShim: Sendable {
    /// The `.so` to put in `LD_PRELOAD`.
    public let path: String
    /// The shim's own folder, for files it shares with the process it is preloaded into.
    public let directory: String

    /// Writes the source that `source` gives for the shim's folder and
    /// compiles it, without blocking a thread of the cooperative pool.
    public static func build(named name: String, source: (_ directory: String) -> String) async throws -> PreloadShim {
        guard let compiler = ["cc", "gcc", "clang"].first(where: { PrivateBus.which($0) != nil }) else {
            throw PrivateBusError("no C compiler (cc, gcc or clang) on PATH to build the \(name) shim")
        }
        let directory = NSTemporaryDirectory() + "widgethost-\(name)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let shim = PreloadShim(path: directory + "/\(name).so", directory: directory)
        let file = directory + "/\(name).c"
        do {
            try source(directory).write(toFile: file, atomically: true, encoding: .utf8)
            let result = try await runCommand("/usr/bin/env", [compiler, "-shared", "-fPIC", "-O2", "-o", shim.path, file, "-ldl"])
            guard result.status == 0 else { throw PrivateBusError("\(compiler) could not build \(file): \(result.stderr)") }
        } catch {
            shim.remove()
            throw error
        }
        return shim
    }

    /// Removes the shim and its folder.
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
