import Foundation
import PackagePlugin

/// Embeds every `dbus/*.xml` of the package into the target as Swift string
/// constants, so the interface files stay the one source of truth: the
/// service parses them at start-up and serves exactly what they declare.
@main
struct EmbedInterfaces: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let directory = context.package.directoryURL.appending(path: "dbus")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "xml" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "InterfaceXML.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) D-Bus interface files",
                executable: try context.tool(named: "embed-interfaces").url,
                // The tool lists the folder itself, so an interface file added
                // later is embedded even when this plugin's answer is reused.
                arguments: [output.path, directory.path],
                inputFiles: files + [directory],
                outputFiles: [output]
            )
        ]
    }
}
