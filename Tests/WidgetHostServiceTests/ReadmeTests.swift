import Foundation
import PrivateBus
import Testing

/// The shell blocks of the README and the guides, each document pasted block
/// by block into a terminal on a busy machine with other apps installed, as a
/// person would, twice in a row (see DocRunner.swift): every command prints
/// what the document shows, and each run leaves nothing behind.
@Suite("Documents run as written", .serialized, .timeLimit(.minutes(10)))
struct DocumentTests {
    static let sample = """
        Some prose.

        ```sh
        # A comment before a command is prose.
        echo hello   # greets
        # hello

        echo "pid $$"
        # pid …
        (until [ -e ~/go ]; do sleep 0.05; done; echo from the job) &
        touch ~/go; echo next
        # next
        # from the job
        printf 'a\\nb\\nc\\n'
        # a
        # …
        echo wrong
        # right
        cat <<'EOF'
        # not a comment
        EOF
        # # not a comment
        false
        ```

        ```text
        echo not run
        ```

        A block is pasted whole: what a job prints as it starts does not hold
        up the next command, and a line is shown no later than the command
        during which it came.

        ```sh
        (sleep 1; echo started; touch ~/ready) &
        # started
        [ -e ~/ready ] && echo ready || echo not yet
        # ready
        (sleep 0.5; echo early) &
        sleep 1.5
        echo after
        # after
        # early
        ls "$XDG_DATA_DIRS/applications"
        # org.gnome.Shell.PortalHelper.desktop
        # org.gnome.TextEditor.desktop
        ```
        """

