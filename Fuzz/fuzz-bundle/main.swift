import FuzzSupport
import WidgetHostCore

// Bundle JSON, as RegisterWidgets takes it from an app and a restore reads
// it back from the state directory; an accepted bundle's kinds are then
// asked what a placement and GetConfigurationOptions ask.

Fuzzer.run { input in
    let text = input.text
    let stored = try? WidgetBundle.parse(text, stored: true)
    guard let bundle = try? WidgetBundle.parse(text) else { return }
    // Reading back stored bundles drops limits and rules; it never refuses more.
    Fuzzer.expect(stored == bundle, "a bundle accepted from an app reads back otherwise as stored")
    var store = WidgetStore()
    store.registerBundle(appID: "org.example.Fuzz", bundle)
    for kind in bundle.kinds {
        for parameter in kind.parameters { _ = try? kind.requireDynamic(parameter.name, appID: "org.example.Fuzz") }
        let configuration = Dictionary(kind.parameters.map { ($0.name, OptionValue.string("x")) }) { first, _ in first }
        for family in kind.families {
            _ = try? store.add(appID: "org.example.Fuzz", kind: kind.kind, family: family.rawValue, configuration: configuration)
        }
    }
}
