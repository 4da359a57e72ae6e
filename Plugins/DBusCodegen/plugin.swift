import Foundation
import PackagePlugin

/// Generates the Swift of every D-Bus interface from its XML declaration
/// (see the dbus-codegen tool): the package's `dbus/*.xml`, the interfaces
/// the host serves and apps implement, and the `*.xml` in the target's own
/// folder, interfaces of peers the host calls. The XML stays the one source
/// of truth: the code that serves and calls an interface derives from it.
@main
struct DBusCodegen: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let folders = [context.package.directoryURL.appending(path: "dbus"), target.directoryURL]
        var files: [URL] = []
        for folder in folders {
            files += try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "xml" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "Interfaces.swift")
        return [
            .buildCommand(
                displayName: "Generating Swift for \(files.count) D-Bus interfaces",
                executable: try context.tool(named: "dbus-codegen").url,
                // The tool lists the folders itself, so an interface file added
                // later is generated even when this plugin's answer is reused.
                arguments: [output.path] + folders.map(\.path),
                inputFiles: files + folders,
                outputFiles: [output]
            )
        ]
    }
}