    @Test("The doc runner reads commands, what they show, here-documents, background jobs and blocks")
    func reads() {
        let steps = DocStep.steps(Self.sample)
        #expect(steps.prefix(8).map(\.command) == [
            "echo hello   # greets", "echo \"pid $$\"", "(until [ -e ~/go ]; do sleep 0.05; done; echo from the job) &", "touch ~/go; echo next", "printf 'a\\nb\\nc\\n'",
            "echo wrong", "cat <<'EOF'\n# not a comment\nEOF", "false",
        ])
        #expect(steps.prefix(8).map(\.expected) == [["hello"], ["pid …"], [], ["next", "from the job"], ["a", "…"], ["right"], ["# not a comment"], []])
        #expect(steps.prefix(8).map(\.background) == [false, false, true, false, false, false, false, false])
        #expect(steps.prefix(8).map(\.line) == [5, 8, 10, 11, 14, 17, 19, 23])
        #expect(steps.map(\.block) == Array(repeating: 0, count: 8) + Array(repeating: 1, count: 6))
    }

    @Test("The doc runner pastes each block at once and reports exactly the commands that print something else or fail silently")
    func reportsDifferences() async throws {
        let differences = try await DocSession.run(DocStep.steps(Self.sample))
        #expect(
            differences.map(\.step.command) == ["echo wrong", "false", "[ -e ~/ready ] && echo ready || echo not yet", "sleep 1.5"],
            "\(differences)")
    }

    @Test("The doc runner runs a document twice in one home and finds what a run leaves running or in the home")
    func findsWhatIsLeft() async throws {
        // Each known issue must occur: a document that only works once, one that leaves a process, one that leaves a file.
        try await withKnownIssue {
            let once = "```sh\n[ -e ~/.seen ] && echo again || echo first\n# first\ntouch ~/.seen\n```\n"
            try await DocSession.check(once, named: "once.md", leaving: [".seen"])
        } matching: { "\($0)".contains("once.md:2 (run 2)") && "\($0)".contains("# again") }
        try await withKnownIssue {
            try await DocSession.check("```sh\nsleep 600 &\n```\n", named: "running.md")
        } matching: { "\($0)".contains("running.md, run ") && "\($0)".contains("leaves these running") && "\($0)".contains("sleep 600") }
        try await withKnownIssue {
            try await DocSession.check("```sh\ntouch ~/litter ~/kept\n```\n", named: "litter.md", leaving: ["kept"])
        } matching: { "\($0)".contains("litter.md, run 1, leaves these in the home: [\"litter\"]") }
    }

    @Test("README.md, run in order, prints what it shows")
    func readme() async throws {
        // The README shows the interfaces through both real clients, and what each prints.
        let commands = DocStep.steps(try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8))
        #expect(commands.filter { $0.command.hasPrefix("gdbus ") || $0.command.hasPrefix("busctl ") }.count >= 8)
        #expect(commands.contains { $0.command.hasPrefix("gdbus call") && !$0.expected.isEmpty })
        #expect(commands.contains { $0.command.hasPrefix("busctl --user call") && !$0.expected.isEmpty })
        #expect(commands.contains { $0.expected.contains { $0.hasPrefix("Call failed: ") } }, "an error example, as busctl or gdbus words it")
        try await DocSession.check(
            "README.md", skipping: ["scripts/demo", "scripts/test", "packaging/build-deb", "packaging/build-plasma-deb", "sudo apt install", "swift run -c release"],
            leaving: Self.desktopFolders)
    }

    @Test("docs/guides/app.md, run in order, prints what it shows")
    func appGuide() async throws {
        try await DocSession.check("docs/guides/app.md", leaving: Self.desktopFolders + [Self.pythonUserSite])
    }

    @Test("docs/guides/renderer.md, run in order, prints what it shows")
    func rendererGuide() async throws {
        try await DocSession.check("docs/guides/renderer.md")
    }

    /// The folders a desktop has, where the documents install apps: they stay, emptied.
    static let desktopFolders = [".local/share/applications", ".local/share/dbus-1/services"]

    /// The account's own Python folder (`python3 -m site --user-site`, Debian 12's Python),
    /// where the app guide puts the `.pth` file that finds the Python library: it stays, emptied.
    static let pythonUserSite = ".local/lib/python3.11/site-packages"

    /// The packages the README lists are those scripts/deps.sh installs, in its order.
    @Test("README.md lists the Debian packages scripts/deps.sh installs")
    func packages() throws {
        let deps = try String(contentsOf: repositoryRoot.appendingPathComponent("scripts/deps.sh"), encoding: .utf8)
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let listed = try #require(deps.firstMatch(of: /\nWIDGETHOST_DEBS=\(([^)]*)\)/)).1.split(separator: " ").map(String.init)
        let installs = readme.split(separator: "\n").filter { $0.hasPrefix("sudo apt install ") && !$0.contains(".deb") }
        #expect(installs.count == 1, "README.md shows one 'sudo apt install' of the packages: \(installs)")
        #expect(installs.first.map { $0.split(separator: " ").dropFirst(3).map(String.init) } == listed)
        #expect(listed.count > 10)
    }

    /// Code a guide shows but does not run is quoted from a file the tests do
    /// run, so it cannot drift from what works: the token minting from the
    /// board (its tests click on a virtual display), the Swift app from the
    /// example the app guide runs, the Waybar module from its snippet (which
    /// Waybar loads in the bars' tests).
    @Test("Code the guides quote without running is the repository's code, verbatim", arguments: [
        ("docs/guides/renderer.md", "python", "renderers/gtk/widgetboard/taps.py"),
        ("docs/guides/app.md", "swift", "examples/swift/TapMe/main.swift"),
        ("README.md", "jsonc", "examples/bars/waybar/config.jsonc"),
    ])
    func quotedCode(document: String, language: String, source: String) throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(document), encoding: .utf8)
        let code = try String(contentsOf: repositoryRoot.appendingPathComponent(source), encoding: .utf8)
        let blocks = text.components(separatedBy: "```\(language)\n").dropFirst().map { $0.components(separatedBy: "```\n")[0] }
        #expect(!blocks.isEmpty, "\(document) quotes no \(language) code")
        for block in blocks {
            #expect(code.contains(block), "\(document) quotes \(language) code that \(source) does not have:\n\(block)")
        }
    }
}

