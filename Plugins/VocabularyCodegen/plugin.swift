import Foundation
import PackagePlugin

/// Generates the lint's tables of the rendering vocabulary from its one
/// declaration, the package's vocabulary/vocabulary.json (see the
/// vocabulary-codegen tool and docs/vocabulary.md#the-declaration): a change
/// there changes what the lint accepts, with no Swift to edit.
@main
struct VocabularyCodegen: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let declaration = context.package.directoryURL.appending(path: "vocabulary/vocabulary.json")
        let output = context.pluginWorkDirectoryURL.appending(path: "VocabularyDeclaration.swift")
        return [
            .buildCommand(
                displayName: "Generating the rendering vocabulary's tables",
                executable: try context.tool(named: "vocabulary-codegen").url,
                arguments: [declaration.path, output.path],
                inputFiles: [declaration],
                outputFiles: [output]
            )
        ]
    }
}
