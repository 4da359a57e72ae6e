// The token a tap carries to the app (CONTRACT §4, docs/plasma.md#taps): what a
// launcher of Plasma gives an app it starts, so that the app's window is
// raised and not "is ready"-notified.
//
// On X11 a startup id minted with KStartupInfo at the time of the click (the
// user's last input time), announced for the app's desktop entry so that the
// task manager shows the app starting and KWin lets its window take the
// focus. On Wayland an xdg-activation token KWin gives for the click's input
// serial (KWindowSystem, KWaylandExtras in KDE Frameworks 6), asked for
// asynchronously.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QWindow>

#include <functional>

namespace widgethost {

/** A minted token: its text ("" when none could be had) and what withdraws its announced startup. */
struct LaunchToken {
    QString token;
    std::function<void()> withdraw = [] {};
};

/**
 * Mints a token for the app `appId` for a click in `window`, and calls `ready`
 * with it: at once on X11, once KWin answers on Wayland (or after a second,
 * with no token, when it does not).
 */
void mintLaunchToken(const QString &appId, QWindow *window, QObject *context, std::function<void(LaunchToken)> ready);

} // namespace widgethost
