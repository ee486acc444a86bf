"""How to reach a Prometheus that is not open to all: credentials, TLS, extra headers, and
the label matchers that pick one cluster out of a shared store (Thanos, Mimir,
VictoriaMetrics).

Credentials are read once, at start, from files (as Kubernetes mounts Secrets). Files are
not refused for being world-readable: Kubernetes mounts Secret volumes 0644 by default, and
a check would fail every default install while protecting nothing inside a container.
Secrets never reach a message: errors name the file, never its content, and `repr` hides
header values.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from advisor.errors import InputError

MAX_SECRET_BYTES = 64 * 1024
# A matcher as PromQL writes one: label, operator, a quoted string (", ' or `).
_MATCHER = re.compile(
    r"""\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"""
    r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)\s*(?:,|$)"""
)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
_FORBIDDEN_HEADERS = {"host", "content-length", "transfer-encoding", "connection"}


@dataclass(frozen=True, slots=True)
class PrometheusAccess:
    """What every request to Prometheus carries. `headers` include the credentials (as
    `Authorization`). `matchers`: PromQL label matchers without braces (`cluster="prod-a"`),
    added to every metric selector of every query; "" for none."""

    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    ca_file: str | None = None
    insecure_skip_verify: bool = False
    matchers: str = ""

    def tls(self) -> ssl.SSLContext | None:
        if self.insecure_skip_verify:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        if self.ca_file is not None:
            try:
                return ssl.create_default_context(cafile=self.ca_file)
            except OSError as error:  # ssl.SSLError included: a file that holds no CA
                problem = error.strerror or str(error) or type(error).__name__
                raise InputError(f"--prometheus.ca-file {self.ca_file}: {problem}") from None
        return None

    def select(self, metric: str) -> str:
        """The PromQL selector of `metric` with the matchers: `m{cluster="a"}`."""
        return f"{metric}{{{self.matchers}}}" if self.matchers else metric


def load_access(
    *,
    bearer_token_file: str | None = None,
    basic_auth_file: str | None = None,
    ca_file: str | None = None,
    insecure_skip_verify: bool = False,
    headers: tuple[str, ...] = (),
    selector: str | None = None,
) -> PrometheusAccess:
    """The access the flags describe; InputError (one line, no secret) when one is unusable."""
    if bearer_token_file is not None and basic_auth_file is not None:
        raise InputError(
            "--prometheus.bearer-token-file and --prometheus.basic-auth-file: give one"
        )
    pairs = [parse_header(h) for h in headers]
    if bearer_token_file is not None:
        token = _secret(bearer_token_file, "--prometheus.bearer-token-file")
        if any(c.isspace() for c in token):
            raise InputError(
                f"--prometheus.bearer-token-file {bearer_token_file}: "
                "the token holds white space (one token on one line)"
            )
        pairs.append(("Authorization", f"Bearer {token}"))
    if basic_auth_file is not None:
        user, password = _basic_auth(basic_auth_file)
        pairs.append(("Authorization", aiohttp.encode_basic_auth(user, password)))
    if sum(name.lower() == "authorization" for name, _ in pairs) > 1:
        raise InputError("Prometheus credentials given twice (a header and a file)")
    access = PrometheusAccess(
        headers=tuple(pairs),
        ca_file=ca_file,
        insecure_skip_verify=insecure_skip_verify,
        matchers=parse_selector(selector) if selector else "",
    )
    access.tls()  # a CA file that cannot be read fails now, once, not per request
    return access


def parse_header(text: str) -> tuple[str, str]:
    """`Name: value` -> (name, value); the error names the header, never its value."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _HEADER_NAME.fullmatch(name):
        raise InputError("--prometheus.header: expected 'Name: value'")
    if name.lower() in _FORBIDDEN_HEADERS:
        raise InputError(f"--prometheus.header {name}: set by the client itself")
    if not value or not all(0x20 <= ord(c) < 0x7F or c == "\t" for c in value):
        raise InputError(f"--prometheus.header {name}: the value is empty or not printable ASCII")
    return name, value


def parse_selector(text: str) -> str:
    """PromQL label matchers (`cluster="a",env!~"dev.*"`, braces optional) in canonical form;
    InputError when it is anything else (no PromQL beyond matchers can ride along)."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    matchers, position = [], 0
    while position < len(body):
        found = _MATCHER.match(body, position)
        if found is None:
            raise InputError(
                f"--prometheus.selector {text!r}: expected label matchers such as "
                f'cluster="prod-a" (at character {position + 1})'
            )
        label, operator, quoted = found.groups()
        matchers.append(f"{label}{operator}{quoted}")
        position = found.end()
    if not matchers:
        raise InputError("--prometheus.selector: no label matcher given")
    return ",".join(matchers)


def _secret(path: str, flag: str) -> str:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SECRET_BYTES + 1)
    except OSError as error:
        raise InputError(f"{flag} {path}: {error.strerror or type(error).__name__}") from None
    if len(raw) > MAX_SECRET_BYTES:
        raise InputError(f"{flag} {path}: larger than {MAX_SECRET_BYTES // 1024} KiB")
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InputError(f"{flag} {path}: not UTF-8 text") from None
    if not text:
        raise InputError(f"{flag} {path}: empty")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise InputError(f"{flag} {path}: holds control characters (one line expected)")
    return text


def _basic_auth(path: str) -> tuple[str, str]:
    """`user:password` on one line (the password may hold colons, the user may not)."""
    flag = "--prometheus.basic-auth-file"
    user, colon, password = _secret(path, flag).partition(":")
    if not colon or not user:
        raise InputError(f"{flag} {Path(path)}: expected one line 'user:password'")
    return user, password
