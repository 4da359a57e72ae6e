import Synchronization

/// A value guarded by a `Synchronization.Mutex`, for state that holds pointers
/// and continuations: `Mutex.withLock` hands its result back as `sending`,
/// which such values cannot be, so the value lives beside the mutex and the
/// result leaves the lock through a local.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex = Mutex(())
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        var result: Result<R, E>?
        mutex.withLock { _ in result = Result { () throws(E) -> R in try body(&value) } }
        return try result!.get()
    }
}
