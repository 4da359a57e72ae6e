/// The host's defaults, each declared here once. The daemon's options
/// (`widget-hostd --help`), `HostConfiguration` and the model's limits take
/// them from here; the documentation that states them (docs/daemon.md and the
/// other guides, the interfaces' XML) is checked against `widget-hostd`'s help
/// by the tests (docs/daemon.md#options).
public enum HostDefaults {
    /// Which families honour `link` elements (`--link-policy`).
    public static let linkPolicy = LinkPolicy.current

    // MARK: Time

    /// Seconds a delivery waits for an app's answer (`--delivery-timeout`).
    public static let deliveryTimeout: Double = 25
    /// Seconds a provider call (`GetTimeline`, `ProvideOptions`) waits for the
    /// app's answer (`--provider-timeout`).
    public static let providerTimeout: Double = 25
    /// Budgeted timeline reloads of one widget in a sliding 24 hours, as in
    /// WidgetKit (`--daily-reload-budget`, docs/timelines.md#reload-budget).
    public static let dailyReloadBudget = 70
    /// The fewest seconds from a timeline's arrival to the reload its policy
    /// asks for, as WidgetKit never reloads faster (`--min-reload-interval`).
    public static let minReloadInterval: Double = 300
    /// Seconds before the first retry of a failed timeline fetch (`--reload-retry-delay`).
    public static let reloadRetryDelay: Double = 30

    // MARK: Updates (docs/daemon.md#updates)

    /// Milliseconds of a frame: each widget's and each Live Activity's
    /// changes within one are announced once, the latest (`--update-frame-ms`).
    public static let updateFrameMs = 16
    /// Updates a second one app may send (`SetContent`, `LiveActivity.Update`),
    /// sustained, and have each announced within a frame: two objects
    /// animated at the frame rate (`--update-rate`).
    public static let updateRate = 120
    /// Updates one app may send at once beyond its rate (`--update-burst`).
    public static let updateBurst = 240
    /// Updates a second one app may send at all, two and a half times its
    /// rate; more are refused with `LimitExceeded` (`--max-update-rate`).
    public static let maxUpdateRate = 300

    // MARK: Content

    /// Bytes of a view tree's JSON (`--max-content-bytes`).
    public static let maxContentBytes = 256 * 1024
    /// Nesting of elements in a view tree (`--max-content-depth`).
    public static let maxContentDepth = 64
    /// Elements in a view tree (`--max-content-elements`).
    public static let maxContentElements = 4096
    /// Bytes of a URL (`--max-url-length`).
    public static let maxURLLength = 2048

    // MARK: What one app, one connection, everyone may hold

    /// Placed widgets of one app (`--max-widgets-per-app`).
    public static let maxWidgetsPerApp = 1000
    /// Bytes of one widget's configuration, serialized as `a{sv}` (`--max-configuration-bytes`).
    public static let maxConfigurationBytes = 65536
    /// Live Activities of one app not yet dismissed (`--max-activities-per-app`).
    public static let maxActivitiesPerApp = 64
    /// Bytes one app's objects may take on the bus (`--max-app-bytes`).
    public static let maxAppBytes = 16 << 20
    /// Bytes all apps' objects may take on the bus (`--max-host-bytes`).
    public static let maxHostBytes = 48 << 20
    /// App registrations of one connection (`--max-registrations-per-connection`).
    public static let maxRegistrationsPerConnection = 256
    /// Deliveries waiting for one app's answer (`--max-pending-deliveries-per-app`).
    public static let maxPendingDeliveriesPerApp = 256
    /// Live registrations of one sandboxed app's ids (`--max-ids-per-sandboxed-app`).
    public static let maxIDsPerSandboxedApp = 16
    /// Bytes of JSON of all apps' widget bundles (`--max-bundle-bytes`).
    public static let maxBundleBytes = 4 << 20
    /// Bytes of JSON of the bundles of the apps one connection holds (`--max-bundle-bytes-per-connection`).
    public static let maxBundleBytesPerConnection = 1 << 20
    /// `GetTimeline` calls under way to one app's provider (`--max-provider-calls-per-app`).
    public static let maxProviderCallsPerApp = 4

    // MARK: Calls as they are read

    /// Entries of one array or dictionary in a call (`--max-dict-entries`).
    public static let maxDictEntries = 4096
    /// Bytes of one `a{sv}` in a call: twice the largest the host keeps, a
    /// widget's configuration (`--max-dict-bytes`).
    public static let maxDictBytes = 2 * maxConfigurationBytes
}