/// The README's shape: its quick start is the host shown end to end and the
/// tests, nothing more; what else a reader may install or run has a section of
/// its own.
@Suite("README")
struct ReadmeTests {
    /// The lines of `markdown`'s section under the heading `## title`, up to the
    /// next heading of its level or above (a `#` line in a code block is no heading).
    static func section(_ title: String, of markdown: String) -> String? {
        var lines: [Substring] = []
        var inside = false, fenced = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle() }
            if !fenced, line.hasPrefix("# ") || line.hasPrefix("## ") {
                if inside { break }
                inside = line == "## \(title)"
            }
            if inside { lines.append(line) }
        }
        return inside ? lines.joined(separator: "\n") : nil
    }

    @Test("The README's quick start runs exactly two commands: scripts/demo and scripts/test")
    func quickStart() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let quickStart = try #require(Self.section("Quick start", of: readme), "README.md has no '## Quick start'")
        // Its code is in sh blocks only, the ones the doc runner reads, so no command hides in another.
        let fences = quickStart.split(separator: "\n").filter { $0.hasPrefix("```") }
        #expect(fences.enumerated().allSatisfy { $0.offset % 2 == 1 || $0.element == "```sh" }, "the quick start's code blocks: \(fences)")
        let commands = DocStep.steps(quickStart).map { DocStep.withoutComment($0.command).trimmingCharacters(in: .whitespaces) }
        #expect(commands == ["scripts/demo", "scripts/test"], "the quick start runs \(commands); anything else goes in a section of its own")
    }
}

/// The project's reference is `docs/`: every citation of it points at a file
/// and a heading that exist, and nothing cites a file outside the repository.
@Suite("Citations of docs/")
struct DocsCitationTests {
    /// GitHub's anchor for a heading: lowercased, punctuation dropped, spaces as dashes.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { c -> Character? in
            if c == " " { return "-" }
            return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
        })
    }

    static func texts() throws -> [(String, String)] {
        let root = repositoryRoot.path
        var files = ["README.md"]
        for dir in ["Sources", "Tests", "docs", "dbus", "examples", "packaging", "python"] {
            let enumerator = FileManager.default.enumerator(atPath: root + "/" + dir)
            while let path = enumerator?.nextObject() as? String {
                if [".swift", ".md", ".xml", ".py", ".desktop"].contains(where: path.hasSuffix) { files.append(dir + "/" + path) }
            }
        }
        return try files.map { ($0, try String(contentsOfFile: root + "/" + $0, encoding: .utf8)) }
    }

    @Test("every docs/<file>.md#<heading> cited in code, tests and docs exists")
    func citationsResolve() throws {
        let root = repositoryRoot.path
        var cited = 0
        for (file, text) in try Self.texts() {
            for match in text.matches(of: #/docs/([A-Za-z/-]+\.md)(#[a-z0-9_-]+)?/#) {
                cited += 1
                let target = root + "/docs/" + match.1
                guard let doc = try? String(contentsOfFile: target, encoding: .utf8) else {
                    Issue.record("\(file) cites docs/\(match.1), which does not exist")
                    continue
                }
                guard let wanted = match.2.map({ String($0.dropFirst()) }) else { continue }
                let anchors = doc.split(separator: "\n").filter { $0.hasPrefix("#") }.map {
                    Self.anchor(String($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)))
                }
                #expect(anchors.contains(wanted), "\(file) cites docs/\(match.1)#\(wanted); its headings are \(anchors)")
            }
        }
        #expect(cited > 40, "the code cites docs/ throughout (\(cited) citations)")
    }

    @Test("no file cites the specification the project was built from")
    func standsAlone() throws {
        for (file, text) in try Self.texts() where file != "Tests/WidgetHostServiceTests/ReadmeTests.swift" {
            #expect(!text.contains("CONTRACT"), "\(file) cites a file outside the repository")
        }
    }
}
