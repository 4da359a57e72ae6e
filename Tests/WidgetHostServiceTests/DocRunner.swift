import Foundation
import PrivateBus
import Testing

/// The doc runner: runs the shell blocks of a Markdown document in order, in
/// one bash session, as a person pasting them would, and compares what each
/// command prints with what the document shows after it.
///
/// The format it reads (docs/README.md#commands-and-what-they-print):
/// - Only ```` ```sh ```` blocks run; every line that is not a comment is a
///   command (with its `\` continuation lines and here-document).
/// - The comment lines right after a command (no blank line between) are what
///   it prints, each without its leading `# `; `#` alone is an empty line. A
///   command with no such lines must print nothing.
/// - `…` in a shown line stands for any text (a process id, a time, a unique
///   bus name); a shown line that is `…` alone stands for any number of lines;
///   a run of blanks stands for any run of blanks, and blanks at the end of a
///   line do not count.
/// - A command ending in `&` runs in the background; what it prints as it
///   starts is the lines shown after it, and whatever it prints later must be
///   shown after the command that made it print (in any order with that
///   command's own lines).
/// - A command that exits with a status other than 0 must show what it printed.
///
/// The session is a person's first one: a private bus as the session bus, an
/// empty home folder (`~/.local/share/dbus-1/services` is one of the bus's
/// service folders, as on a real session bus), no desktop entries or D-Bus
/// services from the machine, the repository as the working folder.
/// `swift build` does nothing (the test run built everything), `swift build
/// --show-bin-path` prints where the test run built it, and `swift run
/// PRODUCT` runs that build's PRODUCT. Everything the session started is
/// ended at the end, then the bus.
struct DocStep: Sendable, CustomStringConvertible {
    /// The line of the command in the document (1-based).
    var line: Int
    var command: String
    /// The lines the document shows after the command.
    var expected: [String]
    var background: Bool
    var description: String { "line \(line): \(command.prefix { $0 != "\n" })" }

    /// The steps of `markdown`'s ```` ```sh ```` blocks, in order.
    static func steps(_ markdown: String) -> [DocStep] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var steps: [DocStep] = []
        var fence: String? = nil
        var showing = false
        var index = 0
        while index < lines.count {
            let line = lines[index]
            index += 1
            if line.hasPrefix("```") {
                fence = fence == nil ? String(line.dropFirst(3)) : nil
                showing = false
                continue
            }
            guard fence == "sh" else { continue }
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                showing = false
            } else if line.hasPrefix("#") {
                if showing { steps[steps.count - 1].expected.append(line == "#" ? "" : String(line.dropFirst(line.hasPrefix("# ") ? 2 : 1))) }
            } else {
                var command = [line]
                while command.last!.hasSuffix("\\"), index < lines.count {
                    command.append(lines[index])
                    index += 1
                }
                if let end = hereDocumentEnd(command.joined(separator: "\n")) {
                    while index < lines.count {
                        command.append(lines[index])
                        index += 1
                        if command.last!.trimmingCharacters(in: .whitespaces) == end { break }
                    }
                }
                let code = withoutComment(command.last!).trimmingCharacters(in: .whitespaces)
                let background = code.hasSuffix("&") && !code.hasSuffix("&&")
                steps.append(DocStep(line: index - command.count + 1, command: command.joined(separator: "\n"), expected: [], background: background))
                showing = true
            }
        }
        return steps
    }

    /// The word that ends a here-document the command opens (`<<EOF`, `<<'EOF'`, `<<-EOF`).
    static func hereDocumentEnd(_ command: String) -> String? {
        guard let match = withoutComment(command).firstMatch(of: #/<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?/#) else { return nil }
        return String(match.1)
    }

    /// A shell line without its trailing comment (a `#` after a blank, outside quotes).
    static func withoutComment(_ line: String) -> String {
        var quote: Character? = nil
        var previous: Character = " "
        for (offset, c) in line.enumerated() {
            if let q = quote {
                if c == q { quote = nil }
            } else if c == "'" || c == "\"" {
                quote = c
            } else if c == "#", previous == " " || previous == "\t" {
                return String(line.prefix(offset))
            }
            previous = c
        }
        return line
    }
}

