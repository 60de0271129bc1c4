#!/usr/bin/python3
# Writes the D-Bus messages lib/node/shutdown/dbus-message.test.ts decodes, marshalled by GLib's GDBusMessage (an
# implementation other than ours), each little-endian (*.le.bin) and big-endian (*.be.bin). Usage: /usr/bin/python3 generate.py
import os

from gi.repository import Gio, GLib

HERE = os.path.dirname(os.path.abspath(__file__))


def reply(body):
    message = Gio.DBusMessage.new()
    message.set_message_type(Gio.DBusMessageType.METHOD_RETURN)
    message.set_reply_serial(2)
    message.set_body(body)
    return message


def signal(body):
    message = Gio.DBusMessage.new_signal("/org/kubelet/Test", "org.kubelet.Test", "Everything")
    message.set_body(body)
    return message


def error():
    message = Gio.DBusMessage.new()
    message.set_message_type(Gio.DBusMessageType.ERROR)
    message.set_reply_serial(3)
    message.set_error_name("org.freedesktop.DBus.Error.ServiceUnknown")
    message.set_body(GLib.Variant("(s)", ("The name is not activatable",)))
    return message


MESSAGES = {
    # Properties.Get(login1.Manager, InhibitDelayMaxUSec)'s reply
    "get-reply": reply(GLib.Variant("(v)", (GLib.Variant("t", 5_000_000),))),
    # ListInhibitors' reply
    "list-inhibitors": reply(
        GLib.Variant(
            "(a(ssssuu))",
            ([("shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay", 0, 4242),
              ("sleep", "ü", "", "block", 1000, 1)],),
        )
    ),
    # every type the codec knows, each after a byte so that its alignment shows
    "every-type": signal(
        GLib.Variant(
            "(ybynyqyiyuyxytydysyoygyvya(yt)ya{sv}y(yai)yab)",
            (
                1, True, 2, -3, 4, 65535, 5, -7, 6, 4294967295, 7, -(2**63), 8, 2**64 - 1, 9, -1.5,
                10, "text", 11, "/a/b", 12, "a(yv)", 13, GLib.Variant("(st)", ("in", 3)),
                14, [(1, 2), (3, 4)], 15, {"k": GLib.Variant("q", 7)}, 16, (17, [1, 2, 3]), 18, [],
            ),
        )
    ),
    "error": error(),
}

for name, message in MESSAGES.items():
    message.set_serial(7)
    for suffix, order in (("le", Gio.DBusMessageByteOrder.LITTLE_ENDIAN), ("be", Gio.DBusMessageByteOrder.BIG_ENDIAN)):
        message.set_byte_order(order)
        with open(os.path.join(HERE, f"{name}.{suffix}.bin"), "wb") as out:
            out.write(message.to_blob(Gio.DBusCapabilityFlags.NONE))
