import Foundation
import PackagePlugin

/// Generates the Swift of every D-Bus interface from its XML declaration
/// (see the dbus-codegen tool): the package's `dbus/*.xml`, the interfaces
/// the host serves and apps implement, and the `*.xml` in the target's own
/// folder, interfaces of peers the host calls. The XML stays the one source
/// of truth: the code that serves and calls an interface derives from it.
///
/// A target that does not link the binding (the model, WidgetHostCore) gets
/// only the structs of the methods' `a{sv}` options, plain Swift over
/// `OptionValue` (docs/interfaces.md#options).
@main
struct DBusCodegen: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let interfaces = target.recursiveTargetDependencies.contains { $0.name == "DBus" }
        let declarations = context.package.directoryURL.appending(path: "dbus")
        let folders = interfaces ? [declarations, target.directoryURL] : [declarations]
        var files: [URL] = []
        for folder in folders {
            files += try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "xml" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: interfaces ? "Interfaces.swift" : "Options.swift")
        return [
            .buildCommand(
                displayName: interfaces ? "Generating Swift for \(files.count) D-Bus interfaces" : "Generating the options of \(files.count) D-Bus interfaces",
                executable: try context.tool(named: "dbus-codegen").url,
                // The tool lists the folders itself, so an interface file added
                // later is generated even when this plugin's answer is reused.
                arguments: (interfaces ? [] : ["--options"]) + [output.path] + folders.map(\.path),
                inputFiles: files + folders,
                outputFiles: [output]
            )
        ]
    }
}