/// Whether printed lines are what a document shows (see ``DocStep``).
enum ShownOutput {
    /// One printed line against one shown line, `…` standing for any text and
    /// a run of blanks for any other run of blanks (a table's columns widen
    /// with what they hold).
    static func lineMatches(_ shown: String, _ printed: String) -> Bool {
        let shown = blanksCollapsed(shown), printed = blanksCollapsed(printed)
        let parts = shown.components(separatedBy: "…")
        guard parts.count > 1 else { return shown == printed }
        guard printed.hasPrefix(parts.first!), printed.hasSuffix(parts.last!),
            printed.count >= parts.first!.count + parts.last!.count
        else { return false }
        var rest = printed.dropFirst(parts.first!.count).dropLast(parts.last!.count)
        for part in parts.dropFirst().dropLast() where !part.isEmpty {
            guard let found = rest.range(of: part) else { return false }
            rest = rest[found.upperBound...]
        }
        return true
    }

    /// Whether `shown` is exactly the command's own lines interleaved with the
    /// new lines of the background jobs (each job's lines in their order).
    static func matches(_ shown: ArraySlice<String>, _ own: ArraySlice<String>, _ jobs: [ArraySlice<String>]) -> Bool {
        guard let first = shown.first else { return own.isEmpty && jobs.allSatisfy(\.isEmpty) }
        let rest = shown.dropFirst()
        if first == "…" {
            var tail = own
            while true {
                if matches(rest, tail, jobs) { return true }
                if tail.isEmpty { return false }
                tail = tail.dropFirst()
            }
        }
        if let line = own.first, lineMatches(first, line), matches(rest, own.dropFirst(), jobs) { return true }
        for (index, job) in jobs.enumerated() {
            guard let line = job.first, lineMatches(first, line) else { continue }
            var next = jobs
            next[index] = job.dropFirst()
            if matches(rest, own, next) { return true }
        }
        return false
    }

    /// The line without trailing blanks, each run of blanks in it made one space.
    static func blanksCollapsed(_ text: String) -> String {
        text.split(separator: /[ \t\r]+/, omittingEmptySubsequences: false).joined(separator: " ").replacing(/\ $/, with: "")
    }
}

/// One bash session on a private bus, for ``DocStep``s.
final class DocSession: @unchecked Sendable {
    let root: URL
    let home: URL
    let bus: PrivateBus
    let environment: [String: String]
    /// Every process the session starts carries `WIDGETHOST_DOC_RUN=<mark>`.
    let mark = UUID().uuidString
    private let shell: Process
    private let input: FileHandle
    private var jobs: [(output: URL, seen: Int)] = []
    private var count = 0
    /// A command that did not finish: the session can run nothing more.
    private(set) var stuck = false

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-doc-\(UUID().uuidString.prefix(8))")
        home = root.appendingPathComponent("home")
        for dir in ["home", "sysdata", "sysconfig", "runtime", "steps"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: root.appendingPathComponent("runtime").path)
        var env = ProcessInfo.processInfo.environment
        for name in env.keys where name.hasPrefix("XDG_") || name.hasPrefix("DBUS_") || ["DISPLAY", "WAYLAND_DISPLAY", "BASH_ENV", "ENV", "CDPATH"].contains(name) {
            env.removeValue(forKey: name)
        }
        env["HOME"] = home.path
        env["XDG_DATA_DIRS"] = root.appendingPathComponent("sysdata").path
        env["XDG_CONFIG_DIRS"] = root.appendingPathComponent("sysconfig").path
        env["XDG_RUNTIME_DIR"] = root.appendingPathComponent("runtime").path
        env["LC_ALL"] = "C.UTF-8"
        env["SYSTEMD_PAGER"] = ""
        env["SYSTEMD_COLORS"] = "0"
        env["WIDGETHOST_BIN_DIR"] = buildDirectory
        env["WIDGETHOST_DOC_RUN"] = mark
        bus = try PrivateBus(environment: env, serviceDirectories: [home.path + "/.local/share/dbus-1/services"])
        environment = bus.environment(base: env)

        shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/bash")
        shell.arguments = ["--noprofile", "--norc"]
        shell.environment = environment
        shell.currentDirectoryURL = repositoryRoot
        let pipe = Pipe()
        shell.standardInput = pipe
        let log = root.appendingPathComponent("steps/shell.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: log)
        shell.standardOutput = logHandle
        shell.standardError = logHandle
        input = pipe.fileHandleForWriting
        try PrivateBus.withCleanSignalMask { try shell.run() }
        try send(
            #"""
            swift() {
                case "$*" in
                build\ --show-bin-path) echo "$WIDGETHOST_BIN_DIR"; return ;;
                build | build\ *) return 0 ;;
                esac
                if [ "${1:-}" = run ]; then
                    shift
                    local product="$1"
                    shift
                    # In the background the function runs in a subshell: become the program, so $! is its pid.
                    if [ "$BASHPID" != "$$" ]; then exec "$WIDGETHOST_BIN_DIR/$product" "$@"; fi
                    "$WIDGETHOST_BIN_DIR/$product" "$@"
                    return
                fi
                echo "the doc runner does not run 'swift $*'" >&2
                return 1
            }
            """#)
    }

    private func send(_ text: String) throws {
        try input.write(contentsOf: Data((text + "\n").utf8))
    }

    private func lines(_ url: URL, completeOnly: Bool) -> [String] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if completeOnly || lines.last == "" { lines.removeLast() }
        return lines
    }

    /// Runs `step`; nil when it printed what the document shows, else what differs.
    func run(_ step: DocStep, timeout: Double = 60) async -> String? {
        count += 1
        let dir = root.appendingPathComponent("steps")
        let script = dir.appendingPathComponent("\(count).sh"), status = dir.appendingPathComponent("\(count).status")
        let output = dir.appendingPathComponent("\(count).out")
        do {
            try (step.command + "\n").write(to: script, atomically: true, encoding: .utf8)
            try send("source '\(script.path)' </dev/null >'\(output.path)' 2>&1; echo $? >'\(status.path).new'; mv '\(status.path).new' '\(status.path)'")
        } catch {
            return "could not run it: \(error)"
        }
        if step.background { jobs.append((output, 0)) }
        guard await eventually(timeout: timeout, { FileManager.default.fileExists(atPath: status.path) }) else {
            stuck = true
            return "it did not finish within \(Int(timeout)) s; it printed:\n\((try? String(contentsOf: output, encoding: .utf8)) ?? "")"
        }
        let code = (try? String(contentsOf: status, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        var own = step.background ? [] : lines(output, completeOnly: false)
        while own.last?.isEmpty == true { own.removeLast() }
        if code != "0" && step.expected.isEmpty {
            return "it exited with status \(code), and the document shows nothing after it; it printed:\n\(own.joined(separator: "\n"))"
        }
        // Background jobs print in their own time: wait until what is shown has come.
        var news: [[String]] = []
        let matched = await eventually(timeout: 15) {
            news = self.jobs.map { Array(self.lines($0.output, completeOnly: true).dropFirst($0.seen)) }
            return ShownOutput.matches(step.expected[...], own[...], news.map { $0[...] })
        }
        for index in jobs.indices { jobs[index].seen += news[index].count }
        if matched { return nil }
        let printed = own + news.flatMap { $0 }
        return "it printed (status \(code)):\n\(printed.map { "# " + $0 }.joined(separator: "\n"))\n"
            + "the document shows:\n\(step.expected.map { "# " + $0 }.joined(separator: "\n"))"
    }

    /// Ends every process the session started — SIGTERM, then SIGKILL after
    /// 10 s — waits until they are gone, then ends the shell and the bus and
    /// removes the session's folder.
    func close() async {
        let own = "\(shell.processIdentifier)"
        func others() -> [pid_t] {
            processesMarked("WIDGETHOST_DOC_RUN", mark).compactMap { pid_t($0.prefix { $0.isNumber }) }.filter { "\($0)" != own }
        }
        for pid in others() { kill(pid, SIGTERM) }
        if !(await eventually(timeout: 10) { others().isEmpty }) {
            for pid in others() { kill(pid, SIGKILL) }
            _ = await eventually(timeout: 5) { others().isEmpty }
        }
        try? input.close()
        await waitForExit(shell)
        bus.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// Runs `steps` in a new session; each step that does not print what the
    /// document shows, with what differs. Stops after a command that does not finish.
    static func run(_ steps: [DocStep]) async throws -> [(step: DocStep, difference: String)] {
        let session = try DocSession()
        var differences: [(step: DocStep, difference: String)] = []
        for step in steps {
            if let difference = await session.run(step) { differences.append((step, difference)) }
            if session.stuck { break }
        }
        await session.close()
        return differences
    }

    /// Runs the sh blocks of `document` (a path below the repository) and
    /// records an issue for each command that does not print what the document
    /// shows. Commands starting with one of `skipping` are not run; each of
    /// them must occur.
    static func check(_ document: String, skipping: [String] = []) async throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(document), encoding: .utf8)
        let steps = DocStep.steps(text)
        #expect(steps.count > 3, "\(document) has \(steps.count) commands in sh blocks")
        for prefix in skipping {
            #expect(steps.contains { $0.command.hasPrefix(prefix) }, "\(document) has no command starting with '\(prefix)' to skip")
        }
        for (step, difference) in try await run(steps.filter { step in !skipping.contains(where: step.command.hasPrefix) }) {
            Issue.record("\(document):\(step.line): \(step.command)\n\(difference)")
        }
    }
}
