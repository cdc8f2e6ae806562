#!/usr/bin/env python3
"""Turns kernel auditing on through netlink (no auditd needed): Landlock denials then go to the
kernel log (dmesg), naming the refused path and right. Needs root; prints what the kernel said."""
import socket
import struct

try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)  # NETLINK_AUDIT
    body = struct.pack("=9I", 1, 1, 0, 0, 0, 0, 0, 0, 0)  # AUDIT_STATUS_ENABLED mask, enabled=1
    s.send(struct.pack("=IHHII", 16 + len(body), 1001, 5, 1, 0) + body)  # AUDIT_SET, ACK
    print("audit enable: errno", -struct.unpack("=i", s.recv(256)[16:20])[0])
except Exception as e:  # no netlink audit in this kernel, or not root
    print("audit enable failed:", e)
