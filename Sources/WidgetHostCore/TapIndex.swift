// What a tap on a placed widget reads of its view tree, derived once when
// the widget's content is stored (SetContent, a timeline entry coming due, a
// restore) and packed into bytes in the widget's own allocation, after the
// content's text (docs/daemon.md#footprint). A widget keeps its tree as
// text, and the elements as values cost several times that; parsing the
// text again for each tap was most of what the rules cost.
//
// Only what the rules read (docs/widgets.md#resolution-rules) is kept: the
// tree's first `widgetURL` and whether there are more, and for each element
// with an id, the innermost control and link that are or contain it.
//
// The format is private to one process, like the configuration's
// (OptionValuePacking.swift): a flags byte (1: a widgetURL follows, 2: the
// tree holds more than one), the widgetURL, then each element with an id in
// pre-order: its id, a flags byte (1: a control follows, 2: a link's URL
// follows, 4: the control is a toggle, 8: which is on, 16: it has a
// `parameter`), the control's action and its parameter as JSON text, the
// link's URL. Each of those is a run of bytes: a number, twice the run's
// length, and the bytes; or, for a run the content's text holds as it is
// (most: a string without an escape), the number plus one and where the run
// starts in the text, so that an index takes a few bytes. Numbers are packed
// as the configuration's are.

enum TapIndex {
    private static let hasWidgetURL: UInt8 = 1
    private static let multipleWidgetURLs: UInt8 = 2
    private static let hasControl: UInt8 = 1
    private static let hasLink: UInt8 = 2
    private static let isToggle: UInt8 = 4
    private static let isOn: UInt8 = 8
    private static let hasParameter: UInt8 = 16

    /// A run of an index's bytes: copied into it, or where the content's text holds it.
    private enum Run {
        case copied([UInt8])
        case inText(Range<Int>)

        init(_ string: String) { self = .copied(Array(string.utf8)) }
    }

    /// The index of `tree`, from its elements.
    static func packed(_ tree: ViewTree) -> [UInt8] { packed(root: tree.root) }

    /// The index of the tree under `root`.
    static func packed(root: ViewElement) -> [UInt8] {
        let widgetURLs = root.widgetURLs
        var writer = Writer(widgetURL: widgetURLs.first.map(Run.init), multiple: widgetURLs.count > 1)
        func walk(_ element: ViewElement, control: ViewElement?, link: ViewElement?) {
            let control = element.isControl ? element : control
            let link = element.isLink ? element : link
            if let id = element.id {
                var parameter: Run?
                if let value = control?.parameter {
                    var text = JSONWriter(capacity: 64)
                    text.value(value)
                    parameter = .copied(text.bytes)
                }
                writer.entry(
                    id: Run(id), action: control.map { Run($0.action ?? "") }, toggle: control?.type == "toggle",
                    isOn: control?.isOn ?? false, parameter: parameter, link: link.map { Run($0.url ?? "") })
            }
            for child in element.children { walk(child, control: control, link: link) }
        }
        walk(root, control: nil, link: nil)
        return writer.bytes
    }

    /// Writes an index: the tree's first widgetURL, then the entries in pre-order.
    private struct Writer {
        private(set) var bytes: [UInt8] = []

        init(widgetURL: Run?, multiple: Bool) {
            bytes.reserveCapacity(16)
            bytes.append((widgetURL == nil ? 0 : hasWidgetURL) | (multiple ? multipleWidgetURLs : 0))
            if let widgetURL { append(widgetURL) }
        }

        mutating func entry(id: Run, action: Run?, toggle: Bool, isOn: Bool, parameter: Run?, link: Run?) {
            append(id)
            var flags = (action == nil ? 0 : hasControl) | (link == nil ? 0 : hasLink) | (parameter == nil ? 0 : hasParameter)
            if toggle { flags |= TapIndex.isToggle }
            if isOn { flags |= TapIndex.isOn }
            bytes.append(flags)
            if let action { append(action) }
            if let parameter { append(parameter) }
            if let link { append(link) }
        }

        private mutating func append(_ run: Run) {
            switch run {
            case .copied(let copied):
                OptionValue.appendNumber(UInt64(copied.count) << 1, to: &bytes)
                bytes += copied
            case .inText(let range):
                OptionValue.appendNumber(UInt64(range.count) << 1 | 1, to: &bytes)
                OptionValue.appendNumber(UInt64(range.lowerBound), to: &bytes)
            }
        }
    }

    /// What a tap on `elementID` (`""`: the background) reads, from the index
    /// ``packed(_:)`` wrote into `bytes` for the content whose text is `text`;
    /// nil when the tree has no element `elementID`.
    static func tapped(_ elementID: String, in bytes: UnsafeRawBufferPointer, text: UnsafeRawBufferPointer) -> TappedTree? {
        var tapped = TappedTree()
        // No index: no content.
        guard !bytes.isEmpty else { return elementID.isEmpty ? tapped : nil }
        var reader = OptionValue.PackedReader(bytes: bytes)
        func run() -> UnsafeRawBufferPointer {
            let number = Int(reader.number())
            guard number & 1 == 1 else {
                defer { reader.at += number >> 1 }
                return UnsafeRawBufferPointer(rebasing: bytes[reader.at..<reader.at + number >> 1])
            }
            let start = Int(reader.number())
            return UnsafeRawBufferPointer(rebasing: text[start..<start + number >> 1])
        }
        func string(_ run: UnsafeRawBufferPointer) -> String { String(decoding: run, as: UTF8.self) }
        let flags = reader.byte()
        if flags & hasWidgetURL != 0 { tapped.widgetURL = string(run()) }
        tapped.multipleWidgetURLs = flags & multipleWidgetURLs != 0
        if elementID.isEmpty { return tapped }
        var elementID = elementID
        return elementID.withUTF8 { elementID in
            while !reader.atEnd {
                let found = run().elementsEqual(UnsafeRawBufferPointer(elementID))
                let kinds = reader.byte()
                let action = kinds & hasControl != 0 ? run() : nil
                let parameter = kinds & hasParameter != 0 ? run() : nil
                let url = kinds & hasLink != 0 ? run() : nil
                guard found else { continue }
                tapped.control = action.map {
                    .init(
                        action: string($0),
                        parameter: ViewElement.actionParameter(toggle: kinds & isToggle != 0, isOn: kinds & isOn != 0, parameter: parameter.flatMap(decode)))
                }
                tapped.linkURL = url.map(string)
                return tapped
            }
            return nil
        }
    }

    /// A parameter's JSON text: written from a value, or as the tree gave it.
    private static func decode(_ text: UnsafeRawBufferPointer) -> JSONValue? {
        var parser = JSONParser(bytes: text.assumingMemoryBound(to: UInt8.self), lenient: true)
        return try? parser.document()
    }
}
