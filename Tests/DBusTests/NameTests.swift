import DBus
import Foundation
import Testing

/// A change as [name, old owner, new owner] (its memberwise initializer is internal).
@Sendable func fields(_ change: NameOwnerChange) -> [String] { [change.name, change.oldOwner, change.newOwner] }

@Suite("Bus names and credentials")
struct NameTests {
    @Test("requestName: primary owner, already owner, exists with doNotQueue, queued, released and replaced")
    func requestName() async throws {
        try await withBus { fixture in
            let a = try await fixture.connect("a")
            let b = try await fixture.connect("b")
            let observer = try await fixture.connect("observer")
            let name = "org.widgethost.Test.Owned"
            let changes = Recorder(try await observer.nameOwnerChanges(for: name))
            let aName = try #require(a.uniqueName)
            let bName = try #require(b.uniqueName)

            #expect(try await observer.nameOwner(name) == nil)
            #expect(try await a.requestName(name) == .primaryOwner)
            #expect(try await a.requestName(name) == .alreadyOwner)
            #expect(try await b.requestName(name, doNotQueue: true) == .exists)
            #expect(try await observer.nameOwner(name) == aName)
            // Queued behind the owner, b takes over when a lets go.
            #expect(try await b.requestName(name, doNotQueue: false) == .inQueue)
            try await a.releaseName(name)
            #expect(try await observer.nameOwner(name) == bName)
            // When b disconnects, the name has no owner.
            b.close()
            let seen = try await changes.wait(count: 3)
            #expect(seen.map(fields) == [[name, "", aName], [name, aName, bName], [name, bName, ""]])
            #expect(try await observer.nameOwner(name) == nil)
            #expect(try await observer.nameOwner("org.widgethost.Test.Nobody") == nil)

            // Replacement: allowed by the owner, asked for by the newcomer.
            let c = try await fixture.connect("c")
            let d = try await fixture.connect("d")
            let replaceable = "org.widgethost.Test.Replaceable"
            #expect(try await c.requestName(replaceable, allowReplacement: true) == .primaryOwner)
            #expect(try await d.requestName(replaceable, replaceExisting: true) == .primaryOwner)
            #expect(try await observer.nameOwner(replaceable) == d.uniqueName)
            // d did not allow replacement: c cannot take it back.
            #expect(try await c.requestName(replaceable, replaceExisting: true) == .exists)
            // The bus refuses invalid and unique names.
            await expectDBusError(DBusError.invalidArgsName) { _ = try await c.requestName("not a name") }
            await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs") { _ = try await c.requestName(":1.999") }
        }
    }

    @Test("nameOwnerChanges sees other connections come and go by unique name")
    func uniqueNames() async throws {
        try await withBus { fixture in
            let observer = try await fixture.connect("observer")
            let all = Recorder(try await observer.nameOwnerChanges())
            let second = try await fixture.connect("second")
            let secondName = try #require(second.uniqueName)
            // Its arrival is dispatched before the stream for its name exists,
            // which would otherwise see it too when it comes in late.
            try await all.wait { fields($0) == [secondName, "", secondName] }
            let one = Recorder(try await observer.nameOwnerChanges(for: secondName))
            second.close()
            let gone = [secondName, secondName, ""]
            try await all.wait { fields($0) == gone }
            #expect(try await one.wait(count: 1).map(fields) == [gone])
            #expect(try await observer.nameOwner(secondName) == nil)
            // The stream for one name saw nothing about other names.
            let third = try await fixture.connect("third")
            third.close()
            let thirdName = try #require(third.uniqueName)
            try await all.wait { $0.name == thirdName && $0.newOwner.isEmpty }
            #expect(one.received.map(fields) == [gone])
        }
    }

    @Test("credentials(of:) reports this process's pid and uid, for itself and its other connections")
    func credentials() async throws {
        try await withBus { fixture in
            let a = try await fixture.connect("a")
            let b = try await fixture.connect("b")
            for name in [a.uniqueName, b.uniqueName].compactMap({ $0 }) {
                let credentials = try await a.credentials(of: name)
                #expect(credentials.processID == UInt32(getpid()))
                #expect(credentials.unixUserID == UInt32(getuid()))
            }
            #expect(try await b.requestName("org.widgethost.Test.Credentials") == .primaryOwner)
            #expect(try await a.credentials(of: "org.widgethost.Test.Credentials").processID == UInt32(getpid()))
            await expectDBusError(DBusError.nameHasNoOwnerName) { _ = try await a.credentials(of: ":1.9999") }
        }
    }
}
