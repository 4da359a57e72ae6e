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
///   command's own lines), and no later than the command during which it came.
/// - A command that exits with a status other than 0 must show what it printed.
///
/// A block is pasted whole: all its commands are written to bash at once, and
/// bash runs each as soon as the one before it ends, as in a terminal — a
/// command that uses what an earlier one started in the background must wait
/// for it itself. The runner reads each command's output apart, and notes how
/// much each background job had printed when each command started.
///
/// The session is a person's on a desktop: a private bus as the session bus,
/// an empty home folder (`~/.local/share/dbus-1/services` is one of the bus's
/// service folders, as on a real session bus), two DBusActivatable apps
/// installed that the documents know nothing of, and a process keeping a CPU
/// busy; the repository is the working folder. `swift build` does nothing
/// (the test run built everything), `swift build --show-bin-path` prints where
/// the test run built it, and `swift run PRODUCT` runs that build's PRODUCT.
/// ``DocSession/check(_:skipping:leaving:)`` runs a document twice in the
/// same home, each time in a new terminal, and after each run finds nothing
/// it started still running and no file of it left in the home.
struct DocStep: Sendable, CustomStringConvertible {
    /// The line of the command in the document (1-based).
    var line: Int
    var command: String
    /// The lines the document shows after the command.
    var expected: [String]
    var background: Bool
    /// Which ```` ```sh ```` block of the document it is in (0-based): a block is pasted at once.
    var block: Int
    var description: String { "line \(line): \(command.prefix { $0 != "\n" })" }

