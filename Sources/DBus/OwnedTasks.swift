import Synchronization

/// The tasks an owner starts that outlive the call starting them — an `.async`
/// handler's answer, an app's handling of a delivery — each held until it
/// ends, so that the owner cancels what is left when it goes (a connection
/// lost, an app closed). Nothing started through it runs on unowned.
package final class OwnedTasks: Sendable {
    private struct State {
        var running: [UInt64: Task<Void, Never>] = [:]
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    package init() {}

    /// Runs `body` in a task of its own, held until it returns.
    package func start(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            let id = state.next
            state.next += 1
            // Created under the lock: the task's own removal waits until it is held.
            state.running[id] = Task { [weak self] in
                await body()
                self?.ended(id)
            }
        }
    }

    /// Cancels every task still running.
    package func cancelAll() {
        let running = state.withLock { state in
            defer { state.running.removeAll() }
            return Array(state.running.values)
        }
        for task in running { task.cancel() }
    }

    /// How many tasks are running.
    package var count: Int { state.withLock { $0.running.count } }

    private func ended(_ id: UInt64) {
        _ = state.withLock { $0.running.removeValue(forKey: id) }
    }
}
