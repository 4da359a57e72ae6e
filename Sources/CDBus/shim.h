#ifndef WIDGETHOST_CDBUS_SHIM_H
#define WIDGETHOST_CDBUS_SHIM_H

/* The only C header the project includes. Everything above the DBus module
 * reaches libdbus through Swift types; this file exists so the systemLibrary
 * target has one umbrella and a place for the few macros Swift cannot import. */
#include <dbus/dbus.h>
#include <sys/eventfd.h>

static inline int cdbus_timeout_infinite(void) { return DBUS_TIMEOUT_INFINITE; }
static inline int cdbus_timeout_default(void) { return DBUS_TIMEOUT_USE_DEFAULT; }

/* The counter a connection's thread polls beside its socket, to be woken
 * when work is queued for it. */
static inline int cdbus_wakeup_fd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

#endif
