import FuzzSupport
@testable import WidgetHostCore

// A `mimeapps.list`, as OpenURL reads them to route a URL: the key-file
// reader, and the handlers its default and removed associations list for
// each MIME type the file names.

Fuzzer.run { input in
    let file = KeyFile(parsing: input.text)
    for group in ["Default Applications", "Removed Associations"] {
        for key in (file.keyOrder[group] ?? []).prefix(16) {
            let ids = MimeApps.ids(in: file, group: group, mimeType: key.lowercased())
            Fuzzer.expect(!ids.contains(""), "an empty desktop id is listed for \(key)")
        }
    }
}
