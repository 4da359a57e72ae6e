import DBus
import WidgetHostInterfaces
@_exported import enum WidgetHostCore.ActivityPresentation
@_exported import enum WidgetHostCore.JSONValue
@_exported import enum WidgetHostCore.OptionValue
@_exported import struct WidgetHostCore.WidgetBundle
@_exported import struct WidgetHostCore.WidgetKind
@_exported import enum WidgetHostCore.NoTapReason
@_exported import enum WidgetHostCore.Surface
@_exported import enum WidgetHostCore.TapDiagnostic
@_exported import enum WidgetHostCore.TapOutcome
@_exported import enum WidgetHostCore.TapVia
@_exported import struct WidgetHostCore.UserActivity
@_exported import struct WidgetHostCore.ViewNode
@_exported import enum WidgetHostCore.WidgetFamily
import WidgetHostWire

/// A tap's outcome and details, as `Tap` and `Resolve` answer.
public struct TapResult: Sendable, Equatable {
    /// The outcome; `.none` also for one this version does not know (`outcomeName` has it).
    public var outcome: TapOutcome.Name
    /// The outcome as sent.
    public var outcomeName: String
    public var appID: String
    /// For `open-url`: the URL and how it was chosen.
    public var url: String?
    public var via: TapVia?
    /// For `continue-user-activity`.
    public var activityType: String?
    public var userInfo: [String: OptionValue]
    /// For `perform-action`.
    public var action: String?
    public var parameter: OptionValue?
    /// For a toggle's `perform-action`: the state the tap turns it to.
    public var toggleIsOn: Bool?
    /// For `none`: why.
    public var reason: NoTapReason?
    /// What the rules noticed on the way.
    public var diagnostics: [TapDiagnostic]
    /// Every detail as sent, including keys added later.
    public var details: [String: OptionValue]

    /// A reply of Tap or Resolve.
    init(_ reply: (outcome: String, details: [String: DBusValue])) {
        self.init(outcome: reply.outcome, details: OptionValue.dictionary(reply.details))
    }

    init(outcome: String, details raw: [String: OptionValue]) {
        self.outcome = TapOutcome.Name(rawValue: outcome) ?? .none
        outcomeName = outcome
        details = raw
        appID = raw["app_id"]?.stringValue ?? ""
        url = raw["url"]?.stringValue
        via = raw["via"]?.stringValue.flatMap(TapVia.init(rawValue:))
        activityType = raw["activity_type"]?.stringValue
        if case .dict(let info)? = raw["user_info"] { userInfo = info } else { userInfo = [:] }
        action = raw["action"]?.stringValue
        parameter = raw["parameter"]
        if case .bool(let on)? = raw["toggle_is_on"] { toggleIsOn = on }
        reason = raw["reason"]?.stringValue.flatMap(NoTapReason.init(rawValue:))
        diagnostics = (raw["diagnostics"]?.stringArrayValue ?? []).compactMap(TapDiagnostic.init(rawValue:))
    }
}

/// Where a delivery came from and the token to raise a window with (docs/delivery.md).
public struct DeliveryContext: Sendable, Equatable {
    /// The XDG activation token of the click, when the renderer gave one.
    public var activationToken: String?
    /// The widget's kind (an activity's attributes type).
    public var kind: String?
    public var family: WidgetFamily?
    public var widgetID: String?
    public var activityID: String?
    public var presentation: ActivityPresentation?
    /// The id of the element the renderer reported under the click ("" for the background).
    public var elementID: String?
    public var surface: Surface?
    /// How a URL was chosen.
    public var via: TapVia?
    /// For a toggle's action, the state the tap turns it to (the opposite of
    /// the `isOn` it showed); nil for a button and every other delivery.
    public var toggleIsOn: Bool?

    init(_ context: [String: OptionValue]) {
        activationToken = context["activation-token"]?.stringValue
        var source: [String: OptionValue] = [:]
        if case .dict(let s)? = context["org.widgethost.source"] { source = s }
        kind = source["kind"]?.stringValue
        family = source["family"]?.stringValue.flatMap(WidgetFamily.init(rawValue:))
        widgetID = source["widget_id"]?.stringValue
        activityID = source["activity_id"]?.stringValue
        presentation = source["presentation"]?.stringValue.flatMap(ActivityPresentation.init(rawValue:))
        elementID = source["element_id"]?.stringValue
        surface = source["surface"]?.stringValue.flatMap(Surface.init(rawValue:))
        via = source["via"]?.stringValue.flatMap(TapVia.init(rawValue:))
        if case .bool(let on)? = context["org.widgethost.toggle-is-on"] { toggleIsOn = on }
    }
}

/// An error an app's handler throws to fail a delivery: the renderer's tap gets
/// `ActivationFailed` with this name and message.
public struct AppError: Error, DBusErrorConvertible {
    public var name: String
    public var message: String
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
    public var dbusError: DBusError { DBusError(name: name, message: message) }
}

extension [String: OptionValue] {
    var dbusValue: DBusValue { .vardict(mapValues(\.dbusValue)) }
}
