#if canImport(Glibc)
import Glibc
#endif

/// Runs a system call until it is not interrupted: its result, with `errno`
/// set by the call when the result is negative.
func retryingOnEINTR<Result: BinaryInteger>(_ body: () -> Result) -> Result {
    while true {
        let result = body()
        if result >= 0 || errno != EINTR { return result }
    }
}
