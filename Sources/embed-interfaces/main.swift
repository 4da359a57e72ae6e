import Foundation

// embed-interfaces OUTPUT DIRECTORY|XML...
// Writes a Swift file with the text of each XML file (every *.xml of a
// DIRECTORY argument), keyed by its name without
// ".xml" (the interface name). Used by the EmbedInterfaces build plugin.

let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: embed-interfaces OUTPUT DIRECTORY|XML...\n".utf8))
    exit(2)
}

var swift = """
    // Generated from dbus/*.xml by the EmbedInterfaces plugin. Do not edit:
    // change the XML files instead.

    /// The text of every `dbus/<interface>.xml`, keyed by interface name.
    enum InterfaceXML {
        static let files: [String: String] = [

    """
var paths: [String] = []
for argument in arguments.dropFirst() {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue {
        let names = try FileManager.default.contentsOfDirectory(atPath: argument).filter { $0.hasSuffix(".xml") }.sorted()
        paths += names.map { argument + "/" + $0 }
    } else {
        paths.append(argument)
    }
}
for path in paths {
    let url = URL(fileURLWithPath: path)
    let text = try String(contentsOf: url, encoding: .utf8)
    var hashes = "#"
    while text.contains("\"" + hashes) { hashes += "#" }
    let name = url.deletingPathExtension().lastPathComponent
    swift += "        \"\(name)\": \(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes),\n"
}
swift += "    ]\n}\n"
let data = Data(swift.utf8)
if (try? Data(contentsOf: URL(fileURLWithPath: output))) != data {
    try data.write(to: URL(fileURLWithPath: output), options: .atomic)
}
