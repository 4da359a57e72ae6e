import DBus
import FoundationEssentials
import WidgetHostCore
import WidgetHostInterfaces
import WidgetHostWire

extension OptionValue {
    /// The value as plain JSON (dictionaries as objects; a value D-Bus has and JSON lacks as `null`).
    public var jsonValue: JSONValue {
        switch self {
        case .bool(let b): .bool(b)
        case .int(let i): .integer(i)
        case .uint(let u): u <= UInt64(Int64.max) ? .integer(Int64(u)) : .number(Double(u))
        case .double(let d): .number(d)
        case .string(let s), .objectPath(let s): .string(s)
        case .array(_, let items): .array(items.map(\.jsonValue))
        case .dict(let entries): .object(entries.mapValues(\.jsonValue))
        case .other: .null
        }
    }

    /// The value as a bound text shows it (docs/vocabulary.md#binding), as the
    /// other renderers write it: a string as it is, a whole number without a
    /// fraction (`10`, also for the double 10.0), anything else as JSON, its keys
    /// sorted so that the same value always reads the same.
    var boundText: String {
        switch self {
        case .string(let s), .objectPath(let s): return s
        case .double(let d) where d.isFinite && d == d.rounded() && abs(d) < 1e15: return String(Int64(d))
        default: return jsonValue.stableJSONText()
        }
    }
}

extension RenderedActivity {
    /// What `presentation` says in words, for a renderer that shows only text (a
    /// bar, a tooltip): the texts of its `text` elements in reading order, each
    /// with its binding resolved (docs/vocabulary.md#binding), joined by spaces;
    /// for a presentation that shows no text, such as an icon alone, its root's
    /// `label`. `""` when it has neither.
    public func text(of presentation: ActivityPresentation) -> String {
        guard let content = try? JSONValue.decode(contentJSON, lenient: true).value, case .object(let trees) = content,
            case .object(let root)? = trees[presentation.rawValue]
        else { return "" }
        let shown = Self.visibleText(.object(root), state: contentState, attributes: attributes)
        if !shown.isEmpty { return shown }
        return root["label"]?.stringValue ?? ""
    }

    /// The text an element shows, its descendants' joined by spaces, as the
    /// renderers' `visibleText` (renderers/gtk/widgetboard/vocabulary.py).
    static func visibleText(_ node: JSONValue, state: [String: OptionValue], attributes: [String: OptionValue]) -> String {
        guard case .object(let element) = node else { return "" }
        var parts: [String] = []
        if element["type"]?.stringValue == "text" { parts.append(boundText(element, state: state, attributes: attributes)) }
        if case .array(let children)? = element["children"] {
            parts += children.map { visibleText($0, state: state, attributes: attributes) }
        }
        return parts.filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// A `text` element's words: its `bind` resolved into `format` at `{}`, else its `text`.
    static func boundText(_ element: [String: JSONValue], state: [String: OptionValue], attributes: [String: OptionValue]) -> String {
        if let bind = element["bind"]?.stringValue, let dot = bind.firstIndex(of: ".") {
            let key = String(bind[bind.index(after: dot)...])
            let scope: [String: OptionValue]? = switch bind[..<dot] {
            case "state": state
            case "attributes": attributes
            default: nil
            }
            if let value = scope?[key] {
                let text = value.boundText
                if let format = element["format"]?.stringValue, let slot = format.firstRange(of: "{}") {
                    return format[..<slot.lowerBound] + text + format[slot.upperBound...]
                }
                return text
            }
        }
        return element["text"]?.stringValue ?? ""
    }
}

extension WidgetHostRenderer {
    /// The most relevant Live Activity, the first of `LiveActivities.Order`; nil
    /// when none is shown. Starts the host by D-Bus activation if it is not running.
    public func mostRelevantActivity() async throws -> RenderedActivity? {
        try await callingHost { try await mostRelevant(at: Host1Apps.busName) }
    }

    /// The most relevant Live Activity now, and again after each change that may
    /// alter it or what it shows: an activity started, updated (its content, its
    /// state alone, its relevance), gone stale, ended or removed; the host gone
    /// (nil) and back. Nil while none runs or no host is on the bus. It follows
    /// the host's signals and never polls; it never starts the host. The same
    /// activity may come twice in a row: compare what you show. The stream ends
    /// when the bus connection does.
    public func mostRelevantActivityUpdates() async throws -> AsyncStream<RenderedActivity?> {
        let signals = try await connection.signals(MatchRule(sender: Host1Apps.busName, pathNamespace: Host1Apps.objectPath))
        let owners = try await connection.nameOwnerChanges(for: Host1Apps.busName)
        // A burst of signals while the host is read makes one reading more, not one each.
        let (pokes, poke) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        poke.yield()
        let watching = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await message in signals where Self.concernsActivities(message) { poke.yield() } }
                group.addTask { for await _ in owners { poke.yield() } }
            }
            poke.finish()
        }
        return AsyncStream { continuation in
            let reading = Task {
                for await _ in pokes { continuation.yield(await self.mostRelevantIfServed()) }
                continuation.finish()
            }
            continuation.onTermination = { _ in
                reading.cancel()
                watching.cancel()
            }
        }
    }

    /// Whether a signal of the host may change the most relevant activity or what it shows:
    /// not a widget's.
    static func concernsActivities(_ message: Message) -> Bool {
        switch StandardSignal(message) {
        case .interfacesAdded(let path, _)?, .interfacesRemoved(let path, _)?:
            return Host1LiveActivity.id(inPath: path) != nil
        case .propertiesChanged(_, let interface, _, _)?:
            return interface == Host1LiveActivities.name || interface == Host1LiveActivity.name
        case nil:
            return false
        }
    }

    /// The most relevant activity of the host now on the bus, asked by its unique
    /// name so that no call starts a host; nil when there is none. A reading that
    /// fails (an activity removed between the order and its properties, the host
    /// gone meanwhile) is made again.
    private func mostRelevantIfServed() async -> RenderedActivity? {
        for _ in 0..<3 {
            guard let owner = try? await connection.nameOwner(Host1Apps.busName) else { return nil }
            do {
                return try await mostRelevant(at: owner)
            } catch {
                continue
            }
        }
        return nil
    }

    private func mostRelevant(at host: String) async throws -> RenderedActivity? {
        guard let first = try await Host1LiveActivities.Proxy(connection, destination: host).properties().order.first else { return nil }
        let values = try await connection.allProperties(destination: host, path: first, interface: Host1LiveActivity.name)
        return MirroredObject(path: first, interfaces: [Host1LiveActivity.name: values]).activity
    }
}
