import DBus

/// Why the daemon stopped other than by a signal.
public enum DaemonError: Error, CustomStringConvertible {
    case nameTaken(owner: String?)
    case busLost(BusAddress)

    public var description: String {
        switch self {
        case .nameTaken(let owner):
            return "\(Host1Apps.busName) is already owned\(owner.map { " by \($0)" } ?? "") — another widget-hostd is running on this bus"
        case .busLost(let bus):
            return "lost the connection to \(bus); exiting so the service manager can restart the host"
        }
    }
}
