import DBus
import FuzzSupport
@testable import WidgetHostCore
@testable import WidgetHostService
import WidgetHostWire

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

// The bytes of one D-Bus message, as a connection reads them from a peer:
// libdbus's validation, the binding's reading of the header and of every
// argument, and what the host makes of the arguments — the model's values
// (OptionValue), a{sv} options read against each method's declared keys, as
// RegisterApp's and as a Live Activity's (its properties included), a
// configuration packed, journalled and read back, a provider's timeline, and
// the values written into a message again.

/// The descriptors in `values` (a value read from a message owns its own).
func descriptors(_ values: [DBusValue]) -> [Int32] {
    values.flatMap { value -> [Int32] in
        switch value {
        case .unixFD(let fd): [fd]
        case .array(_, let items), .structure(let items): descriptors(items)
        case .dictionary(_, _, let entries): descriptors(entries.flatMap { [$0.key, $0.value] })
        case .variant(let inner): descriptors([inner])
        default: []
        }
    }
}

let now = Date(timeIntervalSince1970: 1_700_000_000)
let content = #"{"lockScreen":{"type":"text"},"compactLeading":{"type":"text"},"compactTrailing":{"type":"text"},"minimal":{"type":"text"},"expanded":{"type":"text"}}"#

/// `options` as StartActivity's, then Update's and End's, as the host takes
/// them, and the activity as its object's properties and its journal record.
func liveActivity(_ options: [String: OptionValue]) {
    var activities = LiveActivityStore()
    guard let started = try? activities.start(appID: "org.example.Fuzz", attributesType: "Fuzz", contentJSON: content, options: options, now: now)
    else { return }
    _ = try? activities.update(id: started.id, contentJSON: content, options: options, now: now)
    _ = try? activities.end(id: started.id, options: options, now: now)
    guard let activity = activities.activity(started.id) else { return }
    for date in [now, activity.startedAt, activity.removalDate] + [activity.staleDate, activity.endedAt].compactMap({ $0 }) {
        _ = HostService.activityProperties(activity, at: date)
    }
    let record = StateRecord.activity(StoredActivity(activity))
    let line = try? StateFile.line(record)
    Fuzzer.expect(line.flatMap { StateFile.record(Array($0.utf8).dropLast()) } == record, "a Live Activity does not read back from the journal")
}

Fuzzer.run { input in
    guard let message = try? Message(demarshalling: Array(input.bytes)) else { return }
    _ = (message.kind, message.sender, message.destination, message.path, message.interface, message.member, message.errorName)
    let arguments = message.arguments()
    let fds = descriptors(arguments)
    defer { for fd in fds where fd >= 0 { close(fd) } }
    Fuzzer.expect(DBusValue.values(arguments, haveSignature: message.signature), "the arguments read are not of the message's signature")
    _ = message.error
    _ = StandardSignal(message)
    if fds.isEmpty {
        Fuzzer.expect(
            (try? Message.signal(path: "/", interface: "org.example.Fuzz", member: "Echo", arguments: arguments)) != nil,
            "the arguments read from a message cannot be written into one")
    }
    // A provider's GetTimeline reply: the entries, the policy and reload_at.
    if arguments.count == 3, case .array("(xs)", let items) = arguments[0], case .string(let policy) = arguments[1],
        case .int64(let reloadAt) = arguments[2]
    {
        let entries = items.compactMap { item -> (Int64, String)? in
            guard case .structure(let fields) = item, fields.count == 2, case .int64(let at) = fields[0], case .string(let json) = fields[1]
            else { return nil }
            return (at, json)
        }
        if let timeline = try? Timeline.parse(entries: entries, policy: policy, reloadAtMs: reloadAt) {
            var engine = TimelineEngine()
            _ = engine.restore(widgetID: "w1", timeline: timeline, receivedAt: now)
            _ = engine.advance(to: now.addingTimeInterval(86_400))
        }
    }
    for argument in arguments {
        _ = OptionValue(argument).dbusValue
        guard let entries = argument.stringKeyedEntries else { continue }
        let options = OptionValue.dictionary(entries.mapValues(\.variantContent))
        _ = try? AppOptions.parse(appID: "org.example.Fuzz", options)
        for declared in DeclaredOptions.all { _ = try? declared.init(options) }
        liveActivity(options)
        _ = OptionValue.serializedSize(ofDictionaries: [options])
        let packed = OptionValue.packed(options)
        Fuzzer.expect(packed.withUnsafeBytes { OptionValue.packed(OptionValue.unpack($0)) } == packed, "packed options unpack otherwise")
        guard (try? Validate.storable(options, "options")) != nil else { continue }
        // Taken as a widget's configuration: journalled, read back the same, and sent again.
        let record = StateRecord.widget(
            StoredWidget(id: "w1", appID: "org.example.Fuzz", kind: "fuzz", family: .systemSmall, configuration: options, content: nil))
        let line = try? StateFile.line(record)
        Fuzzer.expect(line.flatMap { StateFile.record(Array($0.utf8).dropLast()) } == record, "a configuration does not read back from the journal")
        Fuzzer.expect(
            (try? Message.signal(path: "/", interface: "org.example.Fuzz", member: "Echo", arguments: [.vardict(options.mapValues(\.dbusValue))])) != nil,
            "a configuration cannot be sent")
    }
}
