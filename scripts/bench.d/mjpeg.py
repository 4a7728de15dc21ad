"""The preview's MJPEG stream as the benchmarks read it (scripts/bench preview, controls)."""
import socket


def read_parts(port, token, stop, on_part):
    """Reads /stream.mjpg on 127.0.0.1:`port` (bearer `token`, HTTP/1.0: the body is not
    chunked, the parts follow one another as sent) until `stop` is set or the server closes;
    calls on_part(headers) with each whole part's headers (a dict) once its last byte is read."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET /stream.mjpg HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    s.settimeout(1)
    buf = b""
    try:
        while not stop.is_set():
            try:
                chunk = s.recv(1 << 16)
            except socket.timeout:
                continue
            if not chunk:
                break
            buf += chunk
            while True:
                i = buf.find(b"\r\n--reelframe\r\n")
                if i < 0:
                    break
                head, sep, rest = buf[i + 15:].partition(b"\r\n\r\n")
                if not sep:
                    break
                h = dict(l.split(": ", 1) for l in head.decode().split("\r\n") if ": " in l)
                n = int(h["Content-Length"])
                if len(rest) < n:
                    break
                on_part(h)
                buf = rest[n:]
    finally:
        s.close()
