// A change to the model, as the host journals it and as it takes it back.
//
// The model's stores record, while a change is made through them
// (``WidgetStore/changing(_:)``, ``LiveActivityStore/changing(_:)``), each
// object the change replaces, before it replaces it. What a change hands
// back — a ``DurableChange`` — is the records that journal it and those
// prior objects, and nothing else makes one: what is put back when the disk
// refuses the records is what the change replaced, however long after it is
// asked for, and the records say what the change did, not what its caller
// meant it to do (docs/interfaces.md#changing-the-model).

/// A change made to the model: the records that journal it, and each object
/// it touched as it was before.
public struct DurableChange: Sendable {
    /// An object of the model as it was before a change: what to put back
    /// when the disk refuses the change.
    public enum Prior: Sendable {
        case bundle(appID: String, WidgetBundle?)
        case widget(id: String, PlacedWidget?)
        case activity(id: String, LiveActivity?)
    }

    /// Each object the change touched, as it was, in the order it first touched them.
    public let priors: [Prior]
    /// What those objects are now, in the same order: each one stored whole, or its removal.
    public let records: [StateRecord]

    /// Whether the change touched nothing.
    public var isEmpty: Bool { priors.isEmpty }
}

/// What a store notes while a change is made through it: each object the
/// change touches, as it was before the first touch.
struct ChangeRecorder: Sendable {
    private(set) var priors: [DurableChange.Prior] = []
    private var touched: Set<String> = []

    mutating func note(_ prior: DurableChange.Prior) {
        let key =
            switch prior {
            case .bundle(let appID, _): "bundle " + appID
            case .widget(let id, _): "widget " + id
            case .activity(let id, _): "activity " + id
            }
        if touched.insert(key).inserted { priors.append(prior) }
    }
}

/// A store of the model whose changes are journalled. Each of its methods
/// that changes an object notes it first (`recorder?.note(…)`), so that a
/// change made through ``recordingChange(_:)`` knows what it replaced.
protocol RecordingStore {
    /// What the change under way has replaced so far; nil when none is under way.
    var recorder: ChangeRecorder? { get set }
    /// The record of what the object `prior` names is now: stored whole, or
    /// its removal; nil when it neither was nor is.
    func record(after prior: DurableChange.Prior) -> StateRecord?
}

extension RecordingStore {
    /// Makes `change`, recording what it replaces. Like every change the
    /// service stores, `change` checks before it changes: when it throws,
    /// it has changed nothing.
    mutating func recordingChange<T, E: Error>(_ change: (inout Self) throws(E) -> T) throws(E) -> (T, DurableChange) {
        precondition(recorder == nil, "a change is made through a store while another one is")
        recorder = ChangeRecorder()
        defer { recorder = nil }
        let result: T
        do { result = try change(&self) } catch {
            precondition(recorder?.priors.isEmpty ?? true, "a change threw after it had changed the model")
            throw error
        }
        var priors: [DurableChange.Prior] = []
        var records: [StateRecord] = []
        for prior in recorder?.priors ?? [] {
            guard let record = record(after: prior) else { continue }
            priors.append(prior)
            records.append(record)
        }
        return (result, DurableChange(priors: priors, records: records))
    }
}
