"""The listening socket: bound before the model compiles, closed without resetting anyone.

When a listening socket closes, the kernel resets every connection that has
completed its handshake but waits to be accepted: such a client has sent its
request and cannot tell whether it was served. So a draining server first
stops the kernel from completing new handshakes (`stop_new_connections`: a
filter drops each new SYN, so a client's connect waits, and its retried SYN
is refused once the socket is closed), then accepts and answers what the
kernel still holds (`accept_queue`) before it closes the socket.
"""

from __future__ import annotations

import ctypes
import socket
import struct
import sys

from absl import logging

from t2t_keras.errors import UserError

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Linux's SO_ATTACH_FILTER, and the classic BPF program it takes: read the TCP
# header's flags byte (offset 13), keep CWR..FIN's ACK and SYN bits, and drop
# (return 0) a SYN without ACK; keep (return all of it) anything else, such as the
# ACK that completes a handshake begun before.
_SO_ATTACH_FILTER = 26
_DROP_NEW_SYNS = (
    (0x30, 0, 0, 13),  # BPF_LD | BPF_B | BPF_ABS: A = flags
    (0x54, 0, 0, 0x12),  # BPF_ALU | BPF_AND | BPF_K: A &= SYN | ACK
    (0x15, 0, 1, 0x02),  # BPF_JMP | BPF_JEQ | BPF_K: A == SYN ? next : skip one
    (0x06, 0, 0, 0),  # BPF_RET | BPF_K: drop
    (0x06, 0, 0, 0xFFFFFFFF),  # BPF_RET | BPF_K: keep
)
# struct tcp_info: 8 one-byte fields, then u32s; the fifth, tcpi_unacked, is a
# listening socket's count of connections waiting to be accepted.
_TCP_INFO_BYTES, _UNACKED_OFFSET = 104, 24


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a `UserError` saying why not."""
    if host not in LOOPBACK:
        logging.warning(
            "Serving on %s: any machine that reaches it can use the model. Give "
            "--auth_token_file, or serve on 127.0.0.1 behind a proxy.",
            host,
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        raise UserError(
            f"cannot listen on {host}:{port} ({error.strerror}); give a free --port, or "
            "--port=0 for any, and a --host of this machine."
        ) from None
    listening.listen(2048)
    listening.set_inheritable(True)
    return listening


def stop_new_connections(listening: socket.socket) -> bool:
    """Makes the kernel drop new connection requests (SYNs) to `listening`, while
    handshakes already begun complete; False where it cannot (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    program = ctypes.create_string_buffer(
        b"".join(struct.pack("HBBI", *instruction) for instruction in _DROP_NEW_SYNS)
    )
    # struct sock_fprog: the instructions' count, then a pointer to them.
    fprog = struct.pack("HL", len(_DROP_NEW_SYNS), ctypes.addressof(program))
    try:
        listening.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
    except OSError as error:
        logging.warning("Cannot hold back new connections while draining (%s).", error)
        return False
    return True


def accept_queue(listening: socket.socket) -> int:
    """How many connections have completed their handshake and wait to be accepted
    (0 where the kernel does not say)."""
    try:
        info = listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
    except (OSError, AttributeError):
        return 0
    return struct.unpack_from("I", info, _UNACKED_OFFSET)[0]
