/// WidgetHost's version, which `--version` prints and the Debian package carries.
public enum WidgetHostVersion {
    public static let current = "0.1.0"
}
