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

    /// The index of `tree`: read from its text (``scanned(_:)``), or, for a
    /// tree that reading does not take, from its elements.
    static func packed(_ tree: ViewTree) -> [UInt8] {
        var json = tree.json
        return json.withUTF8 { scanned($0) } ?? packed(root: tree.root)
    }

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
                        action: string($0), parameter: parameter.flatMap(decode),
                        isOnAfterTap: kinds & isToggle != 0 ? kinds & isOn == 0 : nil)
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

// MARK: - Reading the index from the text

// A restore puts back every widget before the host owns its name, and
// building each tree's elements to index them took a quarter of a
// 100,000-widget start again: the index is read from the text instead, in
// one pass that builds nothing but the index. It takes the trees valid
// content makes, and leaves any other (an escape in a string it reads, a key
// of an element given twice, an id used twice, a tree nested deep, anything
// `ViewTree.root` would read as no tree) to ``TapIndex/packed(root:)``, which
// reads the elements as a tap did, so both give the same index.

extension TapIndex {
    /// One element, as the text gives it: each field the range of its
    /// string's bytes (or of its value's, for `parameter`).
    private struct Element {
        var parent: Int
        var type: Range<Int>?
        var id: Range<Int>?
        var widgetURL: Range<Int>?
        var url: Range<Int>?
        var action: Range<Int>?
        var parameter: Range<Int>?
        var isOn: Bool?
        /// A `url`, `action` or `isOn` of another type than a link's, a control's or a toggle's must have.
        var odd = false
        /// The keys read so far, by ``Key/bit``.
        var keys: UInt8 = 0
        /// The innermost control and link that are or contain it, by index.
        var control: Int?
        var link: Int?
    }

    private enum Key: String {
        case type, id, widgetURL, url, action, parameter, isOn, children
        var bit: UInt8 {
            switch self {
            case .type: 1
            case .id: 2
            case .widgetURL: 4
            case .url: 8
            case .action: 16
            case .parameter: 32
            case .isOn: 64
            case .children: 128
            }
        }
    }

    /// Deeper trees are left to the elements' reading.
    private static let maxScannedDepth = 64

    private struct NotScanned: Error {}

    /// The index read from `text`, a tree the host took; nil when the text is
    /// one to leave to ``packed(root:)``.
    static func scanned(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var parser = JSONParser(bytes: text, lenient: true)
        var elements: [Element] = []
        do {
            try scan(&parser, parent: -1, depth: 1, into: &elements)
            try parser.end()
        } catch {
            return nil
        }
        func bytes(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: text[range]) }
        func equals(_ range: Range<Int>?, _ word: StaticString) -> Bool {
            guard let range else { return false }
            return word.withUTF8Buffer { bytes(range).elementsEqual($0) }
        }
        // What the elements' reading would refuse reads as no tree there: left to it.
        var ids: [Range<Int>] = []
        var widgetURLs: [Range<Int>] = []
        for index in elements.indices {
            let element = elements[index]
            guard let type = element.type, !type.isEmpty else { return nil }
            let link = equals(type, "link"), toggle = equals(type, "toggle"), control = toggle || equals(type, "button")
            if link && element.url == nil || control && element.action?.isEmpty != false || element.odd && (link || control) {
                return nil
            }
            if toggle && element.keys & Key.isOn.bit != 0 && element.isOn == nil { return nil }
            if let id = element.id {
                guard !id.isEmpty else { return nil }
                ids.append(id)
            }
            let parent = element.parent < 0 ? nil : elements[element.parent]
            elements[index].control = control ? index : parent?.control
            elements[index].link = link ? index : parent?.link
            // A widgetURL that is not an absolute URL is dropped, as the elements' reading drops it.
            if let url = element.widgetURL, URLParts.schemeLength(bytes(url)) != nil { widgetURLs.append(url) }
        }
        // An id used twice is dropped from the later element there.
        if ids.count > 1 {
            var seen = Set<String>()
            for id in ids { guard seen.insert(String(decoding: bytes(id), as: UTF8.self)).inserted else { return nil } }
        }
        var writer = Writer(widgetURL: widgetURLs.first.map(Run.inText), multiple: widgetURLs.count > 1)
        for element in elements {
            guard let id = element.id else { continue }
            let control = element.control.map { elements[$0] }
            writer.entry(
                id: .inText(id), action: control.map { .inText($0.action!) }, toggle: control.map { equals($0.type, "toggle") } ?? false,
                isOn: control?.isOn ?? false, parameter: control?.parameter.map(Run.inText), link: element.link.map { .inText(elements[$0].url!) })
        }
        return writer.bytes
    }

    /// Reads the element that is next and those inside it into `elements`, in pre-order.
    private static func scan(_ parser: inout JSONParser, parent: Int, depth: Int, into elements: inout [Element]) throws {
        guard depth <= maxScannedDepth, parser.nextValueByte() == UInt8(ascii: "{") else { throw NotScanned() }
        let index = elements.count
        elements.append(Element(parent: parent))
        try parser.openObject()
        var first = true
        while let name = try parser.nextKey(first: first) {
            first = false
            // Values nest within the parser's depth, as the elements' reading needs.
            let nesting = JSONParser.maxDepth - 2 * depth
            guard let key = Key(rawValue: name) else {
                try parser.skipReadValue(within: nesting)
                continue
            }
            guard elements[index].keys & key.bit == 0 else { throw NotScanned() }
            elements[index].keys |= key.bit
            switch key {
            case .children:
                try parser.openArray()
                var firstItem = true
                while try parser.nextItem(first: firstItem) {
                    firstItem = false
                    try scan(&parser, parent: index, depth: depth + 1, into: &elements)
                }
            case .parameter:
                _ = parser.nextValueByte()
                let start = parser.offset
                try parser.skipReadValue(within: nesting)
                elements[index].parameter = start..<parser.offset
            case .isOn:
                let byte = parser.nextValueByte()
                if byte == UInt8(ascii: "t") || byte == UInt8(ascii: "f") {
                    elements[index].isOn = try parser.literalValue() == .bool(true)
                } else {
                    try parser.skipReadValue(within: nesting)
                }
            case .type, .id, .widgetURL, .url, .action:
                guard parser.nextValueByte() == UInt8(ascii: "\"") else {
                    // Only a link's url and a control's action must be strings.
                    guard key == .url || key == .action else { throw NotScanned() }
                    try parser.skipReadValue(within: nesting)
                    elements[index].odd = true
                    continue
                }
                let (range, escaped) = try parser.readString()
                guard !escaped else { throw NotScanned() }
                switch key {
                case .type: elements[index].type = range
                case .id: elements[index].id = range
                case .widgetURL: elements[index].widgetURL = range
                case .url: elements[index].url = range
                default: elements[index].action = range
                }
            }
        }
    }
}