    /// The steps of `markdown`'s ```` ```sh ```` blocks, in order.
    static func steps(_ markdown: String) -> [DocStep] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var steps: [DocStep] = []
        var fence: String? = nil
        var showing = false
        var index = 0
        var block = -1
        while index < lines.count {
            let line = lines[index]
            index += 1
            if line.hasPrefix("```") {
                fence = fence == nil ? String(line.dropFirst(3)) : nil
                if fence == "sh" { block += 1 }
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
                steps.append(
                    DocStep(line: index - command.count + 1, command: command.joined(separator: "\n"), expected: [], background: background, block: block))
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


    /// The line without trailing blanks, each run of blanks in it made one space.
    static func blanksCollapsed(_ text: String) -> String {
        text.split(separator: /[ \t\r]+/, omittingEmptySubsequences: false).joined(separator: " ").replacing(/\ $/, with: "")
    }

    /// A line a background job printed, with the last command of the block
    /// that had started when it came (its index in the block): the line may be
    /// shown after that command or an earlier one, never after a later one.
    struct JobLine: Sendable, Equatable {
        var text: String
        var latest: Int
        /// A line already reported as not shown where it came: it may still be shown later, or never.
        var reported = false
    }

    /// What a background job printed during a block, and the first command
    /// after which its lines may be shown (the one that started it, or the
    /// block's first for a job started before the block).
    struct Job: Sendable {
        var lines: [JobLine]
        var earliest: Int
    }

    /// Checks a block: `shown[i]` against what command `i` printed itself
    /// (`own[i]`) and the jobs' lines, each job's lines in their order, each
    /// shown after a command it may be shown after (see ``JobLine``). Answers,
    /// for each command that does not match, the lines it could have shown.
    static func check(shown: [[String]], own: [[String]], jobs: [Job]) -> [Int: [String]] {
        var jobs = jobs
        var failures: [Int: [String]] = [:]
        // Each state: how many lines of each job are shown so far.
        var states: Set<[Int]> = [Array(repeating: 0, count: jobs.count)]
        for step in shown.indices {
            var memo: [Memo: Set<[Int]>] = [:]
            var next: Set<[Int]> = []
            for state in states {
                next.formUnion(ends(shown[step][...], own[step][...], state, step, jobs, &memo).filter { done(step, $0, jobs) })
            }
            if next.isEmpty {
                // Report what had come. The lines due here are reported once: a later
                // command may still show them, or none, so what it shows is checked as before.
                let state = states.min { $0.lexicographicallyPrecedes($1) } ?? []
                var due: [String] = []
                for job in jobs.indices {
                    for line in jobs[job].lines.indices.dropFirst(state[job]) where jobs[job].lines[line].latest <= step {
                        due.append(jobs[job].lines[line].text)
                        jobs[job].lines[line].reported = true
                    }
                }
                failures[step] = own[step] + due
                next = states
            }
            states = next
        }
        return failures
    }

    private struct Memo: Hashable {
        var shown: Int
        var own: Int
        var state: [Int]
    }

    /// Every state the jobs can be in once `shown` is matched against all of
    /// `own` and lines of the jobs that may be shown after command `step`.
    private static func ends(
        _ shown: ArraySlice<String>, _ own: ArraySlice<String>, _ state: [Int], _ step: Int, _ jobs: [Job], _ memo: inout [Memo: Set<[Int]>]
    ) -> Set<[Int]> {
        let key = Memo(shown: shown.startIndex, own: own.startIndex, state: state)
        if let known = memo[key] { return known }
        var found: Set<[Int]> = []
        // A line reported before may go unshown.
        for job in jobs.indices where state[job] < jobs[job].lines.count && jobs[job].lines[state[job]].reported {
            var next = state
            next[job] += 1
            found.formUnion(ends(shown, own, next, step, jobs, &memo))
        }
        guard let first = shown.first else {
            if own.isEmpty { found.insert(state) }
            memo[key] = found
            return found
        }
        let rest = shown.dropFirst()
        if first == "…" {
            for skipped in 0...own.count { found.formUnion(ends(rest, own.dropFirst(skipped), state, step, jobs, &memo)) }
        } else {
            if let line = own.first, lineMatches(first, line) { found.formUnion(ends(rest, own.dropFirst(), state, step, jobs, &memo)) }
            for job in jobs.indices where jobs[job].earliest <= step && state[job] < jobs[job].lines.count {
                let line = jobs[job].lines[state[job]]
                guard line.latest >= step || line.reported, lineMatches(first, line.text) else { continue }
                var next = state
                next[job] += 1
                found.formUnion(ends(rest, own, next, step, jobs, &memo))
            }
        }
        memo[key] = found
        return found
    }

    /// Whether every job line that came before the command after `step`
    /// started is shown by the end of `step`'s lines.
    private static func done(_ step: Int, _ state: [Int], _ jobs: [Job]) -> Bool {
        jobs.indices.allSatisfy { job in
            jobs[job].lines.dropFirst(state[job]).first { !$0.reported }.map { $0.latest > step } ?? true
        }
    }
}

/// The machine the documents run on (see the doc runner's description above):
/// a home, a private session bus, other apps installed, a busy CPU; and a
/// terminal, a bash, opened anew for each run of a document.
final class DocSession: @unchecked Sendable {
    let root: URL
    let home: URL
    let bus: PrivateBus
    let environment: [String: String]
    /// Every process the session starts carries `WIDGETHOST_DOC_RUN=<mark>`.
    let mark = UUID().uuidString
    /// Apps installed on the machine that no document knows: a host lists them too.
    static let otherApps = ["org.gnome.TextEditor", "org.gnome.Shell.PortalHelper"]
    private let hog: Process
    private var shell: Process?
    private var input: FileHandle?
    /// The terminal's background jobs: their output, the command that started
    /// each, and how many of its lines earlier blocks showed.
    private var jobs: [(output: URL, step: Int, seen: Int)] = []
    private var count = 0
    /// A command that did not finish: the session can run nothing more.
    private(set) var stuck = false

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-doc-\(UUID().uuidString.prefix(8))")
        home = root.appendingPathComponent("home")
        for dir in ["home", "sysdata/applications", "sysdata/dbus-1/services", "sysconfig", "runtime", "steps"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: root.appendingPathComponent("runtime").path)
        for app in Self.otherApps {
            try """
            [Desktop Entry]
            Type=Application
            Name=\(app.split(separator: ".").last!)
            Exec=/usr/bin/false %U
            DBusActivatable=true
            MimeType=text/plain;x-scheme-handler/\(app.lowercased().replacingOccurrences(of: ".", with: "-"));

            """.write(to: root.appendingPathComponent("sysdata/applications/\(app).desktop"), atomically: true, encoding: .utf8)
            try "[D-BUS Service]\nName=\(app)\nExec=/usr/bin/false\n".write(
                to: root.appendingPathComponent("sysdata/dbus-1/services/\(app).service"), atomically: true, encoding: .utf8)
        }
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
        let unmarked = env
        env["WIDGETHOST_DOC_RUN"] = mark
        bus = try PrivateBus(
            environment: env,
            serviceDirectories: [home.path + "/.local/share/dbus-1/services", root.appendingPathComponent("sysdata/dbus-1/services").path])
        environment = bus.environment(base: env)

        // A machine with other things to do: whatever a document starts competes for a CPU.
        hog = Process()
        hog.executableURL = URL(fileURLWithPath: "/bin/sh")
        hog.arguments = ["-c", "while :; do :; done"]
        hog.environment = unmarked
        try PrivateBus.withCleanSignalMask { try hog.run() }
    }

    /// Opens a new terminal: a bash in the repository's folder, as a person
    /// opens one, with `swift` standing for the build the test run made.
    func openTerminal() throws {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/bash")
        shell.arguments = ["--noprofile", "--norc"]
        shell.environment = environment
        shell.currentDirectoryURL = repositoryRoot
        let pipe = Pipe()
        shell.standardInput = pipe
        let log = root.appendingPathComponent("steps/shell.log")
        if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let logHandle = try FileHandle(forWritingTo: log)
        logHandle.seekToEndOfFile()
        shell.standardOutput = logHandle
        shell.standardError = logHandle
        try PrivateBus.withCleanSignalMask { try shell.run() }
        self.shell = shell
        input = pipe.fileHandleForWriting
        jobs = []
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
            # How much each background job has printed, as a command starts.
            __doc_jobs=()
            __doc_mark() {
                if [ ${#__doc_jobs[@]} -eq 0 ]; then : >"$1"; else stat -c %s "${__doc_jobs[@]}" >"$1"; fi
            }
            """#)
    }

    /// Closes the terminal as a person does once the last command has ended:
    /// the shell reads to the end of its input and exits. What it started stays.
    func closeTerminal() async {
        try? input?.close()
        input = nil
        if let shell { await waitForExit(shell, timeout: 20) }
        shell = nil
    }

    private func send(_ text: String) throws {
        guard let input else { throw PrivateBusError("no terminal is open") }
        try input.write(contentsOf: Data((text + "\n").utf8))
    }

    private func file(_ step: Int, _ suffix: String) -> URL {
        root.appendingPathComponent("steps/\(step).\(suffix)")
    }

    /// Pastes `steps` (one block) into the terminal at once and waits for each
    /// to end; each step that does not print what the document shows, with
    /// what differs.
    func paste(_ steps: [DocStep], timeout: Double = 120) async -> [(step: DocStep, difference: String)] {
        let first = count + 1
        var text = ""
        for (offset, step) in steps.enumerated() {
            let number = first + offset
            let script = file(number, "sh")
            do {
                try (step.command + "\n").write(to: script, atomically: true, encoding: .utf8)
            } catch {
                return [(step, "could not write it: \(error)")]
            }
            // Each command's output apart; its status once it has ended.
            text += "__doc_mark '\(file(number, "marks").path)'; { source '\(script.path)'; } >'\(file(number, "out").path)' 2>&1; "
                + "printf '%s\\n' $? >'\(file(number, "status").path)'\n"
            if step.background {
                text += "__doc_jobs+=('\(file(number, "out").path)')\n"
                jobs.append((file(number, "out"), number, 0))
            }
        }
        count += steps.count
        do { try send(text) } catch { return [(steps[0], "could not paste it: \(error)")] }

        var differences: [(step: DocStep, difference: String)] = []
        var statuses: [String] = []
        for (offset, step) in steps.enumerated() {
            let status = file(first + offset, "status")
            func ended() -> String? {
                guard let text = try? String(contentsOf: status, encoding: .utf8), text.hasSuffix("\n") else { return nil }
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            guard await eventually(timeout: timeout, { ended() != nil }), let code = ended() else {
                stuck = true
                let printed = (try? String(contentsOf: file(first + offset, "out"), encoding: .utf8)) ?? ""
                return differences + [(step, "it did not finish within \(Int(timeout)) s; it printed:\n\(printed)")]
            }
            statuses.append(code)
        }
        let own = steps.indices.map { offset in
            steps[offset].background ? [] : Self.lines(file(first + offset, "out"), completeOnly: false)
        }
        for (offset, step) in steps.enumerated() where statuses[offset] != "0" && step.expected.isEmpty {
            differences.append(
                (step, "it exited with status \(statuses[offset]), and the document shows nothing after it; it printed:\n\(own[offset].joined(separator: "\n"))"))
        }
        // Background jobs print in their own time: wait until what is shown has come.
        var failures: [Int: [String]] = [:]
        var read: [Int] = []
        _ = await eventually(timeout: 15) {
            let printed = self.jobLines(first..<(first + steps.count))
            read = printed.read
            failures = ShownOutput.check(shown: steps.map(\.expected), own: own, jobs: printed.jobs)
            return failures.isEmpty
        }
        for (offset, printed) in failures {
            differences.append(
                (steps[offset], "it printed (status \(statuses[offset])):\n\(printed.map { "# " + $0 }.joined(separator: "\n"))\n"
                    + "the document shows:\n\(steps[offset].expected.map { "# " + $0 }.joined(separator: "\n"))"))
        }
        // What the block was checked against is done with; a line that comes
        // later is due after the next block's first command.
        for index in read.indices { jobs[index].seen = read[index] }
        return differences.sorted { $0.step.line < $1.step.line }
    }

    /// What each background job printed since the blocks before `steps`, each
    /// line with the last of `steps` that had started when it came (see
    /// ``ShownOutput/JobLine``); and how many complete lines each job has.
    private func jobLines(_ steps: Range<Int>) -> (jobs: [ShownOutput.Job], read: [Int]) {
        let marks = steps.map { step in
            ((try? String(contentsOf: file(step, "marks"), encoding: .utf8)) ?? "").split(separator: "\n").map { Int($0) ?? 0 }
        }
        var result: [ShownOutput.Job] = []
        var read: [Int] = []
        for (index, job) in jobs.enumerated() {
            let data = (try? Data(contentsOf: job.output)) ?? Data()
            var lines: [ShownOutput.JobLine] = []
            var start = data.startIndex
            var number = 0
            while let newline = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
                defer { start = newline + 1 }
                number += 1
                guard number > job.seen else { continue }
                let end = newline + 1 - data.startIndex
                // The last command that started before the line was all written.
                let latest = marks.indices.last { marks[$0].count <= index || marks[$0][index] < end } ?? 0
                lines.append(ShownOutput.JobLine(text: String(decoding: data[start..<newline], as: UTF8.self), latest: latest))
            }
            result.append(ShownOutput.Job(lines: lines, earliest: max(0, job.step - steps.lowerBound)))
            read.append(number)
        }
        return (result, read)
    }

    static func lines(_ url: URL, completeOnly: Bool) -> [String] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if completeOnly || lines.last == "" { lines.removeLast() }
        while !completeOnly, lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }
}

extension DocSession {
    /// Pastes the blocks of `steps` in order into the open terminal; each step
    /// that does not print what the document shows, with what differs. Stops
    /// after a command that does not finish.
    func run(_ steps: [DocStep]) async -> [(step: DocStep, difference: String)] {
        var differences: [(step: DocStep, difference: String)] = []
        var rest = steps[...]
        while let block = rest.first?.block, !stuck {
            let pasted = rest.prefix { $0.block == block }
            rest = rest.dropFirst(pasted.count)
            differences += await paste(Array(pasted))
        }
        return differences
    }

    /// What a run left running: the processes carrying the session's mark but
    /// the bus — waiting a while for those ending by themselves.
    func leftRunning() async -> [String] {
        func left() -> [String] {
            processesMarked("WIDGETHOST_DOC_RUN", mark).filter { !$0.contains(bus.directory.path) }
        }
        _ = await eventually(timeout: 10) { left().isEmpty }
        return left()
    }

    /// Ends `processes` (as `processesMarked` lists them): SIGTERM, then SIGKILL after 10 s.
    func end(_ processes: [String]) async {
        let pids = Set(processes.compactMap { pid_t($0.prefix { $0.isNumber }) })
        func alive() -> [pid_t] { pids.filter { kill($0, 0) == 0 } }
        for pid in pids { kill(pid, SIGTERM) }
        if !(await eventually(timeout: 10) { alive().isEmpty }) {
            for pid in alive() { kill(pid, SIGKILL) }
            _ = await eventually(timeout: 5) { alive().isEmpty }
        }
    }

    /// Every file and folder in the home, relative to it.
    func homeContents() -> Set<String> {
        Set((FileManager.default.enumerator(atPath: home.path)?.allObjects as? [String]) ?? [])
    }

    /// Ends every process the session started, the bus and the busy CPU, and
    /// removes the session's folder.
    func close() async {
        await closeTerminal()
        await end(processesMarked("WIDGETHOST_DOC_RUN", mark).filter { !$0.contains(bus.directory.path) })
        bus.stop()
        hog.terminate()
        await waitForExit(hog)
        try? FileManager.default.removeItem(at: root)
    }

    /// Runs `steps` once in a new session; each step that does not print what
    /// the document shows, with what differs.
    static func run(_ steps: [DocStep]) async throws -> [(step: DocStep, difference: String)] {
        let session = try DocSession()
        try session.openTerminal()
        let differences = await session.run(steps)
        await session.close()
        return differences
    }

    /// Runs the sh blocks of `document` (a path below the repository) twice
    /// in a row in the same home, each run in a new terminal, and records an
    /// issue for each command that does not print what the document shows,
    /// for each process a run leaves running and for each file or folder it
    /// leaves in the home but `leaving` (paths below the home, which the
    /// document must name as `~/<path>`; the folders above them may stay too).
    /// Commands starting with one of `skipping` are not run; each of them must occur.
    static func check(_ document: String, skipping: [String] = [], leaving: [String] = []) async throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(document), encoding: .utf8)
        #expect(DocStep.steps(text).count > 3, "\(document) has \(DocStep.steps(text).count) commands in sh blocks")
        try await check(text, named: document, skipping: skipping, leaving: leaving)
    }

    /// ``check(_:skipping:leaving:)`` for the document `text`, named `document` in the issues.
    static func check(_ text: String, named document: String, skipping: [String] = [], leaving: [String] = []) async throws {
        let steps = DocStep.steps(text)
        for prefix in skipping {
            #expect(steps.contains { $0.command.hasPrefix(prefix) }, "\(document) has no command starting with '\(prefix)' to skip")
        }
        for path in leaving {
            #expect(text.contains("~/" + path), "\(document) does not say that ~/\(path) stays")
        }
        let staying = Set(leaving.flatMap { path in
            path.split(separator: "/").indices.map { path.split(separator: "/")[...$0].joined(separator: "/") }
        })
        let session = try DocSession()
        for run in 1...2 where !session.stuck {
            let before = session.homeContents()
            try session.openTerminal()
            let differences = await session.run(steps.filter { step in !skipping.contains(where: step.command.hasPrefix) })
            await session.closeTerminal()
            for (step, difference) in differences {
                Issue.record("\(document):\(step.line) (run \(run)): \(step.command)\n\(difference)")
            }
            let left = await session.leftRunning()
            #expect(left.isEmpty, "\(document), run \(run), leaves these running:\n\(left.joined(separator: "\n"))")
            await session.end(left)
            let kept = session.homeContents().subtracting(before).subtracting(staying)
            #expect(kept.isEmpty, "\(document), run \(run), leaves these in the home: \(kept.sorted())")
        }
        await session.close()
    }
}
