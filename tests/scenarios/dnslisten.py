#!/usr/bin/env python3
"""A name server that knows no name: it answers every query NXDOMAIN and
appends the name asked for to LOG, one per line, so that a scenario learns
what a program tried to reach.

  dnslisten.py ADDRESS LOG      (UDP port 53 of ADDRESS)
"""
import socket
import sys


def qname(packet):
    labels, i = [], 12
    while i < len(packet) and packet[i] != 0:
        n = packet[i]
        labels.append(packet[i + 1 : i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    return ".".join(labels), i + 5  # the name's end, then QTYPE and QCLASS


def main():
    addr, log = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        packet, peer = s.recvfrom(4096)
        if len(packet) < 12:
            continue
        name, end = qname(packet)
        with open(log, "a", encoding="utf-8") as f:
            f.write(name + "\n")
        # the same id and question; QR, RD, RA, NXDOMAIN; no answers
        reply = packet[:2] + b"\x81\x83" + b"\x00\x01\x00\x00\x00\x00\x00\x00" + packet[12:end]
        s.sendto(reply, peer)


if __name__ == "__main__":
    main()
