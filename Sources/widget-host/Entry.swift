import WidgetHostDaemon

/// One binary, two programs: called as widget-hostd (the package's symlink)
/// it is the daemon, otherwise the command-line client (docs/daemon.md#footprint).
@main
enum Entry {
    static func main() async {
        let name = CommandLine.arguments.first?.split(separator: "/").last.map(String.init)
        if name == "widget-hostd" {
            await WidgetHostd.main()
        } else {
            await WidgetHost.main()
        }
    }
}
