import CLibFuzzer

#if canImport(Glibc)
import Glibc
#endif

// What every fuzz target shares: libFuzzer's driver, the input, and how a
// broken promise stops the run.
//
// SwiftPM links an executable with its main renamed to the module's, and
// `-sanitize=fuzzer` brings libFuzzer's own main, which calls
// `LLVMFuzzerTestOneInput`. So a target's main calls libFuzzer's driver
// itself (`Fuzzer.run`), and the one `LLVMFuzzerTestOneInput` is here.

/// One input, as libFuzzer hands it over; valid only during the call.
public struct FuzzInput {
    public let bytes: UnsafeRawBufferPointer

    /// The bytes as text, invalid UTF-8 repaired, as the host decodes the files it reads.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

public enum Fuzzer {
    /// The target's body; set once, before libFuzzer runs.
    nonisolated(unsafe) fileprivate static var body: (FuzzInput) -> Void = { _ in }

    /// Runs libFuzzer on `body` with the process's command line (libFuzzer's
    /// flags, then corpus folders or inputs to run once), and exits with its status.
    public static func run(_ body: @escaping (FuzzInput) -> Void) -> Never {
        self.body = body
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput))
    }

    /// Stops the run, as a crash libFuzzer keeps the input of, unless `condition` holds:
    /// for what a parser promises beyond not crashing.
    public static func expect(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) {
        if !condition { fatalError(message(), file: file, line: line) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    Fuzzer.body(FuzzInput(bytes: UnsafeRawBufferPointer(start: data, count: count)))
    return 0
}
