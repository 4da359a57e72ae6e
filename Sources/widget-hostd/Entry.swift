import WidgetHostDaemon

@main
enum Entry {
    static func main() async { await WidgetHostd.main() }
}
